""":func:`load_tfjob`: one TFJob dict from a mapping, YAML or JSON text, or a file, with line and column
on syntax errors and hostile input refused before it is expanded.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from tfjob_provider._manifest.limits import (
    MAX_ALIAS_NODES,
    MAX_MANIFEST_BYTES,
    MAX_NESTING_DEPTH,
    depth_problem,
    describe_bytes,
    shape_problem,
    size_problem,
    text_size_problem,
)
from tfjob_provider._manifest.problems import ManifestError, Problem
from tfjob_provider._manifest.validation import type_meta_problems
from tfjob_provider.clipping import shown

#: File name endings read as a manifest file (compared case-insensitively).
MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")
_DOCUMENT: Final = "document"
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
#: Digits of the longest integer converted (Python refuses to convert more than 4,300).
_MAX_INTEGER_DIGITS: Final = 4000


class _OverLimit(yaml.composer.ComposerError):
    """A document that breaks one of the limits; ``fix`` says what to do instead."""

    def __init__(self, problem: str, fix: str, mark: yaml.Mark) -> None:
        super().__init__(None, None, problem, mark)
        self.fix = fix


class _StrictSafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error, and the limits.

    The pure-Python loader, not libyaml's ``CSafeLoader``: its error messages are more precise
    (it names the offending character) and do not depend on how PyYAML was built; the few
    milliseconds it costs per manifest do not matter once per task.  The limits are enforced in
    :meth:`compose_node`, which PyYAML calls once per node *before* building Python objects: an
    alias is counted at the size of everything it repeats (sizes are memoised per node, so
    nested aliases cost no more to measure than to read), and composition stops at the first
    node over a limit.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._open_anchors: set[str] = set()
        self._alias_nodes = 0
        self._alias_chars = 0
        self._measured: dict[int, tuple[int, int]] = {}

    def _measure(self, node: yaml.Node) -> tuple[int, int]:
        """(nodes, characters) of *node* with every alias in it expanded.

        Recursive, but only as deep as the nesting limit allows the composed document to be.
        """
        known = self._measured.get(id(node))
        if known is not None:
            return known
        if isinstance(node, yaml.ScalarNode):
            result = (1, len(node.value) + 2)
        else:
            children = (
                [part for pair in node.value for part in pair]
                if isinstance(node, yaml.MappingNode)
                else list(node.value)
            )
            nodes, chars = 1, 2
            for item in children:
                item_nodes, item_chars = self._measure(item)
                nodes, chars = nodes + item_nodes, chars + item_chars + 1
            result = (nodes, chars)
        self._measured[id(node)] = result
        return result

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open_anchors:
                raise _OverLimit(
                    f"the alias *{event.anchor} is used inside the node it names (a structure that "
                    "contains itself, which JSON cannot carry)",
                    "Repeat the content instead of aliasing the node that contains the alias.",
                    event.start_mark,
                )
            node: yaml.Node = super().compose_node(parent, index)
            nodes, chars = self._measure(node)
            self._alias_nodes += nodes
            self._alias_chars += chars
            if self._alias_nodes > MAX_ALIAS_NODES:
                over = (
                    f"{MAX_ALIAS_NODES:,} nodes; up to this alias they repeat {nodes_text(self._alias_nodes)}"
                )
            elif self._alias_chars > MAX_MANIFEST_BYTES:
                over = f"{describe_bytes(MAX_MANIFEST_BYTES)} of text; up to this alias they repeat more"
            else:
                return node
            raise _OverLimit(
                f"YAML aliases may repeat at most {over} (a manifest that expands like this is an "
                "alias bomb)",
                "Write the repeated parts out, or share less through anchors (an alias of a node that "
                "holds aliases multiplies them).",
                event.start_mark,
            )
        collection = isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent)
        anchor = getattr(event, "anchor", None)
        if collection:
            self._depth += 1
            if self._depth > MAX_NESTING_DEPTH:
                raise _OverLimit(
                    f"mappings and lists nest deeper than {MAX_NESTING_DEPTH} levels, the limit",
                    depth_problem("document").fix,
                    event.start_mark,
                )
            if anchor is not None:
                self._open_anchors.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            if collection:
                self._depth -= 1
                self._open_anchors.discard(anchor)
        return node

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        digits = sum(character.isalnum() for character in node.value)
        if digits > _MAX_INTEGER_DIGITS:
            raise _OverLimit(
                f"an integer of {digits:,} digits (no Kubernetes field holds more than 19)",
                "Write a number that fits the field, or quote the value if it is meant as text.",
                node.start_mark,
            )
        value: int = super().construct_yaml_int(node)
        return value


def nodes_text(count: int) -> str:
    """``1,234 nodes``, or ``about 10^300 nodes`` when the count would be absurd to print."""
    return f"{count:,} nodes" if count < 10**15 else f"about 10^{len(str(count)) - 1} nodes"


def _construct_unique_mapping(loader: _StrictSafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    first_line: dict[Any, int] = {}
    for key_node, _value_node in node.value:
        if key_node.tag == _MERGE_TAG:  # "<<: *anchor" may legitimately repeat keys it merges
            continue
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            if key in first_line:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {shown(key)} (first given on line {first_line[key]})",
                    key_node.start_mark,
                )
            first_line[key] = line
        except TypeError:  # an unhashable (complex) key: PyYAML itself rejects it below
            continue
    loader.flatten_mapping(node)
    return dict(loader.construct_pairs(node, deep=True))


_StrictSafeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)
_StrictSafeLoader.add_constructor("tag:yaml.org,2002:int", _StrictSafeLoader.construct_yaml_int)


def _yaml_problem(error: yaml.YAMLError, origin: str) -> Problem:
    if isinstance(error, _OverLimit) and error.problem_mark is not None:
        mark = error.problem_mark
        message = f"{origin} at line {mark.line + 1}, column {mark.column + 1}: {error.problem}."
        return Problem(_DOCUMENT, message, error.fix)
    if isinstance(error, yaml.reader.ReaderError):
        message = (
            f"{origin} contains the character #x{error.character:04x} at position {error.position}, "
            f"which YAML does not allow ({error.reason})."
        )
        fix = "Remove it (NUL and other control characters usually come from a binary or UTF-16 file)."
        return Problem(_DOCUMENT, message, fix)
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        what = " ".join(part for part in (error.context, error.problem) if part)
        message = f"YAML syntax error in {origin} at line {mark.line + 1}, column {mark.column + 1}: {what}."
    else:
        message = f"YAML syntax error in {origin}: {error}."
    return Problem(
        _DOCUMENT, message, "Correct the YAML at that position (indentation, quoting, or a duplicate key)."
    )


def _json_problem(error: json.JSONDecodeError, origin: str) -> Problem:
    message = f"JSON syntax error in {origin} at line {error.lineno}, column {error.colno}: {error.msg}."
    return Problem(
        _DOCUMENT, message, "Correct the JSON at that position (a missing comma or quote is typical)."
    )


class _JSONRefused(ValueError):
    """Valid JSON the provider refuses; ``fix`` says what to do instead."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def _reject_duplicate_json_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _JSONRefused(f"duplicate key {shown(key)} in a JSON object", "Give each key once.")
        result[key] = value
    return result


def _json_integer(digits: str) -> int:
    if len(digits) > _MAX_INTEGER_DIGITS:
        raise _JSONRefused(
            f"an integer of {len(digits):,} digits (no Kubernetes field holds more than 19)",
            "Write a number that fits the field, or quote the value if it is meant as text.",
        )
    return int(digits)


def _parse_json(text: str, origin: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicate_json_keys, parse_int=_json_integer)
    except json.JSONDecodeError as error:
        raise ManifestError([_json_problem(error, origin)]) from error
    except _JSONRefused as error:
        raise ManifestError([Problem(_DOCUMENT, f"{error} in {origin}.", error.fix)]) from error
    except RecursionError:
        # The JSON decoder recurses once per level; the depth limit is far below where it gives up.
        raise ManifestError([depth_problem(_DOCUMENT)]) from None


def _parse_yaml(text: str, origin: str) -> Any:
    try:
        documents = [doc for doc in yaml.load_all(text, Loader=_StrictSafeLoader) if doc is not None]
    except yaml.YAMLError as error:
        raise ManifestError([_yaml_problem(error, origin)]) from error
    if not documents:
        raise ManifestError([Problem(_DOCUMENT, f"{origin} is empty.", "Provide one TFJob manifest.")])
    if len(documents) > 1:
        message = f"{origin} contains {len(documents)} YAML documents; a TFJob manifest is exactly one."
        fix = "Keep only the TFJob document (one TFJob per task; create other objects separately)."
        raise ManifestError([Problem(_DOCUMENT, message, fix)])
    return documents[0]


def _parse_text(text: str, origin: str, *, strict_json: bool) -> Any:
    if (problem := text_size_problem(text, _DOCUMENT)) is not None:
        raise ManifestError([problem])
    if strict_json:
        return _parse_json(text, origin)
    if text.lstrip().startswith("{"):
        # Looks like JSON.  YAML flow mappings also start with "{", so fall back to YAML, but
        # report the JSON error when neither parser accepts it: the author was writing JSON.
        try:
            return _parse_json(text, origin)
        except ManifestError as json_error:
            try:
                return _parse_yaml(text, origin)
            except ManifestError:
                raise json_error from None
    return _parse_yaml(text, origin)


def _read_file(path: Path) -> Any:
    origin = f"file {shown(str(path), 200)}"
    if not path.name.lower().endswith(MANIFEST_SUFFIXES):
        message = f"{origin} is not a manifest file."
        raise ManifestError([Problem(_DOCUMENT, message, "Use a .yaml, .yml or .json file.")])
    try:
        size = path.stat().st_size
        if size > MAX_MANIFEST_BYTES:
            raise ManifestError([size_problem(_DOCUMENT, size)])  # never read a huge file into memory
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        fix = "Check the path (relative paths are resolved from the worker's current directory)."
        raise ManifestError([Problem(_DOCUMENT, f"{origin} does not exist.", fix)]) from error
    except (OSError, UnicodeDecodeError) as error:
        fix = "Make the file a readable UTF-8 text file."
        raise ManifestError([Problem(_DOCUMENT, f"{origin} cannot be read: {error}.", fix)]) from error
    return _parse_text(text, origin, strict_json=path.name.lower().endswith(".json"))


def _names_manifest_file(text: str) -> bool:
    """A single line ending in a manifest suffix is a path; anything else is manifest text."""
    return "\n" not in text and text.strip().lower().endswith(MANIFEST_SUFFIXES)


def load_tfjob(source: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    """Read one TFJob manifest from a mapping, YAML/JSON text, or a ``.yaml``/``.yml``/``.json`` path.

    A string is a path when it is a single line ending in one of those suffixes (a missing file is
    then reported as missing, not parsed as YAML); otherwise it is manifest text.  Returns a fresh
    dict (never the caller's object).  Raises :class:`ManifestError` for unreadable files, syntax
    errors (with line and column), duplicate keys, empty or multi-document input, a document that
    is not a mapping, an ``apiVersion``/``kind`` other than ``kubeflow.org/v1`` ``TFJob``, and input
    over the limits of :mod:`.limits` (size, nesting, alias expansion), each with the limit named.
    The content is not validated: that is :func:`validate_tfjob`'s job.
    """
    document: Any
    if isinstance(source, Mapping):
        if (problem := shape_problem(source)) is not None:
            raise ManifestError([problem])  # before deepcopy, which would recurse into it
        document = copy.deepcopy(dict(source))
    elif isinstance(source, os.PathLike):
        document = _read_file(Path(source))
    elif isinstance(source, str):
        if _names_manifest_file(source):
            document = _read_file(Path(source.strip()))
        else:
            document = _parse_text(source, "the manifest text", strict_json=False)
    else:
        message = f"A TFJob manifest was expected, got {type(source).__name__}."
        fix = "Pass a dict, YAML or JSON text, or the path of a .yaml/.yml/.json file."
        raise ManifestError([Problem(_DOCUMENT, message, fix)])
    if (problem := shape_problem(document)) is not None:
        raise ManifestError([problem])  # e.g. JSON nested more than the limit, or aliases too large
    if not isinstance(document, dict):
        message = f"The manifest is a {type(document).__name__}, not a mapping."
        fix = "Give one mapping with apiVersion, kind, metadata and spec."
        raise ManifestError([Problem(_DOCUMENT, message, fix)])
    problems = type_meta_problems(document)
    if problems:
        raise ManifestError(problems)
    return document

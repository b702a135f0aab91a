"""Turn what a user hands the provider — a mapping, YAML or JSON text, or a file — into one TFJob dict.

Why this module exists: an Airflow user passes a manifest in whichever form is at hand, and the
operator receives it after Jinja rendering, so a file may arrive as its path *or* as its
contents.  Parsing mistakes must come back as the same :class:`ManifestError` as every other
manifest problem, with the line and column of a syntax error, and the things PyYAML accepts
silently but Kubernetes would not (several documents, a key given twice) must be caught here.
Only parsing and the ``apiVersion``/``kind`` check happen here; :mod:`.validation`
checks the content.

Standard library plus PyYAML.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from tfjob_provider._manifest.problems import ManifestError, Problem
from tfjob_provider._manifest.validation import type_meta_problems

#: File name endings read as a manifest file (compared case-insensitively).
MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")
_DOCUMENT: Final = "document"
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"


class _StrictSafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error.

    The pure-Python loader, not libyaml's ``CSafeLoader``: its error messages are more precise
    (it names the offending character) and do not depend on how PyYAML was built; the few
    milliseconds it costs per manifest do not matter once per task.
    """


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
                    f"duplicate key {key!r} (first given on line {first_line[key]})",
                    key_node.start_mark,
                )
            first_line[key] = line
        except TypeError:  # an unhashable (complex) key: PyYAML itself rejects it below
            continue
    loader.flatten_mapping(node)
    return dict(loader.construct_pairs(node, deep=True))


_StrictSafeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _yaml_problem(error: yaml.YAMLError, origin: str) -> Problem:
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


def _reject_duplicate_json_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r} in a JSON object")
        result[key] = value
    return result


def _parse_json(text: str, origin: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicate_json_keys)
    except json.JSONDecodeError as error:
        raise ManifestError([_json_problem(error, origin)]) from error
    except ValueError as error:
        fix = "Give each key once."
        raise ManifestError([Problem(_DOCUMENT, f"{error} in {origin}.", fix)]) from error


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
    origin = f"file {str(path)!r}"
    if not path.name.lower().endswith(MANIFEST_SUFFIXES):
        message = f"{origin} is not a manifest file."
        raise ManifestError([Problem(_DOCUMENT, message, "Use a .yaml, .yml or .json file.")])
    try:
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
    is not a mapping, and an ``apiVersion``/``kind`` other than ``kubeflow.org/v1`` ``TFJob``.
    The content is not validated: that is :func:`validate_tfjob`'s job.
    """
    document: Any
    if isinstance(source, Mapping):
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
    if not isinstance(document, dict):
        message = f"The manifest is a {type(document).__name__}, not a mapping."
        fix = "Give one mapping with apiVersion, kind, metadata and spec."
        raise ManifestError([Problem(_DOCUMENT, message, fix)])
    problems = type_meta_problems(document)
    if problems:
        raise ManifestError(problems)
    return document

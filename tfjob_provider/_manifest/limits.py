"""Size and shape limits a manifest must keep before anything recurses into it or expands it
(:func:`shape_problem`), checked iteratively;
docs/adr/0014-manifest-problems-all-at-once-before-any-request.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from tfjob_provider._manifest.problems import Problem, child

#: Largest manifest accepted, as text and as the JSON body that would be sent: 1 MiB.  The API
#: server refuses request bodies over 3 MiB, but etcd (default ``--max-request-bytes``) refuses
#: objects over 1.5 MiB, and the provider adds identity labels and annotations and the training
#: operator a status; 1 MiB keeps that headroom.  Real TFJob manifests are a few kilobytes.
MAX_MANIFEST_BYTES: Final = 1024 * 1024
#: Deepest nesting of mappings and lists accepted (the document itself is level 1).  A TFJob with
#: pod affinity rules needs about 15; every recursive walk of the provider and of Airflow stays far
#: below Python's recursion limit at 64.
MAX_NESTING_DEPTH: Final = 64
#: Nodes (mappings, lists and scalars, counted inside everything an alias repeats) that YAML aliases
#: may add in total.  Enough to share a pod template between replica types; an alias bomb needs
#: millions.
MAX_ALIAS_NODES: Final = 1000

_DOCUMENT: Final = "document"
_MIB: Final = 1024 * 1024
_END: Final = object()


def describe_bytes(size: int) -> str:
    """``1 MiB (1,048,576 bytes)`` for a limit, ``2.4 MiB`` for a measured size."""
    if size % _MIB == 0:
        return f"{size // _MIB} MiB ({size:,} bytes)"
    return f"{size / _MIB:.1f} MiB" if size >= _MIB // 10 else f"{size:,} bytes"


def size_problem(field: str, size: int | None = None) -> Problem:
    """*field* (the manifest, or a value that goes into it) is over :data:`MAX_MANIFEST_BYTES`."""
    measured = f"is {describe_bytes(size)}," if size is not None else "is"
    message = (
        f"{measured} over the {describe_bytes(MAX_MANIFEST_BYTES)} limit for a TFJob manifest "
        "(the API server and etcd refuse large objects; the provider keeps headroom below them)."
    )
    fix = "Make it smaller: keep data and long configuration in a ConfigMap, Secret or volume, not inline."
    return Problem(field, message, fix)


def depth_problem(field: str) -> Problem:
    message = f"nests mappings and lists deeper than {MAX_NESTING_DEPTH} levels, the limit."
    fix = "Flatten it: a complete TFJob manifest needs about 15 levels."
    return Problem(field, message, fix)


def text_size_problem(text: str, field: str = _DOCUMENT) -> Problem | None:
    """A problem when manifest text is over :data:`MAX_MANIFEST_BYTES` (UTF-8), else None."""
    if len(text) <= MAX_MANIFEST_BYTES // 4:
        return None  # at most four bytes a character: certainly within the limit
    size = len(text) if len(text) > MAX_MANIFEST_BYTES else len(text.encode("utf-8", "surrogatepass"))
    if size <= MAX_MANIFEST_BYTES:
        return None
    return size_problem(field, size)


def _scalar_bytes(value: Any) -> int:
    """Roughly what *value* takes in a JSON body (exact for ASCII strings)."""
    if isinstance(value, str):
        return 2 + (len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass")))
    if isinstance(value, bool) or value is None:
        return 5
    if isinstance(value, int):
        return 2 + int(value.bit_length() * 0.30103)
    return 24  # floats and anything JSON cannot carry (the validator names those)


def _children(value: Any) -> Iterator[tuple[object, Any]] | None:
    if isinstance(value, Mapping):
        return iter(value.items())
    if isinstance(value, list | tuple):
        return enumerate(value)
    return None


def shape_problem(value: Any, field: str = _DOCUMENT, *, check_size: bool = True) -> Problem | None:
    """The first limit *value* breaks — nesting, size, or containing itself — or None.

    Iterative and bounded: it stops as soon as a limit is crossed, so its cost is at most about
    :data:`MAX_MANIFEST_BYTES` steps even for a structure that shares its parts exponentially.
    With *check_size* False a value over the size limit is not a problem, but the walk still
    stops there (None: nothing found in the first :data:`MAX_MANIFEST_BYTES`).
    """
    root = _children(value)
    if root is None:
        return size_problem(field) if check_size and _scalar_bytes(value) > MAX_MANIFEST_BYTES else None
    size = 2
    root_path = (
        "" if field == _DOCUMENT else field
    )  # the manifest's own fields read "spec.x", not "document.spec.x"
    stack: list[tuple[Iterator[tuple[object, Any]], str, int]] = [(root, root_path, id(value))]
    open_ids = {id(value)}
    while stack:
        entries, path, identity = stack[-1]
        entry = next(entries, _END)
        if entry is _END:
            stack.pop()
            open_ids.discard(identity)
            continue
        key, item = entry  # type: ignore[misc]
        size += 1 + (_scalar_bytes(key) + 1 if isinstance(key, str) else 0)
        nested = _children(item)
        if nested is None:
            size += _scalar_bytes(item)
        else:
            size += 2
            item_path = child(path, key)
            if id(item) in open_ids:
                message = "contains itself (a self-referencing structure), which JSON cannot carry."
                return Problem(item_path, message, "Build the manifest from fresh dicts and lists.")
            if len(stack) + 1 > MAX_NESTING_DEPTH:
                return depth_problem(item_path)
            stack.append((nested, item_path, id(item)))
            open_ids.add(id(item))
        if size > MAX_MANIFEST_BYTES:
            return size_problem(field) if check_size else None
    return None


__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_MANIFEST_BYTES",
    "MAX_NESTING_DEPTH",
    "depth_problem",
    "describe_bytes",
    "shape_problem",
    "size_problem",
    "text_size_problem",
]

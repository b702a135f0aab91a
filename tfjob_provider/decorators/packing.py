"""Checks a ``@task.tfjob`` function and its arguments before any request and packs them for the pods
(docs/adr/0017-task-tfjob-functions-shipped-as-source.md); raises :class:`TaskFunctionError`.
"""

from __future__ import annotations

import base64
import builtins
import dis
import inspect
import json
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from tfjob_provider.decorators.pod_runner import PAYLOAD_ENV

#: Largest payload (function source + JSON arguments + shipped modules) put into a manifest.
MAX_PAYLOAD_BYTES: Final = 96 * 1024
#: Modules shipped with every payload, installed in the pod when the image cannot import them.
SHIPPED_MODULES: Final = ("tfjob_provider.training",)

_PACKAGE_ROOT: Final = Path(__file__).resolve().parent.parent
_BUILTIN_NAMES: Final = frozenset(dir(builtins))
_GLOBAL_LOADS: Final = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_GLOBAL_STORES: Final = frozenset({"STORE_GLOBAL", "STORE_NAME"})


class TaskFunctionError(ValueError):
    """The decorated function, or its arguments, cannot run inside the TFJob's replicas."""


def _fail(function_name: str, problem: str, fix: str) -> TaskFunctionError:
    return TaskFunctionError(f"@task.tfjob function {function_name!r} {problem}; {fix}")


def check_callable(function: Callable[..., Any]) -> str:
    """The function's name, after the checks that need only the object (see the module docstring)."""
    name = getattr(function, "__name__", repr(function))
    if not isinstance(function, types.FunctionType):
        raise _fail(
            name,
            f"is a {type(function).__name__}, not a plain function",
            "decorate a function defined with def at the top level of the DAG file",
        )
    if name == "<lambda>":
        raise _fail(name, "is a lambda", "define it with def, so it has a name and a source of its own")
    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
        raise _fail(name, "is async", "define it with def; the replica calls it synchronously")
    if inspect.isgeneratorfunction(function):
        raise _fail(name, "is a generator", "return the result instead of yielding it")
    free = function.__code__.co_freevars
    if free:
        raise _fail(
            name,
            f"is a closure: it reads {', '.join(free)} of an enclosing function, which do not travel to "
            "the pods",
            "define it at the top level of the DAG file and pass those values as arguments",
        )
    return name


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _code_objects(constant)


def undefined_names(source: str, function_name: str) -> list[str]:
    """Names the source reads as globals that neither it nor Python's builtins define, sorted."""
    module = compile(source, f"<@task.tfjob {function_name}>", "exec")
    loaded: set[str] = set()
    defined: set[str] = set()
    for code in _code_objects(module):
        for instruction in dis.get_instructions(code):
            if instruction.opname in _GLOBAL_LOADS:
                loaded.add(str(instruction.argval))
            elif instruction.opname in _GLOBAL_STORES:
                defined.add(str(instruction.argval))
    return sorted(loaded - defined - _BUILTIN_NAMES)


def check_source(source: str, function_name: str) -> None:
    """The source defines the function at its top level and reads no name it does not define."""
    try:
        unknown = undefined_names(source, function_name)
    except SyntaxError as error:
        raise _fail(
            function_name, f"has a source that does not compile on its own ({error})", "define it with def"
        ) from None
    if function_name not in _defined_at_top(source, function_name):
        raise _fail(function_name, "is not defined by its own source", "define it with def")
    if unknown:
        pronoun = "it" if len(unknown) == 1 else "them"
        raise _fail(
            function_name,
            f"uses {', '.join(unknown)} without importing or defining {pronoun}",
            "it runs alone in every replica, so import modules inside the function and pass values "
            "as arguments (module-level imports and constants of the DAG file are not there)",
        )


def _defined_at_top(source: str, function_name: str) -> set[str]:
    module = compile(source, f"<@task.tfjob {function_name}>", "exec")
    return {
        str(instruction.argval)
        for instruction in dis.get_instructions(module)
        if instruction.opname in _GLOBAL_STORES
    }


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _json_argument(function_name: str, label: str, value: Any) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise _fail(
            function_name,
            f"got {label} {_describe(value)} of type {type(value).__name__}, which is not JSON ({error})",
            "arguments travel to the pods as JSON: pass str, int, float, bool, None, lists and dicts "
            "(a URI for anything larger)",
        ) from None


def shipped_module_sources() -> dict[str, str]:
    """The sources of :data:`SHIPPED_MODULES`, read from this installed package."""
    sources = {}
    for name in SHIPPED_MODULES:
        relative = Path(*name.split(".")[1:]).with_suffix(".py")
        sources[name] = (_PACKAGE_ROOT / relative).read_text(encoding="utf-8")
    return sources


def pack(
    source: str,
    function_name: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    parameter_names: Sequence[str] = (),
) -> str:
    """The payload for :data:`~tfjob_provider.decorators.pod_runner.PAYLOAD_ENV`: base64 of JSON
    (Kubernetes would expand ``$(VAR)`` and ``$$`` in a plain environment value).

    :param parameter_names: the function's parameter names, to name a bad positional argument.
    """
    for position, value in enumerate(args):
        label = (
            f"argument {parameter_names[position]!r}"
            if position < len(parameter_names)
            else f"positional argument {position + 1}"
        )
        _json_argument(function_name, label, value)
    for key, value in kwargs.items():
        _json_argument(function_name, f"argument {key!r}", value)
    document = json.dumps(
        {
            "function": function_name,
            "source": source,
            "args": list(args),
            "kwargs": dict(kwargs),
            "modules": shipped_module_sources(),
        },
        allow_nan=False,
    )
    payload = base64.b64encode(document.encode("utf-8")).decode("ascii")
    size = len(payload)
    if size > MAX_PAYLOAD_BYTES:
        raise _fail(
            function_name,
            f"and its arguments make a {size // 1024} KiB payload, over the {MAX_PAYLOAD_BYTES // 1024} KiB "
            f"that fit in the {PAYLOAD_ENV} environment variable of every replica's pod template",
            "pass large data by URI (object storage, a volume) instead of as an argument",
        )
    return payload


def runner_source() -> str:
    """The program every replica runs (:mod:`tfjob_provider.decorators.pod_runner`)."""
    return (Path(__file__).resolve().parent / "pod_runner.py").read_text(encoding="utf-8")


def runner_command(interpreter: str) -> list[str]:
    """The ``tensorflow`` container's command: the interpreter running the pod runner's source."""
    return [interpreter, "-c", runner_source()]


__all__ = [
    "MAX_PAYLOAD_BYTES",
    "PAYLOAD_ENV",
    "SHIPPED_MODULES",
    "TaskFunctionError",
    "check_callable",
    "check_source",
    "pack",
    "runner_command",
    "runner_source",
    "shipped_module_sources",
    "undefined_names",
]

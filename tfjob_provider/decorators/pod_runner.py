"""The program of every replica of a ``@task.tfjob`` TFJob, shipped as source, standard library only:
reads the payload, calls the function, maps its ending to an exit code and, in the deciding
replica, writes the return value as the termination message.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import traceback
import types
from collections.abc import Mapping
from typing import Any

#: Environment variable carrying the payload (see the module docstring).
PAYLOAD_ENV = "TFJOB_TASK_PAYLOAD"
#: Where a local stand-in for a node (the sandbox) relocated the termination message file.
RELOCATED_TERMINATION_PATH_ENV = "TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH"
DEFAULT_TERMINATION_PATH = "/dev/termination-log"
#: Kubernetes keeps 4096 bytes of a termination message; the operator treats 4096 as cut.
MESSAGE_LIMIT = 4096
PROGRAM_ERROR_EXIT_CODE = 1


def install_modules(modules: Mapping[str, str]) -> None:
    """Make each ``name -> source`` module importable, unless the image already has it."""
    for name, source in modules.items():
        try:
            __import__(name)
            continue
        except ImportError:
            pass
        parent_name, _, _ = name.rpartition(".")
        if parent_name and parent_name not in sys.modules:
            try:
                __import__(parent_name)
            except ImportError:
                parent = types.ModuleType(parent_name)
                parent.__path__ = []
                sys.modules[parent_name] = parent
        module = types.ModuleType(name)
        module.__file__ = f"<{name} shipped by @task.tfjob>"
        sys.modules[name] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)


def decides(tf_config: str | None) -> bool:
    """Whether this replica's return value is the task's: chief/master 0, else worker 0; a
    process without ``TF_CONFIG`` (a single replica) always decides."""
    if not tf_config:
        return True
    try:
        config = json.loads(tf_config)
        task = config.get("task") or {}
        cluster = config.get("cluster") or {}
        kind, index = str(task.get("type", "")).lower(), int(task.get("index", 0))
    except (ValueError, AttributeError, TypeError):
        return True
    if index != 0:
        return False
    if kind in ("chief", "master"):
        return True
    return kind == "worker" and not any(role in cluster for role in ("chief", "master"))


def termination_path(environ: Mapping[str, str]) -> str:
    return environ.get(RELOCATED_TERMINATION_PATH_ENV) or DEFAULT_TERMINATION_PATH


def encode_result(name: str, value: Any) -> tuple[str | None, str | None]:
    """``(document, None)`` for a value the task may return (None: no document), else
    ``(None, error)`` saying why not and what to do instead."""
    if value is None:
        return None, None
    try:
        document = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        return None, (
            f"the return value of {name}() cannot be the task's XCom: it is not JSON-serialisable "
            f"({error}). Return a dict of JSON values, or write the results to storage and return "
            "their URI instead."
        )
    size = len(document.encode("utf-8"))
    if size >= MESSAGE_LIMIT:
        return None, (
            f"the return value of {name}() is {size} bytes as JSON; a TFJob task can return less "
            f"than {MESSAGE_LIMIT} bytes (Kubernetes' termination message limit). Write the results "
            "to storage and return their URI instead."
        )
    return document, None


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        print(f"@task.tfjob: could not write the termination message {path}: {error}", file=sys.stderr)


def run(payload: Mapping[str, Any], environ: Mapping[str, str]) -> int:
    """Run the payload's function; the exit code for this replica."""
    install_modules(payload.get("modules") or {})
    from tfjob_provider.training import RETRYABLE_EXIT_CODE, RetryableTrainingError

    name = str(payload["function"])
    namespace: dict[str, Any] = {"__name__": "__tfjob_task__"}
    exec(compile(str(payload["source"]), f"<@task.tfjob {name}>", "exec"), namespace)
    function = namespace[name]
    try:
        value = function(*payload.get("args", []), **payload.get("kwargs", {}))
    except RetryableTrainingError:
        traceback.print_exc()
        print(f"@task.tfjob: {name}() asked for a retry; exit code {RETRYABLE_EXIT_CODE}", file=sys.stderr)
        return RETRYABLE_EXIT_CODE
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        return PROGRAM_ERROR_EXIT_CODE
    if not decides(environ.get("TF_CONFIG")):
        return 0
    document, error = encode_result(name, value)
    if error is not None:
        print(f"@task.tfjob: {error}", file=sys.stderr)
        _write(termination_path(environ), error)
        return PROGRAM_ERROR_EXIT_CODE
    if document is not None:
        _write(termination_path(environ), document)
    return 0


def main() -> int:
    raw = os.environ.get(PAYLOAD_ENV)
    if not raw:
        print(f"@task.tfjob: {PAYLOAD_ENV} is not set; this program runs a decorated task", file=sys.stderr)
        return PROGRAM_ERROR_EXIT_CODE
    code = run(json.loads(base64.b64decode(raw)), os.environ)
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())

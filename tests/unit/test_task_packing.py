"""@task.tfjob's checks of a function and its arguments, and the program every replica runs."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tfjob_provider.decorators import pod_runner
from tfjob_provider.decorators.packing import (
    MAX_PAYLOAD_BYTES,
    TaskFunctionError,
    check_callable,
    check_source,
    pack,
    runner_command,
    runner_source,
    undefined_names,
)
from tfjob_provider.training import RETRYABLE_EXIT_CODE

MODULE_CONSTANT = 3


def good(data_uri: str, steps: int = 10) -> dict[str, Any]:
    import json as js
    import os as system

    with open(system.path.join(data_uri, "x")) as handle:
        total = sum(len(line) for line in handle)
    return {"steps": steps, "total": total, "dumped": js.dumps([i for i in range(steps)])}


def uses_module_constant() -> int:
    return MODULE_CONSTANT + len(json.dumps({}))


def make_closure() -> Callable[[], int]:
    captured = 4

    def inner() -> int:
        return captured

    return inner


async def asynchronous() -> None:
    return None


def generator() -> Any:
    yield 1


def test_a_plain_function_passes_and_its_imports_are_not_mistaken_for_missing_names() -> None:
    assert check_callable(good) == "good"
    check_source(textwrap.dedent(_source(good)), "good")
    assert undefined_names(_source(good), "good") == []


def _source(function: Callable[..., Any]) -> str:
    import inspect

    return textwrap.dedent(inspect.getsource(function))


@pytest.mark.parametrize(
    ("function", "match"),
    [
        (lambda: 1, "is a lambda"),
        (make_closure(), r"is a closure: it reads captured"),
        (asynchronous, "is async"),
        (generator, "is a generator"),
        (print, "not a plain function"),
    ],
)
def test_functions_that_cannot_run_in_a_pod_are_refused(function: Any, match: str) -> None:
    with pytest.raises(TaskFunctionError, match=match):
        check_callable(function)


def test_names_used_but_neither_imported_nor_defined_are_named() -> None:
    with pytest.raises(
        TaskFunctionError, match=r"uses MODULE_CONSTANT, json without importing or defining them"
    ):
        check_source(_source(uses_module_constant), "uses_module_constant")
    with pytest.raises(TaskFunctionError, match="uses np without importing or defining it"):
        check_source("def f(x=np.pi):\n    return x\n", "f")
    with pytest.raises(TaskFunctionError, match="not defined by its own source"):
        check_source("def g():\n    return 1\n", "f")


def test_arguments_must_be_json_and_are_named_when_not() -> None:
    with pytest.raises(TaskFunctionError, match=r"got argument 'data_uri' .* of type PosixPath"):
        pack("def f(data_uri): pass\n", "f", [Path("/data")], {}, parameter_names=["data_uri"])
    with pytest.raises(TaskFunctionError, match=r"got argument 'steps' nan of type float"):
        pack("def f(steps): pass\n", "f", [], {"steps": math.nan})
    with pytest.raises(TaskFunctionError, match=r"KiB payload, over the 96 KiB .* pass large data by URI"):
        pack("def f(blob): pass\n", "f", ["x" * MAX_PAYLOAD_BYTES], {})


def test_the_runner_travels_as_a_command_argument_without_dollar_signs() -> None:
    # Kubernetes expands $(VAR) and $$ in command arguments.
    command = runner_command("python3")
    assert command[:2] == ["python3", "-c"] and "$" not in command[2]
    assert command[2] == runner_source()


def test_the_deciding_replica_is_chief_0_else_worker_0() -> None:
    def config(kind: str, index: int, *roles: str) -> str:
        return json.dumps(
            {"cluster": {role: ["h:1"] for role in roles}, "task": {"type": kind, "index": index}}
        )

    assert pod_runner.decides(None)
    assert pod_runner.decides(config("chief", 0, "chief", "worker"))
    assert not pod_runner.decides(config("worker", 0, "chief", "worker"))
    assert pod_runner.decides(config("worker", 0, "worker", "ps"))
    assert not pod_runner.decides(config("worker", 1, "worker"))
    assert not pod_runner.decides(config("ps", 0, "worker", "ps"))


def test_return_values_that_cannot_be_the_xcom_say_to_return_a_uri() -> None:
    assert pod_runner.encode_result("f", None) == (None, None)
    assert pod_runner.encode_result("f", {"loss": 0.5}) == ('{"loss": 0.5}', None)
    _, not_json = pod_runner.encode_result("f", {"model": object()})
    assert not_json is not None and "not JSON-serialisable" in not_json and "URI" in not_json
    _, too_big = pod_runner.encode_result("f", "x" * 5000)
    assert too_big is not None and "5002 bytes" in too_big and "URI" in too_big


def run_replica(
    tmp_path: Path, source: str, name: str, *args: Any, tf_config: str | None = None
) -> tuple[int, str]:
    """Run the pod runner as a replica would: a Python without this provider (-I -S: no site
    packages, no current directory on sys.path), the payload in the environment."""
    termination = tmp_path / "termination-log"
    payload = pack(textwrap.dedent(source), name, list(args), {})
    env = {
        "PATH": os.environ.get("PATH", ""),
        pod_runner.PAYLOAD_ENV: payload,
        pod_runner.RELOCATED_TERMINATION_PATH_ENV: str(termination),
    }
    if tf_config is not None:
        env["TF_CONFIG"] = tf_config
    finished = subprocess.run(
        [sys.executable, "-I", "-S", *runner_command("python3")[1:]],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    message = termination.read_text() if termination.exists() else ""
    return finished.returncode, message + ("\n" + finished.stderr if finished.returncode else "")


def test_the_runner_returns_the_value_as_the_termination_message(tmp_path: Path) -> None:
    source = """
    def train(steps):
        return {"steps": steps, "loss": 0.25}
    """
    code, message = run_replica(tmp_path, source, "train", 7)
    assert code == 0 and json.loads(message) == {"steps": 7, "loss": 0.25}


def test_a_non_deciding_replica_writes_nothing(tmp_path: Path) -> None:
    tf_config = json.dumps(
        {"cluster": {"chief": ["a:1"], "worker": ["b:1"]}, "task": {"type": "worker", "index": 0}}
    )
    code, message = run_replica(tmp_path, "def f():\n    return {'x': 1}\n", "f", tf_config=tf_config)
    assert (code, message) == (0, "")


def test_exceptions_map_to_exit_codes_without_the_provider_installed(tmp_path: Path) -> None:
    failing = "def f():\n    raise KeyError('no such shard')\n"
    code, output = run_replica(tmp_path, failing, "f")
    assert code == 1 and "KeyError: 'no such shard'" in output
    retry = """
    def f():
        import sys
        from tfjob_provider.training import RetryableTrainingError
        assert sys.modules["tfjob_provider.training"].__file__.startswith("<"), "installed from the payload"
        raise RetryableTrainingError("storage hiccup")
    """
    code, output = run_replica(tmp_path, retry, "f")
    assert code == RETRYABLE_EXIT_CODE == 200, output
    assert "RetryableTrainingError: storage hiccup" in output
    code, _ = run_replica(tmp_path, "def f():\n    raise SystemExit(3)\n", "f")
    assert code == 3


def test_an_unreturnable_value_fails_the_deciding_replica_with_the_reason(tmp_path: Path) -> None:
    code, output = run_replica(tmp_path, "def f():\n    return {'when': object()}\n", "f")
    assert code == 1 and output.startswith("the return value of f() cannot be the task's XCom")

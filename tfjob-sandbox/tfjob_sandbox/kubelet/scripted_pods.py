"""Scripted ("hollow") pods: a pod annotated with a JSON script runs timers instead of processes.

``SCRIPT_ANNOTATION`` carries the script (format and examples in docs/sandbox.md).
"""

from __future__ import annotations

import asyncio
import json
import math
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from tfjob_sandbox.kubelet.image_pulls import check_cause

#: The pod annotation holding the script (JSON text).
SCRIPT_ANNOTATION: Final = "tfjob-sandbox/script"
#: Step reasons a script may give.
STEP_REASONS: Final = ("OOMKilled", "Evicted")
_SCRIPT_KEYS: Final = frozenset({"start_after", "steps", "image_pull"})
_STEP_KEYS: Final = frozenset({"run", "exit", "reason"})
_PULL_KEYS: Final = frozenset({"cause", "failures"})


class ScriptError(ValueError):
    """A script that cannot be played; the message names the field and the fix."""


def _fail(where: str, problem: str) -> ScriptError:
    return ScriptError(f"annotation {SCRIPT_ANNOTATION}: {where} {problem}")


def _seconds(where: str, value: object, *, allow_none: bool) -> float | None:
    if value is None and allow_none:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise _fail(where, f"must be a number of seconds >= 0, got {value!r}")
    return float(value)


def _unknown(where: str, data: Mapping[str, Any], known: frozenset[str]) -> None:
    extra = sorted(set(data) - known)
    if extra:
        raise _fail(where, f"has unknown key(s) {extra}; known: {sorted(known)}")


@dataclass(frozen=True, slots=True)
class Step:
    """One run of a scripted container."""

    run: float | None
    exit: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PodScript:
    """A parsed script (format in docs/sandbox.md, "Scripted pods")."""

    steps: tuple[Step, ...]
    start_after: float = 0.0
    pull_cause: str | None = None
    pull_failures: int | None = None

    def step(self, run_index: int) -> Step:
        """The step of run ``run_index`` (0 = first start); the last step repeats."""
        return self.steps[min(run_index, len(self.steps) - 1)]


def _step(where: str, data: object) -> Step:
    if not isinstance(data, Mapping):
        raise _fail(where, f'must be an object like {{"run": 30, "exit": 0}}, got {data!r}')
    _unknown(where, data, _STEP_KEYS)
    reason = data.get("reason")
    if reason is not None and reason not in STEP_REASONS:
        raise _fail(f"{where}.reason", f"is {reason!r}; use one of {list(STEP_REASONS)} or leave it out")
    code = data.get("exit", 137 if reason == "OOMKilled" else 0)
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 255:
        raise _fail(f"{where}.exit", f"must be an exit code from 0 to 255, got {code!r}")
    return Step(run=_seconds(f"{where}.run", data.get("run"), allow_none=True), exit=code, reason=reason)


def parse_script(text: str) -> PodScript:
    """Parse and check a script; :class:`ScriptError` names the field at fault."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise _fail("value", f"is not JSON ({error})") from error
    if not isinstance(data, Mapping):
        raise _fail(
            "value", f'must be a JSON object like {{"steps": [{{"run": 30, "exit": 0}}]}}, got {data!r}'
        )
    _unknown("script", data, _SCRIPT_KEYS)
    raw_steps = data.get("steps", [{"run": None}])
    if not isinstance(raw_steps, list) or not raw_steps:
        raise _fail("steps", f"must be a non-empty list of steps, got {raw_steps!r}")
    steps = tuple(_step(f"steps[{index}]", item) for index, item in enumerate(raw_steps))
    start_after = _seconds("start_after", data.get("start_after", 0), allow_none=False) or 0.0
    cause: str | None = None
    failures: int | None = None
    pull = data.get("image_pull")
    if pull is not None:
        if isinstance(pull, str):
            pull = {"cause": pull}
        if not isinstance(pull, Mapping):
            raise _fail("image_pull", f'must be a cause or {{"cause": ..., "failures": N}}, got {pull!r}')
        _unknown("image_pull", pull, _PULL_KEYS)
        try:
            cause = check_cause(str(pull.get("cause", "not-found")))
        except ValueError as error:
            raise _fail("image_pull.cause", str(error)) from error
        failures = pull.get("failures")
        if failures is not None and (
            isinstance(failures, bool) or not isinstance(failures, int) or failures < 1
        ):
            raise _fail(
                "image_pull.failures", f"must be a positive number of pulls or null, got {failures!r}"
            )
    return PodScript(steps=steps, start_after=start_after, pull_cause=cause, pull_failures=failures)


def script_of(pod: Mapping[str, Any]) -> str | None:
    """The script text of a pod, if it has one."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(SCRIPT_ANNOTATION)
    return text if isinstance(text, str) else None


class ScriptedProcess:
    """Stands in for a container process: one timer, no process, no thread, no task.

    ``on_end()`` runs when the scripted time is up (the kubelet then reports the step's exit or
    evicts the pod); a signal ends it at once with ``on_exit(128 + signal)``, as a process that
    does not trap it would.  Attributes mirror :class:`~tfjob_sandbox.kubelet.processes.ChildProcess`.
    """

    __slots__ = ("_loop", "_on_exit", "_timer", "exit_code")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        run: float | None,
        *,
        on_end: Callable[[], None],
        on_exit: Callable[[int], None],
    ) -> None:
        self._loop = loop
        self._on_exit = on_exit
        self.exit_code: int | None = None
        self._timer: asyncio.TimerHandle | None = None
        if run is not None:
            self._timer = loop.call_later(run, self._time_up, on_end)

    @property
    def running(self) -> bool:
        return self.exit_code is None

    def _time_up(self, on_end: Callable[[], None]) -> None:
        self._timer = None
        if self.running:
            on_end()

    def exit(self, code: int) -> None:
        """End with ``code`` (the kubelet's ``on_exit`` runs now)."""
        if not self.running:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.exit_code = code
        self._on_exit(code)

    def signal(self, sig: int) -> None:
        """A signal ends the container on the next loop turn with 128 + the signal's number."""
        if self.running and sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGINT):
            self._loop.call_soon(self.exit, 128 + int(sig))


__all__ = [
    "SCRIPT_ANNOTATION",
    "STEP_REASONS",
    "PodScript",
    "ScriptError",
    "ScriptedProcess",
    "Step",
    "parse_script",
    "script_of",
]

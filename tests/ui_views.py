"""Hand-made VIEW dicts (the JSON the TFJob tab's /api/view returns) and a view source serving them.

For tests of the presentation alone: the endpoints and the page, without a cluster or a DAG run.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

#: Strings that would run or inject something if the page put them in as markup, or colour the
#: log if it interpreted ANSI escapes.
HOSTILE = '<script>window.__pwned = 1</script>"><img src=x onerror="window.__pwned = 2">\x1b[31mred\x1b[0m'

T0 = "2026-01-05T10:00:00Z"


def at(seconds: int) -> str:
    """``T0`` plus ``seconds``, as the view writes times."""
    minutes, second = divmod(seconds, 60)
    return f"2026-01-05T10:{minutes:02d}:{second:02d}Z"


def _row(kind: str, index: int, pod: str, **extra: Any) -> dict[str, Any]:
    row = {
        "type": kind,
        "index": index,
        "pod": pod,
        "phase": "Succeeded",
        "exit_code": 0,
        "reason": "Completed",
        "restarts": 0,
        "recreations": 0,
        "node": "sandbox-node",
        "start": at(5),
        "end": at(60),
        "deciding": False,
        "culprit": False,
    }
    row.update(extra)
    return row


def _bar(
    pod: str, created: int, running: int | None, end: int | None, outcome: str, **extra: Any
) -> dict[str, Any]:
    bar = {
        "pod": pod,
        "created": at(created),
        "running": None if running is None else at(running),
        "end": None if end is None else at(end),
        "outcome": outcome,
        "exit_code": 0 if outcome == "succeeded" else None,
        "reason": "Completed" if outcome == "succeeded" else None,
        "restarts": 0,
    }
    bar.update(extra)
    return bar


def recovered_view() -> dict[str, Any]:
    """Chief + 2 Workers + PS; worker 1 was killed (137) and recreated, then everything succeeded."""
    job = "train-abc"
    worker1 = f"{job}-worker-1"
    return {
        "status": "record",
        "message": "The TFJob was deleted when the task ended; shown from the record the task kept.",
        "running": False,
        "tfjob": {
            "namespace": "default",
            "name": job,
            "uid": "0b8f6c1e-1111-4c3b-9d7e-2b1f3c4d5e6f",
            "try_number": 1,
            "start": T0,
            "end": at(62),
            "duration_seconds": 62,
            "conditions": [
                {
                    "type": "Created",
                    "status": "True",
                    "reason": "TFJobCreated",
                    "message": "created",
                    "time": T0,
                },
                {
                    "type": "Running",
                    "status": "False",
                    "reason": "TFJobRunning",
                    "message": "running",
                    "time": at(5),
                },
                {
                    "type": "Succeeded",
                    "status": "True",
                    "reason": "TFJobSucceeded",
                    "message": "TFJob default/train-abc successfully completed.",
                    "time": at(62),
                },
            ],
            "dashboard_url": None,
        },
        "verdict": {
            "state": "Succeeded",
            "reason": "ChiefSucceeded",
            "retryable": False,
            "message": "The chief finished with exit code 0.",
            "decided_at": at(61),
            "deciding": [f"{job}-chief-0"],
        },
        "replicas": {
            "groups": [
                {
                    "type": "Chief",
                    "count": 1,
                    "rows": [_row("Chief", 0, f"{job}-chief-0", deciding=True, end=at(61))],
                },
                {
                    "type": "Worker",
                    "count": 2,
                    "rows": [
                        _row("Worker", 0, f"{job}-worker-0"),
                        _row("Worker", 1, worker1, recreations=1, start=at(25)),
                    ],
                },
                {
                    "type": "PS",
                    "count": 1,
                    "rows": [_row("PS", 0, f"{job}-ps-0", phase="Running", exit_code=None)],
                },
            ],
            "more": 0,
        },
        "timeline": {
            "start": T0,
            "end": at(62),
            "verdict_at": at(61),
            "lanes": [
                {"type": "Chief", "index": 0, "bars": [_bar(f"{job}-chief-0", 1, 5, 61, "succeeded")]},
                {"type": "Worker", "index": 0, "bars": [_bar(f"{job}-worker-0", 1, 5, 58, "succeeded")]},
                {
                    "type": "Worker",
                    "index": 1,
                    "bars": [
                        _bar(worker1, 1, 5, 20, "failed_retryable", exit_code=137, reason="OOMKilled"),
                        _bar(worker1, 21, 25, 59, "succeeded"),
                    ],
                },
                {
                    "type": "PS",
                    "index": 0,
                    "bars": [_bar(f"{job}-ps-0", 1, 5, 62, "deleted", exit_code=None)],
                },
            ],
        },
        "events": {
            "items": [
                {
                    "time": at(21),
                    "type": "Normal",
                    "reason": "SuccessfulCreatePod",
                    "object": f"TFJob/{job}",
                    "message": f"Created pod: {worker1}",
                },
                {
                    "time": at(20),
                    "type": "Warning",
                    "reason": "Killed",
                    "object": f"Pod/{worker1}",
                    "message": "Container tensorflow exited with 137",
                },
                {
                    "time": at(1),
                    "type": "Normal",
                    "reason": "SuccessfulCreatePod",
                    "object": f"TFJob/{job}",
                    "message": f"Created pod: {job}-chief-0",
                },
            ],
            "more": 4,
        },
        "logs": {
            "pods": [
                {"type": "Chief", "index": 0, "pod": f"{job}-chief-0", "live": False},
                {"type": "Worker", "index": 0, "pod": f"{job}-worker-0", "live": False},
                {"type": "Worker", "index": 1, "pod": worker1, "live": False},
                {"type": "PS", "index": 0, "pod": f"{job}-ps-0", "live": False},
            ],
            "kept": {f"{job}-chief-0": ["step 10 loss 0.12", "training done"]},
        },
    }


def hostile_view() -> dict[str, Any]:
    """``recovered_view`` with every string the cluster or the trainer could write set to ``HOSTILE``."""
    view = recovered_view()
    view["message"] = HOSTILE
    view["verdict"]["message"] = HOSTILE
    view["verdict"]["reason"] = HOSTILE
    view["tfjob"]["conditions"][2]["message"] = HOSTILE
    view["tfjob"]["dashboard_url"] = "javascript:window.__pwned = 3"
    for group in view["replicas"]["groups"]:
        for row in group["rows"]:
            row["reason"] = HOSTILE
            row["node"] = HOSTILE
    for lane in view["timeline"]["lanes"]:
        for bar in lane["bars"]:
            bar["reason"] = HOSTILE
    for item in view["events"]["items"]:
        item["message"] = HOSTILE
        item["reason"] = HOSTILE
    view["logs"]["kept"] = {pod: [HOSTILE] for pod in view["logs"]["kept"]}
    return view


class UnknownPod(LookupError):
    """The pod is not one of this task instance's TFJob's."""


@dataclass
class Tail:
    text: str
    source: str = "record"
    truncated: bool = False


@dataclass
class StaticSource:
    """A view source (``tfjob_provider.ui.app.ViewSource``) answering with fixed data; records calls."""

    view: dict[str, Any]
    log_text: str = "step 10 loss 0.12\ntraining done"
    MAX_LOG_LINES: int = 2000
    MAX_LOG_BYTES: int = 256 * 1024
    UnknownPod: type[Exception] = UnknownPod
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def build_view(
        self, *, dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int | None = None
    ) -> dict[str, Any]:
        self.calls.append(
            ("build_view", {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index})
        )
        return copy.deepcopy(self.view)

    def read_log(
        self, *, dag_id: str, run_id: str, task_id: str, map_index: int, pod: str, lines: int
    ) -> Tail:
        self.calls.append(("read_log", {"pod": pod, "lines": lines, "map_index": map_index}))
        pods = {entry["pod"] for entry in self.view.get("logs", {}).get("pods", [])}
        if pod not in pods:
            raise UnknownPod(pod)
        return Tail(self.log_text)

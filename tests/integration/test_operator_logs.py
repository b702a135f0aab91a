"""The deciding replica's log reaches the task log: streamed live in the worker, printed on resume.

Driven against the sandbox with the provider's real sync client; ``emit`` collects what the
operator would hand its task logger.
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

from tfjob_sandbox.testing import unique_name, wait_for

from tests.integration.trigger_helpers import submit_tfjob
from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.operators._log_streaming import LogStreamer, print_deciding_log

PRINT_STEPS = "import time\nfor i in range(5):\n    print(f'step {i}', flush=True)\n    time.sleep(0.2)\n"


def _finished(hook: TFJobHook, name: str) -> bool:
    pods = hook.client.list_job_pods(name, namespace="default")
    return bool(pods) and all((pod.get("status") or {}).get("phase") == "Succeeded" for pod in pods)


def test_worker_mode_streams_the_chiefs_log_once_with_its_replica_prefix(cluster: Any) -> None:
    name = unique_name("logs-live")
    submit_tfjob(name, command=["python", "-c", PRINT_STEPS], worker=1)
    hook = TFJobHook()
    lines: list[str] = []
    lock = threading.Lock()

    def emit(line: str) -> None:
        with lock:
            lines.append(line)

    streamer = LogStreamer(hook.client, namespace="default", emit=emit)
    deadline = time.monotonic() + 30
    for snapshot in hook.client.watch_job(name, namespace="default"):
        streamer.update(snapshot.pods)
        chief = [p for p in snapshot.pods if p["metadata"]["name"].endswith("-chief-0")]
        if chief and (chief[0].get("status") or {}).get("phase") == "Succeeded":
            break
        assert time.monotonic() < deadline, "the job did not finish"
    streamer.drain(5.0)
    hook.client.close()
    assert lines == [f"[chief-0] step {i}" for i in range(5)]
    # The lines streamed are also kept for the tfjob_record.
    assert streamer.last_lines() == {f"{name}-chief-0": "\n".join(f"step {i}" for i in range(5))}


def test_resumed_deferred_task_prints_the_chiefs_last_lines(cluster: Any) -> None:
    name = unique_name("logs-resumed")
    submit_tfjob(name, command=["python", "-c", PRINT_STEPS], worker=1)
    hook = TFJobHook()
    wait_for(lambda: _finished(hook, name), timeout=30)
    lines: list[str] = []
    printed = print_deciding_log(hook.client, name=name, namespace="default", emit=lines.append, tail_lines=3)
    assert lines[0].startswith(f"[chief-0] log of pod {name}-chief-0 (last 3 lines")
    assert lines[1:] == ["[chief-0] step 2", "[chief-0] step 3", "[chief-0] step 4"]
    assert {pod: text.splitlines() for pod, text in printed.items()} == {
        f"{name}-chief-0": ["step 2", "step 3", "step 4"]
    }
    # A culprit's log is in the failure report already: not printed twice.
    again: list[str] = []
    printed = print_deciding_log(
        hook.client, name=name, namespace="default", emit=again.append, reported=[f"{name}-chief-0"]
    )
    hook.client.close()
    assert again == [] and printed == {}


def test_resumed_task_without_pods_says_so_in_one_line(cluster: Any) -> None:
    hook = TFJobHook()
    lines: list[str] = []
    print_deciding_log(hook.client, name="no-such-job", namespace="default", emit=lines.append)
    hook.client.close()
    assert len(lines) == 1
    assert "no chief or worker-0 log to show" in lines[0]


def test_a_stream_that_ended_before_the_status_caught_up_is_not_replayed(cluster: Any) -> None:
    # The log stream of a container that just exited ends before the watch reports the exit; a
    # snapshot still saying "running" must not make the streamer re-read (and repeat) the log.
    name = unique_name("logs-race")
    submit_tfjob(name, command=["python", "-c", PRINT_STEPS], worker=1)
    hook = TFJobHook()
    wait_for(lambda: _finished(hook, name), timeout=30)
    pods = hook.client.list_job_pods(name, namespace="default")
    (chief,) = [pod for pod in pods if "-chief-" in pod["metadata"]["name"]]
    stale = copy.deepcopy(chief)
    stale["status"]["phase"] = "Running"
    for status in stale["status"]["containerStatuses"]:
        status["state"] = {"running": {"startedAt": status["state"]["terminated"]["startedAt"]}}
    lines: list[str] = []
    streamer = LogStreamer(hook.client, namespace="default", emit=lines.append)
    streamer.update([stale])
    wait_for(lambda: len(lines) >= 5, timeout=10)
    wait_for(lambda: streamer._thread is not None and not streamer._thread.is_alive(), timeout=10)
    streamer.update([stale])  # the same stale "running" status once more
    time.sleep(0.5)
    streamer.drain(1.0)
    hook.client.close()
    assert lines == [f"[chief-0] step {i}" for i in range(5)]

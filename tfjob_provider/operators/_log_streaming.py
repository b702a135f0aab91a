"""The deciding replica's log in the task log: :class:`LogStreamer` follows it live in the worker,
:func:`print_deciding_log` prints its tail on resume (docs/adr/0009-deciding-log-in-the-worker.md).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from tfjob_provider._outcome.report import log_pod_for, pod_name, replica_of
from tfjob_provider.constants import DEFAULT_CONTAINER_NAME
from tfjob_provider.kube.kinds import TFJOB, JobKind

if TYPE_CHECKING:
    from tfjob_provider.kube.sync_client import SyncTFJobClient

#: Characters kept of one streamed log line (a progress bar without newlines must not flood the log).
MAX_STREAMED_LINE_CHARS: Final = 4000
#: Times one container instance's broken stream is resumed before giving up on it.
MAX_RESUMES: Final = 5
#: A log stream that ended cleanly while the last pod status still says "running" is most likely
#: a container that just exited, with the watch event saying so still on its way; it is resumed
#: only if the container is still reported running this many seconds after the end of its stream.
CLEAN_END_GRACE_SECONDS: Final = 5.0
#: Lines, and bytes, of the deciding replica's log printed when a deferred task resumes.
RESUMED_LOG_LINES: Final = 1000
RESUMED_LOG_BYTES: Final = 1024 * 1024

InstanceKey = tuple[str, int]


def _container_state(pod: Mapping[str, Any]) -> tuple[int, str | None]:
    """(restart count, "running" | "terminated" | "waiting" | None) of the ``tensorflow`` container."""
    status = pod.get("status") if isinstance(pod.get("status"), Mapping) else {}
    assert isinstance(status, Mapping)
    for container in status.get("containerStatuses") or []:
        if isinstance(container, Mapping) and container.get("name") == DEFAULT_CONTAINER_NAME:
            state = container.get("state") if isinstance(container.get("state"), Mapping) else {}
            assert isinstance(state, Mapping)
            current = next((key for key in ("running", "terminated", "waiting") if state.get(key)), None)
            restarts = container.get("restartCount")
            return (restarts if isinstance(restarts, int) else 0), current
    return 0, None


def _prefix(pod: Mapping[str, Any]) -> str:
    replica_type, index = replica_of(pod)
    return f"[{replica_type.lower()}-{index if index is not None else '?'}]"


class LogStreamer:
    """Follows the deciding replica's log in a daemon thread; feed it every new list of pods.

    :param emit: receives each prefixed line (the operator passes its logger).
    """

    def __init__(self, client: SyncTFJobClient, *, namespace: str, emit: Callable[[str], None]) -> None:
        self._client = client
        self._namespace = namespace
        self._emit = emit
        self._thread: threading.Thread | None = None
        self._following: InstanceKey | None = None
        self._resumes: dict[InstanceKey, int] = {}
        self._last_line_at = 0.0
        self._finished: set[InstanceKey] = set()
        self._clean_end_at: float | None = None  # when the last stream ended without an error
        self._stopping = threading.Event()
        self._ended = False  # the followed container has terminated: its stream ends by itself

    def update(self, pods: Sequence[Mapping[str, Any]]) -> None:
        """Start following the deciding pod's current container if it is not followed yet."""
        pod = log_pod_for(pods)
        if pod is None:
            return
        metadata = pod.get("metadata") if isinstance(pod.get("metadata"), Mapping) else {}
        assert isinstance(metadata, Mapping)
        restarts, state = _container_state(pod)
        if state not in ("running", "terminated"):
            return  # no log yet
        key: InstanceKey = (str(metadata.get("uid") or pod_name(pod)), restarts)
        self._ended = key == self._following and state == "terminated"
        if self._thread is not None and self._thread.is_alive():
            return  # the current stream ends by itself when its container ends
        if key in self._finished:
            return
        since: int | None = None
        if key == self._following:  # the stream ended; the container may still be there
            if state != "running" or self._resumes.get(key, 0) >= MAX_RESUMES:
                self._finished.add(key)
                return
            clean_end = self._clean_end_at
            if clean_end is not None and time.monotonic() - clean_end < CLEAN_END_GRACE_SECONDS:
                return  # wait for the pod status to catch up with the end of the log
            self._resumes[key] = self._resumes.get(key, 0) + 1
            since = max(1, math.ceil(time.monotonic() - self._last_line_at) + 1)
        self._start(pod, key, since)

    def _start(self, pod: Mapping[str, Any], key: InstanceKey, since: int | None) -> None:
        self._following = key
        self._ended = _container_state(pod)[1] == "terminated"
        name, prefix = pod_name(pod), _prefix(pod)
        self._thread = threading.Thread(
            target=self._follow, args=(name, prefix, since), name=f"tfjob-log-{name}", daemon=True
        )
        self._thread.start()

    def _follow(self, name: str, prefix: str, since: int | None) -> None:
        self._clean_end_at = None
        try:
            lines = self._client.follow_log(
                name, namespace=self._namespace, since_seconds=since, stopping=self._stopping
            )
            for line in lines:
                self._last_line_at = time.monotonic()
                self._emit(f"{prefix} {_cut(line)}")
        except Exception as error:  # a broken log stream must never fail the task
            self._emit(f"{prefix} (log stream interrupted: {type(error).__name__}: {error})")
        else:
            self._clean_end_at = time.monotonic()

    def drain(self, timeout: float) -> None:
        """Give the stream of a container that has ended up to ``timeout`` seconds to deliver its
        last lines; a container still running is not followed any further (its stream stops at
        its next line)."""
        thread = self._thread
        if thread is not None and self._ended:
            thread.join(timeout)
        self._stopping.set()


def print_deciding_log(
    client: SyncTFJobClient,
    *,
    name: str,
    namespace: str,
    emit: Callable[[str], None],
    tail_lines: int = RESUMED_LOG_LINES,
    limit_bytes: int = RESUMED_LOG_BYTES,
    reported: Collection[str] = (),
    kind: JobKind = TFJOB,
) -> None:
    """Print the chief's (else worker-0's) log after a deferred wait: its last ``tail_lines`` lines.

    ``reported`` names pods whose log the failure report shows anyway (the culprits): the
    deciding pod's is then not printed twice.  Never fails the task: a log that cannot be read
    is reported in one line instead.
    """
    try:
        pod = log_pod_for(client.run(kind.list_pods(client.session, name, namespace=namespace)))
        if pod is not None and pod_name(pod) in reported:
            return
        if pod is None or _container_state(pod)[1] is None:
            where = f"{kind.noun} {namespace}/{name}"
            emit(f"{where}: no chief or worker-0 log to show (its pod is gone or never ran)")
            return
        text = client.read_log_tail(
            pod_name(pod), namespace=namespace, tail_lines=tail_lines, limit_bytes=limit_bytes
        )
    except Exception as error:  # the log is a courtesy; the outcome is decided already
        emit(f"{kind.noun} {namespace}/{name}: could not read the deciding replica's log: {error}")
        return
    prefix = _prefix(pod)
    emit(f"{prefix} log of pod {pod_name(pod)} (last {tail_lines} lines; the wait ran in the triggerer):")
    for line in text.splitlines():
        emit(f"{prefix} {_cut(line)}")


def _cut(line: str) -> str:
    """A log line as the task log shows it: cut at ``MAX_STREAMED_LINE_CHARS``."""
    return f"{line[:MAX_STREAMED_LINE_CHARS]}… (cut)" if len(line) > MAX_STREAMED_LINE_CHARS else line


__all__ = ["MAX_STREAMED_LINE_CHARS", "RESUMED_LOG_LINES", "LogStreamer", "print_deciding_log"]

"""What the TFJob tab's endpoints call in the api-server: :func:`build_view` and :func:`read_log`.

They find the task instance and its XComs in Airflow's metadata DB, read the TFJob live through
the task's own connection (one GET, two LISTs; a log only on request) within
:data:`LIVE_DEADLINE_SECONDS`, and fall back to the ``tfjob_record`` the task left.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.kube.errors import KubeApiError, NotFoundError
from tfjob_provider.kube.retry import RetryPolicy
from tfjob_provider.kube.sync_client import SyncTFJobClient
from tfjob_provider.links import XCOM_BACKEND, XCOM_NAME, XCOM_NAMESPACE, XCOM_UID
from tfjob_provider.ui import reads
from tfjob_provider.ui.record import XCOM_CONN_ID, XCOM_RECORD
from tfjob_provider.ui.view_model import JobData, empty_view, from_record, view, with_live

if TYPE_CHECKING:
    from tfjob_provider.kube.requests import ApiRequest

#: Log lines and bytes one log request returns at most.
MAX_LOG_LINES: Final = 2000
MAX_LOG_BYTES: Final = 256 * 1024
#: Events and replica rows one view holds at most (the rest are counted as "more").
MAX_EVENTS: Final = 100
MAX_REPLICA_ROWS: Final = 500
#: Seconds a live read may take in all before the view falls back to the record.
LIVE_DEADLINE_SECONDS: Final = 4.0
#: Seconds to open a connection to the API server for the tab.
CONNECT_TIMEOUT_SECONDS: Final = 2.0
#: Seconds a connection's client is reused (credentials and settings are read again after).
CLIENT_REUSE_SECONDS: Final = 300.0

#: Operators (``TaskInstance.operator``/``custom_operator_name``) that run or watch a TFJob.
TFJOB_OPERATORS: Final = frozenset({"TFJobOperator", "TFJobSensor", "_TFJobDecoratedOperator", "@task.tfjob"})
#: Task-instance states in which the page keeps refreshing.
ACTIVE_STATES: Final = frozenset(
    {"scheduled", "queued", "running", "deferred", "up_for_reschedule", "up_for_retry", "restarting"}
)
_XCOM_LINK: Final = "_link_TFJobLink"
_KEYS: Final = (XCOM_NAME, XCOM_NAMESPACE, XCOM_UID, XCOM_CONN_ID, XCOM_RECORD, _XCOM_LINK, XCOM_BACKEND)

NO_TFJOB: Final = "This task does not run or watch a TFJob, so there is nothing to show here."


class UnknownPod(LookupError):
    """The pod asked for is not one of this task instance's TFJob's pods."""


@dataclass(frozen=True)
class LogTail:
    """The last lines of one replica's log, and where they came from."""

    text: str
    source: Literal["live", "record"]
    truncated: bool = False


@dataclass(frozen=True)
class _Task:
    state: str | None
    try_number: int
    is_tfjob: bool
    xcoms: dict[str, Any]


def _find_task(*, dag_id: str, run_id: str, task_id: str, map_index: int) -> _Task | None:
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        ti = (
            session.query(TaskInstance)
            .filter(
                TaskInstance.dag_id == dag_id,
                TaskInstance.run_id == run_id,
                TaskInstance.task_id == task_id,
                TaskInstance.map_index == map_index,
            )
            .one_or_none()
        )
        if ti is None:
            return None
        rows = (
            session.query(XComModel)
            .filter(
                XComModel.dag_id == dag_id,
                XComModel.run_id == run_id,
                XComModel.task_id == task_id,
                XComModel.map_index == map_index,
                XComModel.key.in_(_KEYS),
            )
            .all()
        )
        xcoms = {row.key: XComModel.deserialize_value(row) for row in rows}
        state = str(ti.state.value if hasattr(ti.state, "value") else ti.state) if ti.state else None
        names = {ti.operator, ti.custom_operator_name}
        return _Task(
            state=state,
            try_number=int(ti.try_number or 0),
            is_tfjob=bool(names & TFJOB_OPERATORS) or XCOM_NAME in xcoms,
            xcoms=xcoms,
        )


# --- the live read ----------------------------------------------------------------------------

_clients: dict[str, tuple[float, SyncTFJobClient]] = {}
_clients_lock = threading.Lock()
_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tfjob-tab")


class _QuickClient(SyncTFJobClient):
    """A client that gives up on a silent API server within seconds (the tab never waits long)."""

    def _timeout(self, request: ApiRequest) -> tuple[float, float | None]:
        return (CONNECT_TIMEOUT_SECONDS, request.read_timeout or reads.READ_TIMEOUT_SECONDS)


def _connection_key(conn_id: str) -> str:
    """What identifies the connection's current settings (a changed connection gets a new client)."""
    from airflow.providers.common.compat.sdk import AirflowNotFoundException

    try:
        return f"{conn_id}\n{TFJobHook.get_connection(conn_id).get_uri()}"
    except AirflowNotFoundException:
        return f"{conn_id}\n"


def _client(conn_id: str) -> SyncTFJobClient:
    """A client of the connection with short timeouts and no retries, reused for a while."""
    key = _connection_key(conn_id)
    with _clients_lock:
        cached = _clients.get(key)
        if cached is not None and time.monotonic() - cached[0] < CLIENT_REUSE_SECONDS:
            return cached[1]
        base = TFJobHook(kubernetes_conn_id=conn_id, retry_policy=RetryPolicy(budget=0.0)).client
        client = _QuickClient(base.api_client, session=base.session)
        _clients[key] = (time.monotonic(), client)
        return client


def _within_deadline(conn_id: str, work: Any) -> Any:
    """``work(client)`` in a pool thread, given up after :data:`LIVE_DEADLINE_SECONDS`."""
    future = _pool.submit(lambda: work(_client(conn_id)))
    try:
        return future.result(timeout=LIVE_DEADLINE_SECONDS)
    except FutureTimeout:
        raise TimeoutError(f"no answer within {LIVE_DEADLINE_SECONDS:g} s") from None


def _problem(error: BaseException) -> str:
    if isinstance(error, KubeApiError):
        return error.message
    return f"{type(error).__name__}: {error}"


def read_live(conn_id: str, name: str, namespace: str, backend: str = "tfjob") -> reads.LiveState:
    """One live read of the TFJob (raises on any failure, :class:`TimeoutError` past the deadline)."""
    state: reads.LiveState = _within_deadline(
        conn_id, lambda client: client.run(reads.read_live(client.session, name, namespace, backend=backend))
    )
    return state


# --- build_view -------------------------------------------------------------------------------


def _recorded(task: _Task) -> dict[str, Any] | None:
    record = task.xcoms.get(XCOM_RECORD)
    return record if isinstance(record, dict) else None


def build_view(
    *, dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int | None = None
) -> dict[str, Any]:
    """The VIEW JSON of a task instance (docs/concepts/ui-data.md)."""
    task = _find_task(dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=map_index)
    if task is None:
        return empty_view("no_tfjob", "There is no such task instance.")
    running = task.state in ACTIVE_STATES
    name, namespace = task.xcoms.get(XCOM_NAME), task.xcoms.get(XCOM_NAMESPACE)
    if not task.is_tfjob:
        return empty_view("no_tfjob", NO_TFJOB)
    earlier_try = ""
    if try_number is not None and try_number != task.try_number:
        earlier_try = (
            f"Try {try_number} is not kept: Airflow clears a task instance's XComs when it runs again, "
            f"so this shows try {task.try_number}. "
        )
    if not isinstance(name, str) or not isinstance(namespace, str):
        said = "has not submitted its TFJob yet." if running else "ended before it submitted a TFJob."
        return empty_view("not_submitted", f"{earlier_try}This try of the task {said}", running=running)
    record = _recorded(task)
    uid = task.xcoms.get(XCOM_UID) if isinstance(task.xcoms.get(XCOM_UID), str) else None
    link = task.xcoms.get(_XCOM_LINK) if isinstance(task.xcoms.get(_XCOM_LINK), str) else None
    base = (
        from_record(record, dashboard_url=link or None)
        if record is not None
        else JobData(
            namespace=namespace, name=name, uid=uid, try_number=task.try_number, dashboard_url=link or None
        )
    )
    conn_id = task.xcoms.get(XCOM_CONN_ID) if isinstance(task.xcoms.get(XCOM_CONN_ID), str) else None
    where = f"TFJob {namespace}/{name}"
    kept = (
        "showing what the task recorded when its wait ended."
        if record
        else "the task has recorded nothing yet (it records when its wait ends)."
    )
    try:
        if conn_id is None:
            raise LookupError(
                "the task did not record its connection id (a task of an earlier provider version)"
            )
        backend = task.xcoms.get(XCOM_BACKEND)
        live = read_live(conn_id, name, namespace, backend if isinstance(backend, str) else "tfjob")
    except (Exception, TimeoutError) as error:  # any failure of the cluster falls back to the record
        message = f"The cluster could not be read through connection {conn_id!r} ({_problem(error)}); {kept}"
        return _shown(base, "record", earlier_try + message, running)
    live_uid = ((live.tfjob or {}).get("metadata") or {}).get("uid")
    if live.tfjob is None:
        return _shown(base, "record", f"{earlier_try}{where} no longer exists; {kept}", running)
    if uid is not None and live_uid != uid:
        message = f"{where} is another TFJob now (uid {live_uid}); {kept}"
        return _shown(base, "record", earlier_try + message, running)
    data = with_live(base, tfjob=live.tfjob, pods=live.pods, events=live.events, max_events=MAX_EVENTS)
    note = " Only the first events of a busy namespace were read." if live.events_cut else ""
    return _shown(data, "live", (earlier_try + note).strip() or None, running)


def _shown(data: JobData, status: str, message: str | None, running: bool) -> dict[str, Any]:
    return view(
        data,
        status=status,
        message=message,
        running=running,
        max_rows=MAX_REPLICA_ROWS,
        max_events=MAX_EVENTS,
    )


# --- read_log ---------------------------------------------------------------------------------


def read_log(*, dag_id: str, run_id: str, task_id: str, map_index: int, pod: str, lines: int) -> LogTail:
    """The last ``lines`` (at most :data:`MAX_LOG_LINES`) of a pod's log; UnknownPod for a pod that
    is not this task instance's TFJob's; the record's kept lines when the pod cannot be read."""
    lines = max(1, min(int(lines), MAX_LOG_LINES))
    task = _find_task(dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=map_index)
    if task is None:
        raise UnknownPod(f"there is no such task instance, so no pod {pod!r} of it")
    name, namespace = task.xcoms.get(XCOM_NAME), task.xcoms.get(XCOM_NAMESPACE)
    conn_id = task.xcoms.get(XCOM_CONN_ID)
    record = _recorded(task) or {}
    raw_kept = record.get("logs")
    kept: dict[str, Any] = raw_kept if isinstance(raw_kept, dict) else {}
    recorded_pods = {row[2] for row in record.get("pods") or [] if isinstance(row, list) and len(row) > 2}
    if not isinstance(name, str) or not isinstance(namespace, str):
        raise UnknownPod(f"pod {pod!r}: this task instance has no TFJob")

    def fallback(why: str) -> LogTail:
        if pod in kept:
            return LogTail(text="\n".join(kept[pod][-lines:]) + "\n", source="record", truncated=True)
        if pod in recorded_pods:
            return LogTail(
                text=f"(the log of {pod} cannot be read: {why}; none was kept)\n",
                source="record",
                truncated=False,
            )
        raise UnknownPod(f"pod {pod!r} is not a pod of TFJob {namespace}/{name}")

    if not isinstance(conn_id, str):
        return fallback("the task did not record its connection id")

    def work(client: SyncTFJobClient) -> bytes | None:
        pods = client.run(reads.list_pods(client.session, name, namespace))
        if pod not in {str((item.get("metadata") or {}).get("name")) for item in pods}:
            return None
        return client.run(
            reads.read_log_tail(client.session, pod, namespace, lines=lines, limit_bytes=MAX_LOG_BYTES)
        )

    try:
        body = _within_deadline(conn_id, work)
    except NotFoundError:
        return fallback("the pod no longer exists")
    except (Exception, TimeoutError) as error:
        return fallback(_problem(error))
    if body is None:
        return fallback("the pod no longer exists")
    text = body.decode("utf-8", "replace")
    cut = len(body) >= MAX_LOG_BYTES or len(text.splitlines()) >= lines
    return LogTail(text=text, source="live", truncated=cut)


__all__ = [
    "LIVE_DEADLINE_SECONDS",
    "MAX_EVENTS",
    "MAX_LOG_BYTES",
    "MAX_LOG_LINES",
    "MAX_REPLICA_ROWS",
    "NO_TFJOB",
    "LogTail",
    "UnknownPod",
    "build_view",
    "read_live",
    "read_log",
]

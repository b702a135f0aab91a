"""``Sandbox``: a ``SandboxRuntime`` on a background thread (``with Sandbox() as sb:``), thread-safe."""

from __future__ import annotations

import asyncio
import inspect
import signal
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from tfjob_sandbox.apiserver.faults import ApiFaults
from tfjob_sandbox.apiserver.server import ApiServer
from tfjob_sandbox.kubelet.kubelet import Kubelet
from tfjob_sandbox.launch.assembly import SandboxOptions, SandboxRuntime
from tfjob_sandbox.launch.kubeconfig import connection_json
from tfjob_sandbox.store.store import Store
from tfjob_sandbox.training_operator.controller import TrainingOperator

T = TypeVar("T")

START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0


class Sandbox:
    """A local Kubernetes API server with the training-operator and kubelet emulations.

    Keyword arguments are those of :class:`~tfjob_sandbox.launch.assembly.SandboxOptions`
    (``host``, ``port``, ``token``, ``state_dir``, ``http``, ``rbac_file``, ``history_limit``,
    ``bookmark_interval``, ``backoff_initial``, ``backoff_cap``, ``pod_start_delay``, ``loopback_tf_config``,
    ``workdir``, ``allow_remote``, ``kubeconfig_path``, ``serve_tfjobs``, ``tfjob_crd``, ``fault_seed``,
    ``jobsets``).
    """

    def __init__(self, **options: Any) -> None:
        for key in ("state_dir", "rbac_file", "workdir", "kubeconfig_path"):
            if options.get(key) is not None:
                options[key] = Path(options[key])
        self.options = SandboxOptions(**options)
        self.runtime = SandboxRuntime(self.options)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Sandbox:
        """Start the loop thread and the sandbox on it; returns once the API server accepts requests."""
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="tfjob-sandbox", daemon=True)
        self._thread.start()
        ready.wait()
        try:
            asyncio.run_coroutine_threadsafe(self.runtime.start(), loop).result(START_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop serving and kill every process the sandbox started; safe to call twice."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.runtime.stop(), loop).result(STOP_TIMEOUT)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(STOP_TIMEOUT)
            loop.close()
            self._loop = self._thread = None
            self.runtime.cleanup()

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- what clients need ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.runtime.url

    @property
    def token(self) -> str:
        return self.runtime.token

    @property
    def kubeconfig_path(self) -> Path:
        return self.runtime.kubeconfig_path

    @property
    def ca_pem(self) -> bytes | None:
        """The CA certificate clients must trust (``None`` with ``http=True``)."""
        return self.runtime.ca_pem

    @property
    def airflow_conn_uri(self) -> str:
        """The value for ``AIRFLOW_CONN_KUBERNETES_DEFAULT`` (Airflow's JSON connection form)."""
        return connection_json(self.kubeconfig_path)

    @property
    def store(self) -> Store:
        return self.runtime.store

    @property
    def kubelet(self) -> Kubelet:
        return self.runtime.kubelet

    @property
    def operator(self) -> TrainingOperator:
        return self.runtime.operator

    @property
    def server(self) -> ApiServer:
        return self.runtime.server

    @property
    def faults(self) -> ApiFaults:
        return self.runtime.faults

    # --- running things on the loop -------------------------------------------------------------

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` on the sandbox loop thread and return its result (awaited if async)."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the sandbox is not running")

        async def invoke() -> Any:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result

        if threading.current_thread() is self._thread:
            raise RuntimeError(
                "Sandbox.call() from the loop thread would deadlock; call the function directly"
            )
        return asyncio.run_coroutine_threadsafe(invoke(), loop).result(STOP_TIMEOUT)

    # --- workload faults --------------------------------------------------------------------------

    def evict(self, namespace: str, pod: str, *, message: str | None = None) -> None:
        extra = {"message": message} if message is not None else {}
        self.call(self.kubelet.evict, namespace, pod, **extra)

    def lose_node(self) -> None:
        self.call(self.kubelet.lose_node)

    def restore_node(self) -> None:
        self.call(self.kubelet.restore_node)

    def set_image_unpullable(
        self, image: str, unpullable: bool = True, *, cause: str = "not-found", failures: int | None = None
    ) -> None:
        """Make pulls of ``image`` fail for ``cause`` (see :meth:`Kubelet.set_image_unpullable`)."""
        self.call(self.kubelet.set_image_unpullable, image, unpullable, cause=cause, failures=failures)

    def set_unschedulable(self, unschedulable: bool = True) -> None:
        self.call(self.kubelet.set_unschedulable, unschedulable)

    def oom_kill(self, namespace: str, pod: str, container: str = "tensorflow") -> None:
        self.call(self.kubelet.oom_kill, namespace, pod, container)

    def kill_process(
        self, namespace: str, pod: str, container: str = "tensorflow", sig: int = signal.SIGKILL
    ) -> None:
        """Signal a container's processes from outside (``kill -9``): exit 137, reason ``Error``."""
        self.call(self.kubelet.kill_process, namespace, pod, container, sig)

    def stop_operator(self) -> None:
        self.call(self.operator.stop)

    def start_operator(self) -> None:
        if not self.call(lambda: self.operator.running):
            self.call(self.operator.start)

    # --- API faults -------------------------------------------------------------------------------

    def api_fault(
        self,
        action: str,
        *,
        status: int = 500,
        count: int | None = None,
        rate: float | None = None,
        verbs: Iterable[str] | None = None,
        resources: Iterable[str] | None = None,
        retry_after: int = 1,
        latency: float = 0.0,
        duration: float | None = None,
    ) -> int:
        """Activate an API fault (``action``: ``status``, ``reset`` or ``latency``); returns its id.
        ``duration``: seconds after which it ends by itself."""
        return self.faults.add(
            action,
            status=status,
            count=count,
            rate=rate,
            verbs=verbs,
            resources=resources,
            retry_after=retry_after,
            latency=latency,
            duration=duration,
        ).id

    def api_outage(
        self, seconds: float, *, kind: str = "503", retry_after: int = 1, latency: float = 5.0, **filters: Any
    ) -> int:
        """Make the API unavailable to clients for ``seconds`` from now, then recover by itself.

        ``kind``: ``"503"`` or ``"429"`` (every request answered so, with ``Retry-After``),
        ``"500"``, ``"reset"`` (every connection reset) or ``"latency"`` (every request delayed by
        ``latency`` seconds).  The sandbox's own controllers keep working: a TFJob can finish
        during the outage, as one does while a real API server restarts.
        """
        if kind == "reset":
            return self.api_fault("reset", duration=seconds, **filters)
        if kind == "latency":
            return self.api_fault("latency", latency=latency, duration=seconds, **filters)
        return self.api_fault(
            "status", status=int(kind), retry_after=retry_after, duration=seconds, **filters
        )

    def fail_requests(
        self, status: int, *, count: int | None = 1, retry_after: int = 1, **filters: Any
    ) -> int:
        """The next ``count`` matching requests get ``status`` (429 carries ``Retry-After``)."""
        return self.api_fault("status", status=status, count=count, retry_after=retry_after, **filters)

    def reset_connections(self, *, count: int | None = 1, **filters: Any) -> int:
        return self.api_fault("reset", count=count, **filters)

    def add_latency(self, seconds: float, *, count: int | None = None, **filters: Any) -> int:
        return self.api_fault("latency", latency=seconds, count=count, **filters)

    def remove_api_fault(self, fault_id: int) -> bool:
        return self.faults.remove(fault_id)

    def clear_api_faults(self) -> None:
        self.faults.clear()

    def drop_watches(self, *, abort: bool = False) -> int:
        """End every open watch stream (``abort``: reset the TCP connections instead)."""
        return int(self.call(self.server.drop_watches, abort=abort))

    def expire_watch_history(self) -> None:
        """Forget watch history: resuming from any earlier resourceVersion now gets 410 Expired."""
        self.call(self.store.expire_history)

    # --- request accounting -----------------------------------------------------------------------

    def request_counts(self) -> list[dict[str, Any]]:
        """Served API requests as ``{"user", "verb", "resource", "count"}`` rows (admin calls excluded)."""
        return list(self.call(self.server.requests.snapshot))

    def request_total(
        self, *, user: str | None = None, verb: str | None = None, resource: str | None = None
    ) -> int:
        """How many served requests match every filter given."""
        return int(self.call(self.server.requests.total, user=user, verb=verb, resource=resource))

    def reset_request_counts(self) -> None:
        self.call(self.server.requests.reset)

"""``TrainingOperator``: feeds the pure reconcile pass from store events and applies what it returns."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tfjob_sandbox.api import wire
from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import PODS, SERVICES, TFJOBS, ResourceType
from tfjob_sandbox.host.loopback_ports import PortReservations
from tfjob_sandbox.store.event_recorder import record_event
from tfjob_sandbox.store.store import Store, utcnow
from tfjob_sandbox.store.work_queue import WorkQueue
from tfjob_sandbox.training_operator import reconcile as core
from tfjob_sandbox.training_operator.tfjob_spec import defaulted_spec, replica_count

log = logging.getLogger(__name__)

COMPONENT = wire.OPERATOR_NAME
#: Delay before retrying a job whose reconcile failed half-way (controller-runtime backs off too).
RETRY_AFTER_ERROR = 0.5

JobKey = tuple[str, str]


def _key(obj: dict[str, Any]) -> JobKey:
    meta = obj["metadata"]
    return (str(meta.get("namespace", "default")), str(meta["name"]))


def _controller_owner(obj: dict[str, Any]) -> JobKey | None:
    meta = obj["metadata"]
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") is True and ref.get("kind") == wire.KIND:
            return (str(meta.get("namespace", "default")), str(ref.get("name", "")))
    return None


class TrainingOperator:
    """The training operator's TFJob controller, emulated: store events in, reconcile, actions out.

    :param store: the sandbox's object store.
    :param clock: the time used for conditions, startTime/completionTime and deadlines.
    :param loopback_tf_config: write ``127.0.0.1:<port>`` endpoints into TF_CONFIG.
    :param ports: where loopback ports are reserved (shared with the kubelet, which releases a
        port when it starts the process that listens on it); default: a private set.
    """

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], datetime] = utcnow,
        loopback_tf_config: bool = False,
        ports: PortReservations | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._loopback = loopback_tf_config
        self._reservations = ports if ports is not None or not loopback_tf_config else PortReservations()
        self._jobs: dict[JobKey, dict[str, Any]] = {}
        self._pods: dict[JobKey, dict[str, dict[str, Any]]] = {}
        self._services: dict[JobKey, dict[str, dict[str, Any]]] = {}
        self._ports: dict[str, dict[str, list[int]]] = {}
        self._needs_created: set[str] = set()
        self._work: WorkQueue[JobKey] = WorkQueue(self._reconcile, on_error=self._reconcile_failed)
        self._listening = False
        self.reconciles = 0

    @property
    def running(self) -> bool:
        return self._work.running

    def start(self) -> None:
        """Start reconciling (on the loop thread); every existing job gets the create event (R16)."""
        if not self._listening:
            # The caches share the stored objects, as an informer's do: reconcile never edits its
            # inputs (it copies status and templates before changing them), so no copies per write.
            self._store.add_listener(self._on_change, copies=False)
            self._listening = True
            self._load_caches()
        self._work.start()
        for key, job in self._jobs.items():
            self._needs_created.add(str(job["metadata"].get("uid", "")))
            self._work.add(key)

    async def stop(self) -> None:
        """Stop reconciling: until :meth:`start`, TFJobs get no status changes and no pods."""
        self._work.stop()

    # -- informer caches ------------------------------------------------------------------------

    def _load_caches(self) -> None:
        for job in self._store.list(TFJOBS)["items"]:
            self._jobs[_key(job)] = job
        for rt, cache in ((PODS, self._pods), (SERVICES, self._services)):
            for obj in self._store.list(rt)["items"]:
                owner = _controller_owner(obj)
                if owner is not None:
                    cache.setdefault(owner, {})[obj["metadata"]["name"]] = obj

    def _on_change(
        self, event_type: str, rt: ResourceType, new: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt == TFJOBS:
            key = _key(new)
            if event_type == "DELETED":
                self._jobs.pop(key, None)
                self._release_ports(str(new["metadata"].get("uid", "")))
                self._work.forget(key)
                return
            self._jobs[key] = new
            if event_type == "ADDED":
                self._needs_created.add(str(new["metadata"].get("uid", "")))
            self._work.add(key)
            return
        if rt not in (PODS, SERVICES):
            return
        cache = self._pods if rt == PODS else self._services
        name = new["metadata"]["name"]
        for obj, gone in ((old, True), (new, event_type == "DELETED")):
            if obj is None:
                continue
            owner = _controller_owner(obj)
            if owner is None:
                continue
            bucket = cache.setdefault(owner, {})
            if gone:
                bucket.pop(name, None)
                if not bucket:
                    cache.pop(owner, None)
            else:
                bucket[name] = obj
            self._work.add(owner)

    # -- work queue -----------------------------------------------------------------------------

    def _reconcile_failed(self, key: JobKey) -> None:
        log.exception("TFJob %s/%s: reconcile failed", *key)
        self._work.add_after(key, RETRY_AFTER_ERROR)

    # -- one reconcile --------------------------------------------------------------------------

    def _reconcile(self, key: JobKey) -> None:
        job = self._jobs.get(key)
        if job is None:
            return
        self.reconciles += 1
        uid = str(job["metadata"].get("uid", ""))
        if core.is_managed_elsewhere(job):
            return
        add_created = uid in self._needs_created
        try:
            loopback_ports = self._loopback_ports(job) if self._loopback else None
        except RuntimeError as error:  # no free port right now: say so, try again shortly
            self._event(job, "Warning", "FailedReservePort", str(error))
            self._work.add_after(key, RETRY_AFTER_ERROR)
            return
        outcome = core.reconcile(
            job,
            list(self._pods.get(key, {}).values()),
            list(self._services.get(key, {}).values()),
            now=self._clock(),
            add_created=add_created,
            loopback_ports=loopback_ports,
        )
        self._needs_created.discard(uid)
        if not self._apply(key, job, outcome.actions):
            self._work.add_after(key, RETRY_AFTER_ERROR)
            return
        self._work.forget(key)
        if outcome.requeue_after is not None:
            self._work.add_after(key, outcome.requeue_after)

    def _apply(self, key: JobKey, job: dict[str, Any], actions: tuple[core.Action, ...]) -> bool:
        """Apply the pass's actions in order; stop at the first failure, as the operator returns early."""
        namespace, name = key
        for action in actions:
            try:
                if isinstance(action, core.RecordEvent):
                    self._event(job, action.type, action.reason, action.message)
                elif isinstance(action, core.CreatePod):
                    created = self._create(PODS, action.manifest, namespace, job, "Pod")
                    if not created:
                        return False
                elif isinstance(action, core.CreateService):
                    if not self._create(SERVICES, action.manifest, namespace, job, "Service"):
                        return False
                elif isinstance(action, core.DeletePod):
                    self._delete(PODS, action.name, namespace, job, "Pod")
                elif isinstance(action, core.DeleteService):
                    self._delete(SERVICES, action.name, namespace, job, "Service")
                elif isinstance(action, core.WriteStatus):
                    self._write_status(namespace, name, job, action.status)
                elif isinstance(action, core.DeleteJob):
                    self._store.delete(TFJOBS, name, namespace=namespace)
                    self._event(job, "Normal", core.SUCCESSFUL_DELETE_JOB, f"Deleted job: {name}")
            except ApiError as error:
                if error.code == 404:
                    continue
                log.info("TFJob %s/%s: %s failed: %s", namespace, name, type(action).__name__, error.message)
                return False
        return True

    def _create(
        self, rt: ResourceType, manifest: dict[str, Any], namespace: str, job: dict[str, Any], noun: str
    ) -> bool:
        try:
            created = self._store.create(rt, manifest, namespace=namespace)
        except ApiError as error:
            self._event(job, "Warning", f"FailedCreate{noun}", f"Error creating: {error.message}")
            return False
        self._event(
            job, "Normal", f"SuccessfulCreate{noun}", f"Created {noun.lower()}: {created['metadata']['name']}"
        )
        return True

    def _delete(self, rt: ResourceType, name: str, namespace: str, job: dict[str, Any], noun: str) -> None:
        try:
            self._store.delete(rt, name, namespace=namespace)
        except ApiError as error:
            if error.code == 404:
                return
            self._event(job, "Warning", f"FailedDelete{noun}", f"Error deleting: {error.message}")
            raise
        self._event(job, "Normal", f"SuccessfulDelete{noun}", f"Deleted {noun.lower()}: {name}")

    def _write_status(self, namespace: str, name: str, job: dict[str, Any], status: dict[str, Any]) -> None:
        uid = job["metadata"].get("uid")

        def replace(obj: dict[str, Any]) -> None:
            if obj["metadata"].get("uid") != uid:
                raise ApiError(409, "Conflict", f"TFJob {namespace}/{name} was replaced")
            obj["status"] = status

        self._store.mutate(TFJOBS, name, replace, namespace=namespace, subresource="status")

    def _event(self, job: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        if not reason:
            return
        record_event(
            self._store, involved=job, reason=reason, message=message, type=event_type, component=COMPONENT
        )

    def _loopback_ports(self, job: dict[str, Any]) -> dict[str, list[int]]:
        """One stable reserved local port per replica; grown when a replica type scales up."""
        assert self._reservations is not None
        ports = self._ports.setdefault(str(job["metadata"].get("uid", "")), {})
        for replica_type, replica in defaulted_spec(job.get("spec"))["tfReplicaSpecs"].items():
            if not isinstance(replica, dict):
                continue
            taken = ports.setdefault(replica_type.lower(), [])
            while len(taken) < replica_count(replica):
                taken.append(self._reservations.reserve())
        return ports

    def _release_ports(self, uid: str) -> None:
        """The job is gone: give back the ports of replicas that never started."""
        ports = self._ports.pop(uid, {})
        if self._reservations is not None:
            for port in (port for taken in ports.values() for port in taken):
                self._reservations.release(port)

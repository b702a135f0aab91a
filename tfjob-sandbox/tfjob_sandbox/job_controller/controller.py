"""``JobController``: feeds the pure Job sync pass from store events and applies the actions it returns."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tfjob_sandbox.api import job_wire
from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import JOBS, PODS, ResourceType
from tfjob_sandbox.job_controller import actions as act
from tfjob_sandbox.job_controller.sync import Settings, sync_job
from tfjob_sandbox.store.event_recorder import record_event
from tfjob_sandbox.store.store import Store, utcnow
from tfjob_sandbox.store.work_queue import WorkQueue

log = logging.getLogger(__name__)

COMPONENT = "job-controller"
RETRY_AFTER_ERROR = 0.5

JobKey = tuple[str, str]


def _key(obj: dict[str, Any]) -> JobKey:
    meta = obj["metadata"]
    return (str(meta.get("namespace", "default")), str(meta["name"]))


def _owner_uid(pod: dict[str, Any]) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if (
            ref.get("controller") is True
            and ref.get("kind") == job_wire.KIND
            and ref.get("apiVersion") == job_wire.API_VERSION
        ):
            return str(ref.get("uid", ""))
    return None


class JobController:
    """kube-controller-manager's Job controller (and TTL-after-finished), emulated on the store.

    :param store: the sandbox's object store.
    :param clock: the time for conditions, startTime, deadlines and back-off.
    :param settings: the pod-failure back-off (shortened in the sandbox; upstream 10 s to 10 min).
    """

    def __init__(
        self, store: Store, *, clock: Callable[[], datetime] = utcnow, settings: Settings | None = None
    ) -> None:
        self._store = store
        self._clock = clock
        self._settings = settings or Settings()
        self._jobs: dict[JobKey, dict[str, Any]] = {}
        self._pods: dict[str, dict[str, dict[str, Any]]] = {}  # owner uid -> pod name -> pod
        self._backoff: dict[str, act.BackoffRecord] = {}
        self._orphans: set[str] = set()  # owner uids whose Job is gone
        self._work: WorkQueue[JobKey] = WorkQueue(
            self._sync, on_error=self._sync_failed, before_pass=self._release_all_orphans
        )
        self._listening = False
        self.syncs = 0

    @property
    def running(self) -> bool:
        return self._work.running

    def start(self) -> None:
        """Start syncing on the running loop; every stored Job is synced once."""
        if not self._listening:
            self._store.add_listener(self._on_change, copies=False)
            self._listening = True
            for job in self._store.list(JOBS)["items"]:
                self._jobs[_key(job)] = job
            for pod in self._store.list(PODS)["items"]:
                owner = _owner_uid(pod)
                if owner is not None:
                    self._pods.setdefault(owner, {})[pod["metadata"]["name"]] = pod
        self._work.start()
        live = {str(job["metadata"].get("uid", "")) for job in self._jobs.values()}
        self._orphans.update(uid for uid in self._pods if uid not in live)
        for key in list(self._jobs):
            self._work.add(key)
        self._work.wake()

    async def stop(self) -> None:
        self._work.stop()

    # -- informer caches ------------------------------------------------------------------------

    def _on_change(
        self, event_type: str, rt: ResourceType, new: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt == JOBS:
            key = _key(new)
            if event_type == "DELETED":
                uid = str(new["metadata"].get("uid", ""))
                if self._jobs.get(key, {}).get("metadata", {}).get("uid") == uid:
                    self._jobs.pop(key, None)
                self._backoff.pop(uid, None)
                if uid in self._pods:
                    self._orphans.add(uid)
                    self._work.wake()
                return
            self._jobs[key] = new
            self._work.add(key)
            return
        if rt != PODS:
            return
        name = new["metadata"]["name"]
        for obj, gone in ((old, True), (new, event_type == "DELETED")):
            if obj is None:
                continue
            owner = _owner_uid(obj)
            if owner is None:
                continue
            bucket = self._pods.setdefault(owner, {})
            if gone:
                bucket.pop(name, None)
                if not bucket:
                    self._pods.pop(owner, None)
            else:
                bucket[name] = obj
            job_key = self._job_key_of(owner, obj)
            if job_key is not None:
                self._work.add(job_key)
            elif not gone:
                self._orphans.add(owner)
                self._work.wake()

    def _job_key_of(self, uid: str, pod: dict[str, Any]) -> JobKey | None:
        for ref in pod["metadata"].get("ownerReferences") or []:
            if str(ref.get("uid", "")) == uid:
                key = (str(pod["metadata"].get("namespace", "default")), str(ref.get("name", "")))
                job = self._jobs.get(key)
                if job is not None and str(job["metadata"].get("uid", "")) == uid:
                    return key
        return None

    # -- work queue -----------------------------------------------------------------------------

    def _sync_failed(self, key: JobKey) -> None:
        log.exception("Job %s/%s: sync failed", *key)
        self._work.add_after(key, RETRY_AFTER_ERROR)

    def _release_all_orphans(self) -> None:
        while self._orphans and self._work.running:
            self._release_orphans(self._orphans.pop())

    def _release_orphans(self, uid: str) -> None:
        """Pods whose Job is gone keep no tracking finalizer (upstream's orphan-pod cleanup)."""
        if any(str(job["metadata"].get("uid", "")) == uid for job in self._jobs.values()):
            return
        for pod in list(self._pods.get(uid, {}).values()):
            if job_wire.TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or []):
                self._remove_finalizer(
                    str(pod["metadata"].get("namespace", "")), pod["metadata"]["name"], uid=None
                )

    # -- one sync -------------------------------------------------------------------------------

    def _sync(self, key: JobKey) -> None:
        job = self._jobs.get(key)
        if job is None:
            return
        self.syncs += 1
        uid = str(job["metadata"].get("uid", ""))
        pods = list(self._pods.get(uid, {}).values())
        outcome = sync_job(
            job,
            pods,
            now=self._clock(),
            backoff=self._backoff.get(uid, act.NO_BACKOFF),
            settings=self._settings,
        )
        if outcome.backoff is not None:
            self._backoff[uid] = outcome.backoff
        self._work.forget(key)
        if not self._apply(key, job, outcome.actions):
            self._work.add_after(key, RETRY_AFTER_ERROR)
        elif outcome.requeue_after is not None:
            self._work.add_after(key, outcome.requeue_after)

    def _apply(self, key: JobKey, job: dict[str, Any], actions: tuple[act.Action, ...]) -> bool:
        """Apply the actions in order; stop at the first failure, as syncJob returns its error."""
        namespace, name = key
        for action in actions:
            try:
                if isinstance(action, act.RecordEvent):
                    self._event(job, action.type, action.reason, action.message)
                elif isinstance(action, act.CreatePod):
                    if not self._create_pod(namespace, job, action.manifest):
                        return False
                elif isinstance(action, act.DeletePod):
                    if action.uncounted:
                        self._remove_finalizer(namespace, action.name, uid=action.uid)
                    self._delete_pod(namespace, job, action.name)
                elif isinstance(action, act.RemoveFinalizer):
                    self._remove_finalizer(namespace, action.name, uid=action.uid)
                elif isinstance(action, act.WriteStatus):
                    self._write_status(namespace, name, job, action.status)
                elif isinstance(action, act.DeleteJob):
                    self._store.delete(JOBS, name, namespace=namespace, propagation="Foreground")
            except ApiError as error:
                if error.code == 404:
                    continue
                log.info("Job %s/%s: %s failed: %s", namespace, name, type(action).__name__, error.message)
                return False
        return True

    def _create_pod(self, namespace: str, job: dict[str, Any], manifest: dict[str, Any]) -> bool:
        try:
            created = self._store.create(PODS, manifest, namespace=namespace)
        except ApiError as error:
            self._event(job, "Warning", "FailedCreate", f"Error creating: {error.message}")
            return False
        self._event(job, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
        return True

    def _delete_pod(self, namespace: str, job: dict[str, Any], name: str) -> None:
        try:
            self._store.delete(PODS, name, namespace=namespace)
        except ApiError as error:
            if error.code != 404:
                self._event(job, "Warning", "FailedDelete", f"Error deleting: {error.message}")
            raise
        self._event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")

    def _remove_finalizer(self, namespace: str, name: str, *, uid: str | None) -> None:
        def strip(pod: dict[str, Any]) -> None:
            meta = pod["metadata"]
            if uid is not None and meta.get("uid") != uid:
                return
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != job_wire.TRACKING_FINALIZER]

        try:
            self._store.mutate(PODS, name, strip, namespace=namespace)
        except ApiError as error:
            if error.code != 404:
                raise

    def _write_status(self, namespace: str, name: str, job: dict[str, Any], status: dict[str, Any]) -> None:
        uid = job["metadata"].get("uid")

        def replace(obj: dict[str, Any]) -> None:
            if obj["metadata"].get("uid") != uid:
                raise ApiError(409, "Conflict", f"Job {namespace}/{name} was replaced")
            obj["status"] = status

        self._store.mutate(JOBS, name, replace, namespace=namespace, subresource="status")

    def _event(self, job: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        record_event(
            self._store, involved=job, reason=reason, message=message, type=event_type, component=COMPONENT
        )

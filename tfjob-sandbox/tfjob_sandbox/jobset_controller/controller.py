"""``JobSetController``: feeds the pure reconcile pass from store events and applies what it returns."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tfjob_sandbox.api import jobset_wire as wire
from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.api.resource_types import JOBS, JOBSETS, SERVICES, ResourceType
from tfjob_sandbox.jobset_controller import actions as act
from tfjob_sandbox.jobset_controller.children import subdomain
from tfjob_sandbox.jobset_controller.reconcile import reconcile
from tfjob_sandbox.store.event_recorder import record_event
from tfjob_sandbox.store.store import Store, utcnow
from tfjob_sandbox.store.work_queue import WorkQueue

log = logging.getLogger(__name__)

#: Delay before retrying a JobSet whose reconcile failed half-way, doubled per failure in a row up to
#: the cap (controller-runtime's rate limiter backs off exponentially too).
RETRY_AFTER_ERROR = 0.5
RETRY_CAP = 60.0

Key = tuple[str, str]


def _key(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return (str(meta.get("namespace", "default")), str(meta["name"]))


def _controller_owner(obj: dict[str, Any]) -> Key | None:
    meta = obj["metadata"]
    for ref in meta.get("ownerReferences") or []:
        if (
            ref.get("controller") is True
            and ref.get("kind") == wire.KIND
            and ref.get("apiVersion") == wire.API_VERSION
        ):
            return (str(meta.get("namespace", "default")), str(ref.get("name", "")))
    return None


class JobSetController:
    """The JobSet controller, emulated: JobSet, Job and Service events in, reconcile, actions out.

    :param store: the sandbox's object store.
    :param clock: the time written into conditions and used for ``ttlSecondsAfterFinished``.
    """

    def __init__(self, store: Store, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._store = store
        self._clock = clock
        self._jobsets: dict[Key, dict[str, Any]] = {}
        self._jobs: dict[Key, dict[str, dict[str, Any]]] = {}
        self._work: WorkQueue[Key] = WorkQueue(self._reconcile, on_error=self._reconcile_failed)
        self._failures: dict[Key, int] = {}
        self._listening = False
        self.reconciles = 0

    @property
    def running(self) -> bool:
        return self._work.running

    def start(self) -> None:
        """Start reconciling (on the loop thread); every existing JobSet is reconciled once."""
        if not self._listening:
            self._store.add_listener(self._on_change, copies=False)
            self._listening = True
            self._load_caches()
        self._work.start()
        for key in list(self._jobsets):
            self._work.add(key)

    async def stop(self) -> None:
        """Stop reconciling: until :meth:`start`, JobSets get no status changes and no Jobs."""
        self._work.stop()

    # -- informer caches ------------------------------------------------------------------------

    def _load_caches(self) -> None:
        for jobset in self._store.list_view(JOBSETS)["items"]:
            self._jobsets[_key(jobset)] = jobset
        for job in self._store.list_view(JOBS)["items"]:
            owner = _controller_owner(job)
            if owner is not None:
                self._jobs.setdefault(owner, {})[job["metadata"]["name"]] = job

    def _on_change(
        self, event_type: str, rt: ResourceType, new: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt == JOBSETS:
            key = _key(new)
            if event_type == "DELETED":
                self._jobsets.pop(key, None)
                self._failures.pop(key, None)
                self._work.forget(key)
                return
            self._jobsets[key] = new
            self._work.add(key)
            return
        if rt == SERVICES:
            owner = _controller_owner(new)
            if owner is not None:
                self._work.add(owner)
            return
        if rt != JOBS:
            return
        name = new["metadata"]["name"]
        for obj, gone in ((old, True), (new, event_type == "DELETED")):
            if obj is None:
                continue
            owner = _controller_owner(obj)
            if owner is None:
                continue
            bucket = self._jobs.setdefault(owner, {})
            if gone:
                bucket.pop(name, None)
                if not bucket:
                    self._jobs.pop(owner, None)
            else:
                bucket[name] = obj
            self._work.add(owner)

    # -- work queue -----------------------------------------------------------------------------

    def _reconcile_failed(self, key: Key) -> None:
        log.exception("JobSet %s/%s: reconcile failed", *key)
        self._retry(key)

    def _retry(self, key: Key) -> None:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self._work.add_after(key, min(RETRY_AFTER_ERROR * 2**failures, RETRY_CAP))

    # -- one reconcile --------------------------------------------------------------------------

    def _reconcile(self, key: Key) -> None:
        jobset = self._jobsets.get(key)
        if jobset is None:
            return
        self.reconciles += 1
        namespace = key[0]
        service = self._store.peek(SERVICES, subdomain(jobset), namespace=namespace)
        outcome = reconcile(
            jobset,
            list(self._jobs.get(key, {}).values()),
            service_exists=service is not None,
            now=self._clock(),
        )
        if not self._apply(key, jobset, outcome.actions):
            self._retry(key)
            return
        self._failures.pop(key, None)
        self._work.forget(key)
        if outcome.requeue_after is not None:
            self._work.add_after(key, outcome.requeue_after)

    def _apply(self, key: Key, jobset: dict[str, Any], actions: tuple[act.Action, ...]) -> bool:
        """Apply the pass's actions in order; stop at the first failure, as upstream returns early."""
        namespace, name = key
        ok = True
        for action in actions:
            try:
                if isinstance(action, act.CreateJob):
                    ok = self._create_job(jobset, action.manifest, namespace) and ok
                    continue
                if not ok:
                    return False
                if isinstance(action, act.DeleteJob):
                    self._store.delete(JOBS, action.name, namespace=namespace, propagation="Foreground")
                elif isinstance(action, act.SuspendJob):
                    self._store.mutate(JOBS, action.name, _set_suspend(True), namespace=namespace)
                elif isinstance(action, act.ResumeJob):
                    self._resume_job(action, namespace)
                elif isinstance(action, act.CreateService):
                    self._create_service(jobset, action.manifest, namespace)
                elif isinstance(action, act.WriteStatus):
                    self._write_status(namespace, name, jobset, action.status)
                    for event_type, reason, message in action.events:
                        self._event(jobset, event_type, reason, message)
                elif isinstance(action, act.DeleteJobSet):
                    self._store.delete(JOBSETS, name, namespace=namespace, propagation="Foreground")
            except ApiError as error:
                if error.code == 404:
                    continue
                log.info("JobSet %s/%s: %s failed: %s", namespace, name, type(action).__name__, error.message)
                return False
        return ok

    def _create_job(self, jobset: dict[str, Any], manifest: dict[str, Any], namespace: str) -> bool:
        """Create one Job; a failure is reported and fails the pass after the other creations."""
        try:
            self._store.create(JOBS, manifest, namespace=namespace)
        except ApiError as error:
            if error.code == 409:
                return True  # created by an earlier pass whose event is still on its way
            name = manifest["metadata"]["name"]
            message = f'job "{name}" creation failed with error: {error.message}'
            self._event(jobset, "Warning", wire.JOB_CREATION_FAILED, message)
            return False
        return True

    def _create_service(self, jobset: dict[str, Any], manifest: dict[str, Any], namespace: str) -> None:
        try:
            self._store.create(SERVICES, manifest, namespace=namespace)
        except ApiError as error:
            if error.code == 409:
                return
            self._event(jobset, "Warning", wire.HEADLESS_SERVICE_CREATION_FAILED, error.message)
            raise

    def _resume_job(self, action: act.ResumeJob, namespace: str) -> None:
        def clear_start(job: dict[str, Any]) -> None:
            (job.get("status") or {}).pop("startTime", None)

        job = self._store.peek(JOBS, action.name, namespace=namespace)
        if job is not None and (job.get("status") or {}).get("startTime"):
            self._store.mutate(JOBS, action.name, clear_start, namespace=namespace, subresource="status")

        def resume(job: dict[str, Any]) -> None:
            job.setdefault("spec", {})["template"] = action.pod_template
            job["spec"]["suspend"] = False

        self._store.mutate(JOBS, action.name, resume, namespace=namespace)

    def _write_status(
        self, namespace: str, name: str, jobset: dict[str, Any], status: dict[str, Any]
    ) -> None:
        uid = jobset["metadata"].get("uid")

        def replace(obj: dict[str, Any]) -> None:
            if obj["metadata"].get("uid") != uid:
                raise ApiError(409, "Conflict", f"JobSet {namespace}/{name} was replaced")
            obj["status"] = status

        self._store.mutate(JOBSETS, name, replace, namespace=namespace, subresource="status")

    def _event(self, jobset: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        record_event(
            self._store,
            involved=jobset,
            reason=reason,
            message=message,
            type=event_type,
            component=wire.EVENT_COMPONENT,
        )


def _set_suspend(value: bool) -> Callable[[dict[str, Any]], None]:
    def edit(job: dict[str, Any]) -> None:
        job.setdefault("spec", {})["suspend"] = value

    return edit

"""An independent witness of the cluster: every TFJob, JobSet and pod state change, as the API server
sent it.

Why: the demo's summary and the full-stack test's assertions must not take the provider's word
for what happened.  The operator deletes a succeeded TFJob (and its pods) when its task ends, and a
pod the training operator recreates leaves no trace in the final state — so the observer watches
TFJobs and pods from the start with the official ``kubernetes`` client (not the provider's code),
keeps every pod instance it saw (by UID) and every TFJob (by UID, with whether and when it was
deleted), and answers: which TFJobs did this task create, were any deleted early, and what did each
replica do (phase, exit codes, restarts).  JobSets (``backend="jobset"``) are recorded the same way:
their pods belong to Jobs, so the observer also watches Jobs to know which JobSet owns which pod.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfjob_provider.constants import (
    DEFAULT_CONTAINER_NAME,
    LABEL_JOB_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)

_CANONICAL = {name.lower(): name for name in ("Chief", "Master", "Worker", "PS", "Evaluator")}
#: The labels the JobSet and Job controllers put on a JobSet's pods.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
#: Conditions that end a job: a TFJob's, then a JobSet's.
FINAL_CONDITIONS = ("Succeeded", "Failed", "Completed")
#: Replica types in the order a person reads a TFJob (the deciding one first).
_ORDER = {name: position for position, name in enumerate(("Chief", "Master", "Worker", "PS", "Evaluator"))}


@dataclass
class PodInstance:
    """One pod object (one UID) of a replica; a recreated replica has several."""

    name: str
    uid: str
    job_uid: str | None
    replica_type: str
    replica_index: int
    created: str
    phase: str = ""
    exit_code: int | None = None
    reason: str | None = None
    restart_count: int = 0
    deleted: bool = False
    #: When its deletion was first seen (``deletionTimestamp`` or a DELETED event), and its phase then.
    deletion_seen_at: float | None = None
    phase_at_deletion: str = ""


@dataclass
class TFJobRecord:
    """One TFJob or JobSet object (one UID) as seen over its life."""

    name: str
    uid: str
    created: str
    namespace: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    deleted: bool = False
    deleted_at: float | None = None
    first_seen: float = 0.0
    #: When its deletion was first seen (``deletionTimestamp`` or DELETED).
    deletion_seen_at: float | None = None
    #: When a Succeeded or Failed condition (a JobSet's Completed or Failed) was first seen.
    finished_at: float | None = None
    kind: str = "TFJob"

    @property
    def final_condition(self) -> str:
        """``Succeeded``/``Failed``/… — the last condition with status True, or ``""``."""
        true = [c for c in self.conditions if str(c.get("status")) == "True"]
        return str(true[-1].get("type", "")) if true else ""


@dataclass(frozen=True)
class ReplicaRow:
    """One line of the replica table: what replica ``type index`` did, across its pod instances."""

    replica_type: str
    index: int
    phase: str
    exit_codes: tuple[int | None, ...]
    restarts: int
    instances: int
    note: str = ""

    @property
    def exit_text(self) -> str:
        shown = [("-" if code is None else str(code)) for code in self.exit_codes]
        return " → ".join(shown) if shown else "-"


def _tensorflow_state(pod: Mapping[str, Any]) -> tuple[int | None, str | None, int]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    for status in statuses:
        if isinstance(status, Mapping) and status.get("name") == DEFAULT_CONTAINER_NAME:
            state = status.get("state") or {}
            last = status.get("lastState") or {}
            ended = state.get("terminated") or last.get("terminated") or {}
            waiting = state.get("waiting") or {}
            code = ended.get("exitCode")
            reason = ended.get("reason") or waiting.get("reason")
            return (code if isinstance(code, int) else None), reason, int(status.get("restartCount") or 0)
    return None, None, 0


class ClusterObserver:
    """Watches TFJobs, JobSets (with their Jobs) and training pods in one namespace from a
    background thread per resource.

    :param kubeconfig: the cluster's kubeconfig (the sandbox writes one).
    :param namespace: where the TFJobs run.
    """

    def __init__(self, kubeconfig: Path, *, namespace: str = "default") -> None:
        from kubernetes import config  # type: ignore[import-untyped]

        self.namespace = namespace
        self._api_client = config.new_client_from_config(config_file=str(kubeconfig))
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.jobs: dict[str, TFJobRecord] = {}
        self.pods: dict[str, PodInstance] = {}
        #: Job UID → the UID of the JobSet that owns it.
        self.job_owners: dict[str, str] = {}
        self.errors: list[str] = []

    # --- watching ---------------------------------------------------------------------------------

    def start(self) -> ClusterObserver:
        from kubernetes import client

        core = client.CoreV1Api(self._api_client)
        custom = client.CustomObjectsApi(self._api_client)
        batch = client.BatchV1Api(self._api_client)

        def list_pods(**kwargs: Any) -> Any:
            return core.list_namespaced_pod(self.namespace, **kwargs)

        def list_tfjobs(**kwargs: Any) -> Any:
            return custom.list_namespaced_custom_object(
                "kubeflow.org", "v1", self.namespace, "tfjobs", **kwargs
            )

        def list_jobsets(**kwargs: Any) -> Any:
            return custom.list_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", self.namespace, "jobsets", **kwargs
            )

        def list_jobs(**kwargs: Any) -> Any:
            return batch.list_namespaced_job(self.namespace, **kwargs)

        watched: list[tuple[str, Callable[..., Any], Callable[[str, Mapping[str, Any]], None]]] = [
            ("pods", list_pods, self._record_pod),
            ("tfjobs", list_tfjobs, self._record_job),
        ]
        if self._serves_jobsets(custom):
            watched += [
                ("jobsets", list_jobsets, self._record_jobset),
                ("jobs", list_jobs, self._record_owner),
            ]
        ready = []
        for name, lister, record in watched:
            event = threading.Event()
            ready.append((event, name))
            thread = threading.Thread(
                target=self._watch, args=(lister, record, event), name=f"observe-{name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        for event, what in ready:
            if not event.wait(timeout=30):
                self.stop()
                raise RuntimeError(f"the cluster observer could not list {what} within 30 s")
        return self

    def _serves_jobsets(self, custom: Any) -> bool:
        """Whether the cluster serves JobSets (a 404 on the list: no JobSet CRD installed)."""
        from kubernetes.client.exceptions import ApiException

        try:
            custom.list_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", self.namespace, "jobsets", limit=1
            )
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    def _watch(
        self,
        lister: Callable[..., Any],
        record: Callable[[str, Mapping[str, Any]], None],
        ready: threading.Event,
    ) -> None:
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException  # type: ignore[import-untyped]

        resource_version: str | None = None
        while not self._stopping.is_set():
            try:
                if resource_version is None:
                    body = json.loads(lister(_preload_content=False).data)
                    for item in body.get("items") or []:
                        record("ADDED", item)
                    resource_version = body["metadata"]["resourceVersion"]
                    ready.set()
                stream = watch.Watch().stream(
                    lister, resource_version=resource_version, timeout_seconds=2, deserialize=False
                )
                for event in stream:
                    kind, item = event.get("type"), event.get("object") or {}
                    if kind == "ERROR":
                        resource_version = None  # expired history: list again
                        break
                    version = (item.get("metadata") or {}).get("resourceVersion")
                    if version:
                        resource_version = version
                    if kind in ("ADDED", "MODIFIED", "DELETED"):
                        record(kind, item)
            except ApiException as error:
                if error.status == 410:
                    resource_version = None
                elif not self._stopping.is_set():
                    self.errors.append(f"{error.status} {error.reason}")
                    time.sleep(0.5)
            except Exception as error:  # keep observing through connection hiccups
                if not self._stopping.is_set():
                    self.errors.append(f"{type(error).__name__}: {error}")
                    time.sleep(0.5)

    def _record_jobset(self, kind: str, jobset: Mapping[str, Any]) -> None:
        self._record_job(kind, jobset, job_kind="JobSet")

    def _record_owner(self, _kind: str, job: Mapping[str, Any]) -> None:
        """A JobSet's Job: remember which JobSet owns it (its pods name only the Job)."""
        metadata = job.get("metadata") or {}
        owners = [o for o in metadata.get("ownerReferences") or [] if o.get("controller")]
        if metadata.get("uid") and owners and owners[0].get("kind") == "JobSet":
            with self._lock:
                self.job_owners[str(metadata["uid"])] = str(owners[0].get("uid"))

    def _record_job(self, kind: str, job: Mapping[str, Any], *, job_kind: str = "TFJob") -> None:
        metadata = job.get("metadata") or {}
        uid = str(metadata.get("uid") or "")
        if not uid:
            return
        with self._lock:
            record = self.jobs.get(uid)
            if record is None:
                record = TFJobRecord(
                    name=str(metadata.get("name")),
                    uid=uid,
                    created=str(metadata.get("creationTimestamp") or ""),
                    namespace=str(metadata.get("namespace") or ""),
                    first_seen=time.monotonic(),
                    kind=job_kind,
                )
                self.jobs[uid] = record
            record.labels = dict(metadata.get("labels") or {})
            record.annotations = dict(metadata.get("annotations") or {})
            conditions = (job.get("status") or {}).get("conditions")
            if isinstance(conditions, list):
                record.conditions = [c for c in conditions if isinstance(c, dict)]
            now = time.monotonic()
            if record.finished_at is None and record.final_condition in FINAL_CONDITIONS:
                record.finished_at = now
            if record.deletion_seen_at is None and (kind == "DELETED" or metadata.get("deletionTimestamp")):
                record.deletion_seen_at = now
            if kind == "DELETED" and not record.deleted:
                record.deleted = True
                record.deleted_at = now

    def _record_pod(self, kind: str, pod: Mapping[str, Any]) -> None:
        metadata = pod.get("metadata") or {}
        labels = metadata.get("labels") or {}
        uid = str(metadata.get("uid") or "")
        on_jobset = JOBSET_NAME_LABEL in labels
        if not uid or (LABEL_JOB_NAME not in labels and not on_jobset):
            return
        owners = [o for o in metadata.get("ownerReferences") or [] if o.get("controller")]
        type_label, index_label = (
            (REPLICATED_JOB_LABEL, COMPLETION_INDEX_LABEL)
            if on_jobset
            else (LABEL_REPLICA_TYPE, LABEL_REPLICA_INDEX)
        )
        try:
            index = int(str(labels.get(index_label)))
        except ValueError:
            index = -1
        with self._lock:
            instance = self.pods.get(uid)
            if instance is None:
                raw_type = str(labels.get(type_label) or "?")
                instance = PodInstance(
                    name=str(metadata.get("name")),
                    uid=uid,
                    job_uid=str(owners[0].get("uid")) if owners else None,
                    replica_type=_CANONICAL.get(raw_type.lower(), raw_type),
                    replica_index=index,
                    created=str(metadata.get("creationTimestamp") or ""),
                )
                self.pods[uid] = instance
            instance.phase = str((pod.get("status") or {}).get("phase") or instance.phase)
            code, reason, restarts = _tensorflow_state(pod)
            if code is not None:
                instance.exit_code = code
            instance.reason = reason or instance.reason
            instance.restart_count = max(instance.restart_count, restarts)
            if instance.deletion_seen_at is None and (kind == "DELETED" or metadata.get("deletionTimestamp")):
                instance.deletion_seen_at = time.monotonic()
                instance.phase_at_deletion = instance.phase
            if kind == "DELETED":
                instance.deleted = True

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=10)
        self._api_client.close()

    def __enter__(self) -> ClusterObserver:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # --- questions --------------------------------------------------------------------------------

    def jobs_named(self, name: str) -> list[TFJobRecord]:
        """Every TFJob object that carried ``name``, oldest first."""
        with self._lock:
            found = [record for record in self.jobs.values() if record.name == name]
        return sorted(found, key=lambda record: (record.created, record.first_seen))

    def job(self, uid: str) -> TFJobRecord | None:
        with self._lock:
            return self.jobs.get(uid)

    def replica_rows(self, job_uid: str) -> list[ReplicaRow]:
        """The replica table of one TFJob: one row per replica, its pod instances folded together."""
        with self._lock:
            owners = self.job_owners
            instances = [
                pod for pod in self.pods.values() if job_uid in (pod.job_uid, owners.get(pod.job_uid or ""))
            ]
            job = self.jobs.get(job_uid)
        by_replica: dict[tuple[str, int], list[PodInstance]] = {}
        for pod in sorted(instances, key=lambda p: p.created):
            by_replica.setdefault((pod.replica_type, pod.replica_index), []).append(pod)
        rows = []
        for (replica_type, index), pods in by_replica.items():
            latest = pods[-1]
            notes = [f"recreated {len(pods) - 1}x"] if len(pods) > 1 else []
            stopped = _stop_note(latest, job)
            if stopped:
                notes.append(stopped)
            rows.append(
                ReplicaRow(
                    replica_type=replica_type,
                    index=index,
                    phase=latest.phase,
                    exit_codes=tuple(pod.exit_code for pod in pods),
                    restarts=len(pods) - 1 + sum(pod.restart_count for pod in pods),
                    instances=len(pods),
                    note="; ".join(notes),
                )
            )
        return sorted(rows, key=lambda row: (_ORDER.get(row.replica_type, 99), row.index))


def _stop_note(pod: PodInstance, job: TFJobRecord | None) -> str:
    """Why a pod that was still running got stopped (empty when it ended on its own)."""
    if pod.deletion_seen_at is None or pod.phase_at_deletion not in ("Running", "Pending", ""):
        return ""
    if job is not None and job.finished_at is not None and job.finished_at <= pod.deletion_seen_at:
        return "stopped after the job ended"
    if job is not None and job.deletion_seen_at is not None and job.deletion_seen_at <= pod.deletion_seen_at:
        return f"stopped: {job.kind} deleted"
    return "deleted while running"


def iter_rows(rows: list[ReplicaRow]) -> Iterator[tuple[str, str, str, str, str, str]]:
    """Rows as text cells: type, index, phase, exit code(s), restarts, note."""
    for row in rows:
        yield row.replica_type, str(row.index), row.phase or "?", row.exit_text, str(row.restarts), row.note

""":func:`submit_or_adopt`: submit a task instance's TFJob exactly once — create, adopt, accept or
replace what is found under its name (docs/adr/0001-deterministic-names-and-adoption.md).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from tfjob_provider._airflow.carrying_out import TaskLog
from tfjob_provider._outcome.wait import uid_of, utc_now
from tfjob_provider.constants import (
    ANNOTATION_DAG_ID,
    ANNOTATION_RUN_ID,
    ANNOTATION_TASK_ID,
    ANNOTATION_TRY_NUMBER,
)
from tfjob_provider.kube.errors import AlreadyExistsError, NotFoundError
from tfjob_provider.kube.kinds import TFJOB, JobKind
from tfjob_provider.naming import matches_identity
from tfjob_provider.policy import Rules, VerdictState

if TYPE_CHECKING:
    from tfjob_provider.kube.sync_client import SyncTFJobClient

#: Seconds to wait for a deleted TFJob (and, with Foreground deletion, its pods) to disappear.
DELETE_WAIT_SECONDS = 300.0


@dataclass(frozen=True)
class TaskIdentity:
    """The task instance a TFJob belongs to (the try number is recorded but not part of identity)."""

    dag_id: str
    task_id: str
    run_id: str
    map_index: int
    try_number: int


@dataclass(frozen=True)
class Submission:
    """The TFJob this try waits on and how it came to be: ``created`` now, ``adopted`` while
    unfinished, or ``finished`` (already terminal — its outcome is this try's outcome)."""

    tfjob: Mapping[str, Any]
    action: Literal["created", "adopted", "finished"]

    @property
    def uid(self) -> str | None:
        return uid_of(self.tfjob)


def _annotations(tfjob: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = tfjob.get("metadata") if isinstance(tfjob.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    annotations = metadata.get("annotations")
    return annotations if isinstance(annotations, Mapping) else {}


def clash_message(existing: Mapping[str, Any], *, name: str, namespace: str, noun: str = "TFJob") -> str:
    annotations = _annotations(existing)
    if ANNOTATION_DAG_ID in annotations:
        owner = (
            f"it belongs to dag {annotations.get(ANNOTATION_DAG_ID)!r}, task "
            f"{annotations.get(ANNOTATION_TASK_ID)!r}, run {annotations.get(ANNOTATION_RUN_ID)!r}"
        )
    else:
        owner = "it was not submitted by tfjob-provider"
    return (
        f"A {noun} named {name!r} already exists in namespace {namespace!r}, but {owner}; "
        "it is left untouched. Fix: delete it yourself if it is stale, or give this task another "
        "job_name (leaving job_name unset gives every task instance its own name)."
    )


def delete_and_wait(
    client: SyncTFJobClient,
    *,
    name: str,
    namespace: str,
    uid: str | None,
    log: TaskLog,
    timeout: float = DELETE_WAIT_SECONDS,
    kind: JobKind = TFJOB,
) -> None:
    """Delete the TFJob (Foreground: pods first) and wait until no object with ``uid`` remains."""
    client.run(kind.delete(client.session, name, namespace=namespace))
    deadline = time.monotonic() + timeout
    pause = 0.2
    while True:
        try:
            current = client.run(kind.get(client.session, name, namespace=namespace))
        except NotFoundError:
            return
        if uid is not None and uid_of(current) != uid:
            return
        if time.monotonic() >= deadline:
            raise AirflowException(
                f"{kind.noun} {namespace}/{name} was deleted but still exists after {timeout:g} s "
                "(a finalizer or its pods may be stuck); it must be gone before a new one is submitted"
            )
        time.sleep(pause)
        pause = min(pause * 2, 2.0)


def _try_number(tfjob: Mapping[str, Any]) -> int | None:
    try:
        return int(str(_annotations(tfjob).get(ANNOTATION_TRY_NUMBER)))
    except ValueError:
        return None


def _is_being_deleted(tfjob: Mapping[str, Any]) -> bool:
    metadata = tfjob.get("metadata")
    return isinstance(metadata, Mapping) and bool(metadata.get("deletionTimestamp"))


def _decide_on_existing(
    client: SyncTFJobClient,
    existing: Mapping[str, Any],
    *,
    name: str,
    namespace: str,
    identity: TaskIdentity,
    rules: Rules,
    reattach: bool,
    log: TaskLog,
    kind: JobKind,
) -> Submission | None:
    """What to do with a TFJob found under our name; None once it has been removed."""
    if not matches_identity(
        existing,
        dag_id=identity.dag_id,
        task_id=identity.task_id,
        run_id=identity.run_id,
        map_index=identity.map_index,
    ):
        raise AirflowFailException(clash_message(existing, name=name, namespace=namespace, noun=kind.noun))
    uid = uid_of(existing)
    if _is_being_deleted(existing):
        log.info(
            "%s %s/%s (uid %s) is being deleted; waiting until it is gone", kind.noun, namespace, name, uid
        )
        delete_and_wait(client, name=name, namespace=namespace, uid=uid, log=log, kind=kind)
        return None
    if not reattach:
        log.info(
            "reattach=False: deleting this task instance's existing %s %s/%s (uid %s)",
            kind.noun,
            namespace,
            name,
            uid,
        )
        delete_and_wait(client, name=name, namespace=namespace, uid=uid, log=log, kind=kind)
        return None
    existing, pods = client.run(kind.with_pods(client.session, existing, name, namespace=namespace))
    verdict = kind.engine.decide(existing, pods, now=utc_now(), rules=rules)[0]
    submitted_by = _try_number(existing)
    if verdict.state is VerdictState.SUCCEEDED:
        log.info(
            "%s %s/%s (uid %s) already succeeded (try %s); not resubmitting",
            kind.noun,
            namespace,
            name,
            uid,
            submitted_by,
        )
        return Submission(existing, "finished")
    if verdict.state is VerdictState.FAILED:
        if submitted_by == identity.try_number:
            log.info("%s %s/%s (uid %s) of this try already failed", kind.noun, namespace, name, uid)
            return Submission(existing, "finished")
        log.info(
            "%s %s/%s (uid %s) failed in try %s; deleting it to submit a fresh one for try %s",
            kind.noun,
            namespace,
            name,
            uid,
            submitted_by,
            identity.try_number,
        )
        delete_and_wait(client, name=name, namespace=namespace, uid=uid, log=log, kind=kind)
        return None
    log.info(
        "Adopting %s %s/%s (uid %s, submitted by try %s, now %s)",
        kind.noun,
        namespace,
        name,
        uid,
        submitted_by,
        verdict.state.value,
    )
    return Submission(existing, "adopted")


def submit_or_adopt(
    client: SyncTFJobClient,
    manifest: Mapping[str, Any],
    *,
    identity: TaskIdentity,
    rules: Rules,
    reattach: bool,
    log: TaskLog,
    kind: JobKind = TFJOB,
) -> Submission:
    """Find, adopt, replace or create this task instance's TFJob (see the module table)."""
    metadata = manifest["metadata"]
    name, namespace = str(metadata["name"]), str(metadata["namespace"])
    for _attempt in range(3):
        try:
            existing: Mapping[str, Any] | None = client.run(
                kind.get(client.session, name, namespace=namespace)
            )
        except NotFoundError:
            existing = None
        if existing is not None:
            decided = _decide_on_existing(
                client,
                existing,
                name=name,
                namespace=namespace,
                identity=identity,
                rules=rules,
                reattach=reattach,
                log=log,
                kind=kind,
            )
            if decided is not None:
                return decided
        try:
            created = client.run(kind.create(client.session, manifest, namespace=namespace))
        except AlreadyExistsError:
            log.info("%s %s/%s appeared while submitting; looking at it again", kind.noun, namespace, name)
            continue
        log.info("Created %s %s/%s (uid %s)", kind.noun, namespace, name, uid_of(created))
        return Submission(created, "created")
    raise AirflowException(
        f"{kind.noun} {namespace}/{name} kept reappearing while this task tried to submit it; "
        f"is another process creating {kind.noun}s under the same name?"
    )


__all__ = [
    "DELETE_WAIT_SECONDS",
    "Submission",
    "TaskIdentity",
    "clash_message",
    "delete_and_wait",
    "submit_or_adopt",
]

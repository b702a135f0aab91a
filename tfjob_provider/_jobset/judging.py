""":func:`as_tfjob`: a JobSet, its Jobs and its pods as one TFJob-shaped object and its pods (what
the provider's waits, endings and records read), and :func:`decide_view` judging that object as
:func:`~tfjob_provider._jobset.verdict.decide_jobset` judges the JobSet (docs/adr/0040-jobset-wiring.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from tfjob_provider._jobset.policies import may_restart
from tfjob_provider._jobset.view import JobSetView, read_jobset
from tfjob_provider._policy.readers import as_mapping, as_str
from tfjob_provider.constants import IDENTITY_PREFIX
from tfjob_provider.policy import (
    REASON_CONTAINER_CONFIG,
    REASON_IMAGE_PULL,
    REASON_PENDING_TIMEOUT,
    REASON_RESTARTING,
    Rules,
    Verdict,
    VerdictState,
    decide_with_next_change,
)

#: On the TFJob view: the JobSet carries Completed or Failed itself ("true"/"false").
ANNOTATION_FINISHED: Final = f"{IDENTITY_PREFIX}/jobset-finished"
#: On the TFJob view: a failure the provider decides would be answered by the JobSet's failure
#: policy with a restart of all its Jobs ("true"/"false").
ANNOTATION_RESTARTS: Final = f"{IDENTITY_PREFIX}/jobset-restarts-on-failure"

#: Metadata of the JobSet the view keeps: identity, adoption and deletion read them.
_KEPT_METADATA: Final = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "labels",
)

#: Failures the provider decides itself (Rules), which no JobSet restart would cure.
_NOT_RESTARTED: Final = frozenset({REASON_IMAGE_PULL, REASON_CONTAINER_CONFIG, REASON_PENDING_TIMEOUT})

#: The engine's TFJob wording → the JobSet's, most specific first.
_WORDING: Final[tuple[tuple[str, str], ...]] = (
    ("no training operator is reconciling this TFJob", "no JobSet controller is reconciling this JobSet"),
    (
        "Is the Kubeflow training operator running, and does it watch this namespace?",
        "Is the JobSet controller (kubernetes-sigs/jobset) installed and running, and the Job "
        "controller of kube-controller-manager?",
    ),
    ("no training operator has reconciled it", "no JobSet controller has reconciled it"),
    ("(runPolicy.suspend is true); its pods are removed", "(spec.suspend is true); its Jobs are suspended"),
    ("the training operator replaces failed pods", "the Job controller replaces failed pods"),
    (
        "the training operator has not created its pods yet",
        "the JobSet and Job controllers have not created its pods yet",
    ),
    ("the training operator could not create it", "the Job controller could not create it"),
    ("see the TFJob's events", "see the events of the JobSet and its Jobs"),
    ("is Succeeded for the training operator", "is Completed for the JobSet controller"),
    ("meets the training operator's success rule", "meets its success policy"),
    ("(its Succeeded condition is set)", "(its Completed condition is set)"),
    ("not the training operator here", "not the JobSet controller here"),
    ("the training operator", "the JobSet controller"),
    ("the TFJob", "the JobSet"),
)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _restarts_on_failure(view: JobSetView, jobset: Mapping[str, Any]) -> bool:
    if view.failure is not None:
        return not view.failure.fails
    return view.restarting or may_restart(jobset)


def as_tfjob(
    jobset: Mapping[str, Any], jobs: Sequence[Any], pods: Sequence[Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The TFJob view of *jobset* (:func:`read_jobset`) with the JobSet's identity metadata
    (uid, labels, the provider's annotations, deletion) and what :func:`decide_view` needs to
    know about the JobSet itself (two annotations); and its pods, one per replica slot."""
    view = read_jobset(jobset, jobs, pods)
    metadata = as_mapping(jobset.get("metadata"))
    tfjob = dict(view.tfjob)
    view_metadata = dict(as_mapping(tfjob.get("metadata")))
    for key in _KEPT_METADATA:
        if metadata.get(key) is not None:
            view_metadata[key] = metadata[key]
    annotations = {
        str(key): value
        for key, value in as_mapping(metadata.get("annotations")).items()
        if str(key).startswith(f"{IDENTITY_PREFIX}/")
    }
    annotations[ANNOTATION_FINISHED] = _flag(view.finished)
    annotations[ANNOTATION_RESTARTS] = _flag(_restarts_on_failure(view, jobset))
    view_metadata["annotations"] = annotations
    tfjob["metadata"] = view_metadata
    return tfjob, view.pods


def _display_name(tfjob: Mapping[str, Any]) -> str:
    metadata = as_mapping(tfjob.get("metadata"))
    name, namespace = as_str(metadata.get("name")), as_str(metadata.get("namespace"))
    return f"{namespace}/{name}" if namespace and name else name or "(unnamed)"


def reworded(message: str, display_name: str) -> str:
    """A message of the TFJob engine in the JobSet's words."""
    text = message.replace(f"TFJob {display_name}", f"JobSet {display_name}")
    for old, new in _WORDING:
        text = text.replace(old, new)
    return text


def decide_view(
    tfjob: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    *,
    now: datetime | None = None,
    rules: Rules | None = None,
) -> tuple[Verdict, datetime | None]:
    """Judge a view built by :func:`as_tfjob`, and when the clock alone changes the verdict
    (:func:`~tfjob_provider.policy.decide_with_next_change`); a failure the JobSet's failure
    policy restarts from is Restarting."""
    verdict, changes_at = decide_with_next_change(tfjob, pods, now=now, rules=rules)
    annotations = as_mapping(as_mapping(tfjob.get("metadata")).get("annotations"))
    finished = annotations.get(ANNOTATION_FINISHED) == "true"
    message = reworded(verdict.message, _display_name(tfjob))
    restarts = (
        verdict.state is VerdictState.FAILED
        and not finished
        and verdict.reason not in _NOT_RESTARTED
        and not (rules is not None and rules.fail_on_worker_failure)
        and annotations.get(ANNOTATION_RESTARTS) == "true"
    )
    if restarts:
        restarting = dataclasses.replace(
            verdict,
            state=VerdictState.RESTARTING,
            retryable=False,
            reason=REASON_RESTARTING,
            message=f"{message.rstrip('.')}; the JobSet's failurePolicy restarts all its Jobs.",
            operator_finished=False,
        )
        return restarting, changes_at
    return (
        dataclasses.replace(
            verdict, message=message, operator_finished=verdict.operator_finished and finished
        ),
        changes_at,
    )


@dataclass(frozen=True)
class JobSetEngine:
    """The JobSet backend's engine for :class:`~tfjob_provider._outcome.wait.WaitTarget`: judges
    views built by :func:`as_tfjob`, names the job "JobSet"."""

    noun: str = "JobSet"

    def decide(
        self, tfjob: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], *, now: datetime, rules: Rules
    ) -> tuple[Verdict, datetime | None]:
        return decide_view(tfjob, pods, now=now, rules=rules)

    def reword(self, message: str, *, where: str) -> str:
        return reworded(message, where.split(" ", 1)[-1])


JOBSET_ENGINE: Final = JobSetEngine()


def decide_jobset_with_next_change(
    jobset: Mapping[str, Any],
    jobs: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    *,
    now: datetime | None = None,
    rules: Rules | None = None,
) -> tuple[Verdict, datetime | None]:
    """:func:`~tfjob_provider._jobset.verdict.decide_jobset`, and the earliest instant at which the
    clock alone changes its verdict (as :func:`~tfjob_provider.policy.decide_with_next_change`)."""
    tfjob, view_pods = as_tfjob(jobset, jobs, pods)
    return decide_view(tfjob, view_pods, now=now, rules=rules)


__all__ = [
    "ANNOTATION_FINISHED",
    "ANNOTATION_RESTARTS",
    "JOBSET_ENGINE",
    "JobSetEngine",
    "as_tfjob",
    "decide_jobset_with_next_change",
    "decide_view",
    "reworded",
]

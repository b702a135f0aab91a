""":func:`decide_jobset`: the TFJob engine's verdict on a JobSet, its Jobs and its pods, worded for
the JobSet; a failure its own failure policy restarts from is reported Restarting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from tfjob_provider._jobset.policies import may_restart
from tfjob_provider._jobset.view import JobSetView, read_jobset
from tfjob_provider.policy import (
    REASON_CONTAINER_CONFIG,
    REASON_IMAGE_PULL,
    REASON_PENDING_TIMEOUT,
    REASON_RESTARTING,
    Rules,
    Verdict,
    VerdictState,
    decide,
)

#: Failures the provider decides itself (Rules), which no JobSet restart would cure.
_NOT_RESTARTED: Final = frozenset({REASON_IMAGE_PULL, REASON_CONTAINER_CONFIG, REASON_PENDING_TIMEOUT})

#: The engine's TFJob wording → the JobSet's, most specific first.
_WORDING: Final[tuple[tuple[str, str], ...]] = (
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


def _reworded(message: str, display_name: str) -> str:
    text = message.replace(f"TFJob {display_name}", f"JobSet {display_name}")
    for old, new in _WORDING:
        text = text.replace(old, new)
    return text


def _restarts_the_set(
    view: JobSetView, jobset: Mapping[str, Any], verdict: Verdict, rules: Rules | None
) -> bool:
    """A failure the JobSet's failure policy answers with a restart, not with failing the set."""
    if verdict.state is not VerdictState.FAILED or view.finished or verdict.reason in _NOT_RESTARTED:
        return False
    if rules is not None and rules.fail_on_worker_failure:
        return False
    if view.failure is not None:
        return not view.failure.fails
    return view.restarting or may_restart(jobset)


def decide_jobset(
    jobset: Mapping[str, Any],
    jobs: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    *,
    now: datetime | None = None,
    rules: Rules | None = None,
) -> Verdict:
    """Judge a JobSet from its own object, its child Jobs and their pods (JSON as served).

    The same contract as :func:`~tfjob_provider.policy.decide`: never raises on malformed input;
    ``operator_finished`` is True only when the JobSet carries Completed or Failed itself.
    """
    view = read_jobset(jobset, jobs, pods)
    verdict = decide(view.tfjob, view.pods, now=now, rules=rules)
    message = _reworded(verdict.message, view.display_name)
    if _restarts_the_set(view, jobset, verdict, rules):
        return dataclasses.replace(
            verdict,
            state=VerdictState.RESTARTING,
            retryable=False,
            reason=REASON_RESTARTING,
            message=f"{message.rstrip('.')}; the JobSet's failurePolicy restarts all its Jobs.",
            operator_finished=False,
        )
    return dataclasses.replace(
        verdict, message=message, operator_finished=verdict.operator_finished and view.finished
    )

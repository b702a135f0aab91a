"""``decide_with_next_change``: the instant the clock alone changes a verdict, for every time-based rule.

Each row is a state at ``NOW`` and the instant the engine names.  The test judges the same state
one microsecond before that instant (the verdict of ``NOW``) and at it (a different verdict, with
the rule's reason); a state whose instant is "never" is judged a year later, unchanged.  The
property test draws states at random and checks the same at random moments in between.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.factories import NOW, condition, make_pod, make_tfjob
from tfjob_provider.policy import (
    REASON_DEADLINE,
    REASON_IMAGE_PULL,
    REASON_PENDING_TIMEOUT,
    Rules,
    decide,
    decide_with_next_change,
)

START = NOW - timedelta(minutes=10)  # the factories' startTime
CREATED = NOW - timedelta(minutes=11)  # the factories' TFJob creationTimestamp
POD_CREATED = NOW - timedelta(minutes=9)  # the factories' pod creationTimestamp
TICK = timedelta(microseconds=1)
RATE_LIMITED = "unexpected status code https://registry/v2/x/manifests/1: 429 Too Many Requests"
NOT_FOUND = "failed to resolve reference: not found"
RUNNING = [condition("Created"), condition("Running")]


@dataclass(frozen=True)
class Case:
    tfjob: dict[str, Any]
    pods: list[dict[str, Any]]
    rules: Rules = field(default_factory=Rules)
    changes_at: datetime | None = None
    reason_then: str | None = None


def pending_pod(replica_type: str, index: int = 0, **overrides: Any) -> dict[str, Any]:
    return make_pod(replica_type, index, phase="Pending", **overrides)


def pull_error(replica_type: str, index: int = 0, message: str = RATE_LIMITED) -> dict[str, Any]:
    return pending_pod(replica_type, index, waiting="ImagePullBackOff", waiting_message=message)


def no_creation_time(pod: dict[str, Any]) -> dict[str, Any]:
    del pod["metadata"]["creationTimestamp"]
    return pod


CASES: dict[str, Case] = {
    "activeDeadlineSeconds": Case(
        make_tfjob({"Chief": 1, "Worker": 1}, run_policy={"activeDeadlineSeconds": 900}, conditions=RUNNING),
        [make_pod("Chief"), make_pod("Worker")],
        changes_at=START + timedelta(seconds=900),
        reason_then=REASON_DEADLINE,
    ),
    "Rules.pending_timeout on a Pending pod": Case(
        make_tfjob({"Chief": 1, "Worker": 1}),
        [make_pod("Chief"), pending_pod("Worker")],
        Rules(pending_timeout=600),
        changes_at=POD_CREATED + timedelta(seconds=600),
        reason_then=REASON_PENDING_TIMEOUT,
    ),
    "Rules.pending_timeout on an unschedulable pod": Case(
        make_tfjob({"Chief": 1}),
        [pending_pod("Chief", unschedulable="0/3 nodes are available")],
        Rules(pending_timeout=601.5),
        changes_at=POD_CREATED + timedelta(seconds=601.5),
        reason_then=REASON_PENDING_TIMEOUT,
    ),
    "Rules.image_pull_timeout on a transient pull error": Case(
        make_tfjob({"Chief": 1}),
        [pull_error("Chief")],
        Rules(image_pull_timeout=600),
        changes_at=POD_CREATED + timedelta(seconds=600),
        reason_then=REASON_IMAGE_PULL,
    ),
    "image pull before pending": Case(
        make_tfjob({"Chief": 1}),
        [pull_error("Chief")],
        Rules(image_pull_timeout=700, pending_timeout=900),
        changes_at=POD_CREATED + timedelta(seconds=700),
        reason_then=REASON_IMAGE_PULL,
    ),
    "pending before image pull": Case(
        make_tfjob({"Chief": 1}),
        [pull_error("Chief")],
        Rules(image_pull_timeout=900, pending_timeout=700),
        changes_at=POD_CREATED + timedelta(seconds=700),
        reason_then=REASON_PENDING_TIMEOUT,
    ),
    "pull errors waited on forever without fail-fast: only pending counts": Case(
        make_tfjob({"Chief": 1}),
        [pull_error("Chief")],
        Rules(image_pull_fail_fast=False, image_pull_timeout=560, pending_timeout=800),
        changes_at=POD_CREATED + timedelta(seconds=800),
        reason_then=REASON_PENDING_TIMEOUT,
    ),
    "Rules.pending_timeout on a replica never created": Case(
        make_tfjob({"Chief": 1, "Worker": 2}),
        [make_pod("Chief"), make_pod("Worker", 0)],
        Rules(pending_timeout=900),
        changes_at=START + timedelta(seconds=900),
        reason_then=REASON_PENDING_TIMEOUT,
    ),
    "never created, the clock from creation before a startTime": Case(
        make_tfjob({"Chief": 1, "Worker": 1}, start_time=None),
        [make_pod("Chief")],
        Rules(pending_timeout=1200),
        changes_at=CREATED + timedelta(seconds=1200),
        reason_then=REASON_PENDING_TIMEOUT,
    ),
    "the earliest rule wins: deadline before pending": Case(
        make_tfjob({"Chief": 1, "Worker": 1}, run_policy={"activeDeadlineSeconds": 620}),
        [make_pod("Chief"), pending_pod("Worker")],
        Rules(pending_timeout=900),
        changes_at=START + timedelta(seconds=620),
        reason_then=REASON_DEADLINE,
    ),
    "the earliest pod wins": Case(
        make_tfjob({"Chief": 1, "Worker": 2}),
        [
            make_pod("Chief"),
            pending_pod("Worker", 0, created=NOW - timedelta(seconds=30)),
            pending_pod("Worker", 1, created=NOW - timedelta(seconds=50)),
        ],
        Rules(pending_timeout=300),
        changes_at=NOW + timedelta(seconds=250),
        reason_then=REASON_PENDING_TIMEOUT,
    ),
    # -- never ------------------------------------------------------------------------------------
    "running, default rules": Case(
        make_tfjob({"Chief": 1, "Worker": 1}, conditions=RUNNING), [make_pod("Chief"), make_pod("Worker")]
    ),
    "pending, default rules (no pending_timeout)": Case(
        make_tfjob({"Chief": 1}), [pending_pod("Chief", unschedulable="0/3 nodes are available")]
    ),
    "pull error with image_pull_timeout=None": Case(
        make_tfjob({"Chief": 1}), [pull_error("Chief")], Rules(image_pull_timeout=None)
    ),
    "Pending pod without a creationTimestamp": Case(
        make_tfjob({"Chief": 1}), [no_creation_time(pull_error("Chief"))], Rules(pending_timeout=60)
    ),
    "missing replica of a job that ran once (a restart in progress)": Case(
        make_tfjob({"Chief": 1, "Worker": 1}, conditions=RUNNING),
        [make_pod("Chief")],
        Rules(pending_timeout=60),
    ),
    "suspended": Case(
        make_tfjob({"Chief": 1}, run_policy={"suspend": True, "activeDeadlineSeconds": 900}),
        [],
        Rules(pending_timeout=60),
    ),
    "resumed, not reconciled yet (its old startTime is about to be reset)": Case(
        make_tfjob(
            {"Chief": 1},
            run_policy={"activeDeadlineSeconds": 900},
            conditions=[condition("Created"), condition("Suspended")],
        ),
        [make_pod("Chief")],
    ),
    "not reconciled by any operator": Case(
        make_tfjob({"Chief": 1}, conditions=[], start_time=None), [], Rules(pending_timeout=60)
    ),
    "managed by another controller": Case(
        make_tfjob(
            {"Chief": 1}, run_policy={"managedBy": "kueue.x-k8s.io/multikueue", "activeDeadlineSeconds": 60}
        ),
        [pending_pod("Chief")],
        Rules(pending_timeout=60),
    ),
    "terminal: a permanent pull error fails at once": Case(
        make_tfjob({"Chief": 1}), [pull_error("Chief", message=NOT_FOUND)], Rules(pending_timeout=60)
    ),
    "terminal: succeeded": Case(
        make_tfjob({"Chief": 1}, run_policy={"activeDeadlineSeconds": 900}),
        [make_pod("Chief", phase="Succeeded")],
    ),
    "Succeeded condition, awaiting the team's success policy": Case(
        make_tfjob({"Chief": 1, "Worker": 1}, conditions=[condition("Created"), condition("Succeeded")]),
        [make_pod("Chief", phase="Succeeded"), pending_pod("Worker")],
        Rules(success_policy="all_workers", pending_timeout=60),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_verdict_holds_until_the_instant_named_and_changes_at_it(case: Case) -> None:
    verdict, changes_at = decide_with_next_change(case.tfjob, case.pods, now=NOW, rules=case.rules)
    assert verdict == decide(case.tfjob, case.pods, now=NOW, rules=case.rules)
    assert changes_at == case.changes_at
    if changes_at is None:
        if not verdict.terminal:
            later = decide(case.tfjob, case.pods, now=NOW + timedelta(days=365), rules=case.rules)
            assert later == verdict
        return
    assert not verdict.terminal
    before = decide(case.tfjob, case.pods, now=changes_at - TICK, rules=case.rules)
    at = decide(case.tfjob, case.pods, now=changes_at, rules=case.rules)
    assert before == verdict
    assert at != verdict and at.reason == case.reason_then and at.terminal


def test_a_terminal_verdict_never_changes_by_the_clock() -> None:
    case = CASES["terminal: succeeded"]
    verdict, changes_at = decide_with_next_change(case.tfjob, case.pods, now=NOW)
    assert verdict.terminal and changes_at is None


# -- property: random states, random moments ------------------------------------------------------

_POD_STATES = st.sampled_from(
    ["running", "pending", "unschedulable", "pull-transient", "pull-bare", "missing"]
)
_SECONDS = st.one_of(st.none(), st.floats(min_value=1, max_value=3 * 3600, allow_nan=False))


@st.composite
def states(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]], Rules]:
    workers = draw(st.integers(min_value=0, max_value=3))
    run_policy: dict[str, Any] = {}
    if draw(st.booleans()):
        run_policy["activeDeadlineSeconds"] = draw(st.integers(min_value=1, max_value=4 * 3600))
    ran = draw(st.booleans())
    started = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=3600)))
    tfjob = make_tfjob(
        {"Chief": 1, "Worker": workers} if workers else {"Chief": 1},
        run_policy=run_policy,
        conditions=RUNNING if ran else [condition("Created")],
        start_time=None if started is None else NOW - timedelta(seconds=started),
    )
    pods = []
    for replica_type, index in [("Chief", 0)] + [("Worker", i) for i in range(workers)]:
        state = draw(_POD_STATES)
        created = NOW - timedelta(seconds=draw(st.integers(min_value=0, max_value=3600)))
        if state == "running":
            pods.append(make_pod(replica_type, index, created=created))
        elif state == "pending":
            pods.append(pending_pod(replica_type, index, created=created))
        elif state == "unschedulable":
            pods.append(pending_pod(replica_type, index, created=created, unschedulable="0/1 nodes"))
        elif state == "pull-transient":
            pods.append(
                pending_pod(
                    replica_type, index, created=created, waiting="ErrImagePull", waiting_message=RATE_LIMITED
                )
            )
        elif state == "pull-bare":
            pods.append(pending_pod(replica_type, index, created=created, waiting="ImagePullBackOff"))
    rules = Rules(
        pending_timeout=draw(_SECONDS),
        image_pull_timeout=draw(_SECONDS),
        image_pull_fail_fast=draw(st.booleans()),
    )
    return tfjob, pods, rules


@settings(deadline=None)
@given(state=states(), fractions=st.lists(st.floats(min_value=0, max_value=1, exclude_max=True), max_size=4))
def test_between_now_and_the_instant_nothing_changes_and_at_it_the_verdict_does(
    state: tuple[dict[str, Any], list[dict[str, Any]], Rules], fractions: list[float]
) -> None:
    tfjob, pods, rules = state
    verdict, changes_at = decide_with_next_change(tfjob, pods, now=NOW, rules=rules)
    if verdict.terminal:
        assert changes_at is None
        return
    if changes_at is None:
        for days in (1, 30, 3650):
            assert decide(tfjob, pods, now=NOW + timedelta(days=days), rules=rules) == verdict
        return
    assert changes_at > NOW
    span = changes_at - NOW
    for fraction in [*fractions, 0.0]:
        moment = NOW + span * fraction
        assert decide(tfjob, pods, now=min(moment, changes_at - TICK), rules=rules) == verdict
    assert decide(tfjob, pods, now=changes_at - TICK, rules=rules) == verdict
    assert decide(tfjob, pods, now=changes_at, rules=rules) != verdict

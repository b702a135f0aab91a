"""Random situations judged twice — on a TFJob and on the JobSet it becomes — give one verdict.

Hypothesis draws a layout, a restart policy, run-policy limits and a state for every replica's
pod; the TFJob gets the training operator's pods in those states, the JobSet the JobSet and Job
controllers' pods in the same states.  ``decide`` and ``decide_jobset`` must agree on the state,
the reason and the retry class.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.factories import NOW, make_pod
from tests.unit.jobset_states import child_job, jobset_pod, make_jobset
from tests.unit.test_jobset_verdict import _tfjob
from tfjob_provider._jobset import decide_jobset
from tfjob_provider.policy import Rules, decide

LAYOUTS: dict[str, dict[str, int]] = {
    "chief, workers, PS": {"chief": 1, "worker": 2, "ps": 1},
    "workers only": {"worker": 3},
    "workers and an evaluator": {"worker": 2, "evaluator": 1},
}
POD_STATES: list[dict[str, Any]] = [
    {"phase": "Running"},
    {"phase": "Succeeded"},
    {"phase": "Failed", "exit_code": 1},
    {"phase": "Failed", "exit_code": 137},
    {"phase": "Failed", "exit_code": 143},
    {"phase": "Failed", "exit_code": None, "pod_reason": "Evicted"},
    {"phase": "Failed", "exit_code": 137, "terminated_reason": "OOMKilled"},
    {"phase": "Pending"},
    {"phase": "Pending", "waiting": "ImagePullBackOff", "waiting_message": "manifest unknown"},
    {"phase": "Running", "restarts": 2, "last_exit_code": 1},
    {"phase": "Running", "restarts": 1, "last_exit_code": 137},
    {"phase": "Running", "deleting": True},
]
_TYPES = {"chief": "Chief", "worker": "Worker", "ps": "PS", "evaluator": "Evaluator"}


@st.composite
def situations(draw: st.DrawFn) -> tuple[dict[str, Any], dict[tuple[str, int], dict[str, Any] | None], Rules]:
    layout = dict(draw(st.sampled_from(list(LAYOUTS.values()))))
    build: dict[str, Any] = {
        **layout,
        "restart_policy": draw(st.sampled_from(["Never", "OnFailure", "ExitCode"])),
    }
    if "chief" not in layout and draw(st.booleans()):
        build["success_policy"] = "AllWorkers"
    backoff = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=4)))
    if backoff is not None:
        build["backoff_limit"] = backoff
    deadline = draw(st.sampled_from([None, 300, 3600]))  # both jobs started 10 minutes before now
    if deadline is not None:
        build["active_deadline_seconds"] = deadline
    slots = {
        (rjob, index): draw(st.one_of(st.none(), st.sampled_from(POD_STATES)))
        for rjob, count in layout.items()
        for index in range(count)
    }
    rules = draw(
        st.sampled_from([Rules(), Rules(fail_on_worker_failure=True), Rules(success_policy="all_workers")])
    )
    return build, slots, rules


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(situations())
def test_the_tfjob_and_its_jobset_get_the_same_verdict(
    situation: tuple[dict[str, Any], dict[tuple[str, int], dict[str, Any] | None], Rules],
) -> None:
    build, slots, rules = situation
    restart = build["restart_policy"]
    tfjob_pods = [
        make_pod(_TYPES[rjob], index, restart_policy=restart, **state)
        for (rjob, index), state in slots.items()
        if state is not None
    ]
    jobset = make_jobset(**build)
    jobs = [child_job(jobset, rjob["name"]) for rjob in jobset["spec"]["replicatedJobs"]]
    jobset_pods = [
        jobset_pod(rjob, index, **state) for (rjob, index), state in slots.items() if state is not None
    ]
    on_tfjob = decide(_tfjob(build), tfjob_pods, now=NOW, rules=rules)
    on_jobset = decide_jobset(jobset, jobs, jobset_pods, now=NOW, rules=rules)
    assert (on_jobset.state, on_jobset.reason, on_jobset.retryable) == (
        on_tfjob.state,
        on_tfjob.reason,
        on_tfjob.retryable,
    ), f"TFJob: {on_tfjob.message}\nJobSet: {on_jobset.message}"

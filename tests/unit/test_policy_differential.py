"""decide() against the sandbox's own training-operator pass, on random snapshots.

The sandbox emulates the operator independently of the verdict engine (it may import only
``constants``), so agreement between the two is evidence that both read the operator's rules the
same way.  Every disagreement must be one of the provider's documented departures: a pod that failed
for good under ``Never`` which the operator would hide behind a Restarting condition or ignore as a
dynamic worker (docs/concepts/rules.md §8, items 3 and 4).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfjob_sandbox.training_operator.reconcile import WriteStatus, reconcile

from tests.unit.factories import NOW, condition, make_pod, make_tfjob
from tfjob_provider.policy import Rules, VerdictState, decide


@st.composite
def snapshots(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    types = draw(
        st.lists(st.sampled_from(["Chief", "Master", "Worker", "PS", "Evaluator"]), min_size=1, unique=True)
    )
    if "Chief" in types and "Master" in types:
        types.remove("Master")  # the webhook refuses both
    replicas = {name: draw(st.integers(min_value=1, max_value=3)) for name in types}
    policy = draw(st.sampled_from([None, "Never", "OnFailure", "Always", "ExitCode"]))
    progress = draw(st.lists(st.sampled_from(["Running", "Restarting"]), max_size=1))
    job = make_tfjob(
        replicas,
        restart_policy=policy,
        conditions=[condition("Created"), *(condition(kind) for kind in progress)],
        run_policy={"backoffLimit": draw(st.none() | st.integers(min_value=0, max_value=3))},
        dynamic_workers=draw(st.booleans()),
        success_policy=draw(st.sampled_from([None, "AllWorkers"])),
    )
    pods = []
    for name in types:
        for index in range(draw(st.integers(min_value=0, max_value=3))):
            phase = draw(st.sampled_from(["Running", "Succeeded", "Failed", "Pending"]))
            finished = phase in ("Failed", "Succeeded")
            pods.append(
                make_pod(
                    name,
                    index,
                    phase=phase,
                    exit_code=draw(st.none() | st.sampled_from([0, 1, 137])) if finished else None,
                    restarts=draw(st.integers(min_value=0, max_value=2)) if phase == "Running" else 0,
                    last_exit_code=137,
                    deleting=draw(st.booleans()) if phase == "Running" else False,
                    restart_policy=policy or "Never",
                )
            )
    return job, pods


def operator_state(job: dict[str, Any], pods: list[dict[str, Any]]) -> str:
    outcome = reconcile(job, pods, [], now=NOW)
    status = next(
        (action.status for action in outcome.actions if isinstance(action, WriteStatus)), job["status"]
    )
    true = {item["type"] for item in status.get("conditions", []) if item.get("status") == "True"}
    for state in ("Failed", "Succeeded", "Restarting", "Running"):
        if state in true:
            return state
    return "Pending"


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=snapshots())
def test_decide_agrees_with_the_sandbox_operator_except_for_documented_departures(
    case: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    job, pods = case
    expected = operator_state(job, pods)
    verdict = decide(job, pods, now=NOW, rules=Rules(image_pull_fail_fast=False))
    if verdict.state.value == expected:
        return
    assert verdict.state is VerdictState.FAILED and expected != "Failed", (expected, verdict)
    policies = {
        name.lower(): (spec.get("restartPolicy") or "Never")
        for name, spec in job["spec"]["tfReplicaSpecs"].items()
    }
    failed_under_never = {
        pod["metadata"]["name"]
        for pod in pods
        if pod["status"]["phase"] == "Failed"
        and policies[pod["metadata"]["labels"]["training.kubeflow.org/replica-type"]] == "Never"
    }
    assert verdict.culprits and set(verdict.culprits) <= failed_under_never, (expected, verdict)

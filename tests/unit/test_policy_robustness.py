"""decide() never raises and always returns a well-formed verdict; which pods count (R2); odd input.

Three hypothesis strategies feed it: arbitrary JSON, JSON built from the keys and values the
engine looks for (so that random input reaches deep code paths), and realistic TFJobs and pods
from the factories with random parts replaced by random JSON.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.factories import JOB_UID, NOW, condition, make_pod, make_tfjob, pods_for
from tfjob_provider._policy.readers import as_int, parse_time
from tfjob_provider.constants import (
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    MAGIC_EXIT_CODE,
    REPLICA_TYPES,
)
from tfjob_provider.policy import (
    MAX_CULPRITS,
    REASON_NOT_RECONCILED,
    REASON_STATES,
    Rules,
    Verdict,
    VerdictState,
    decide,
)

# --- the well-formedness property -------------------------------------------------------------


def assert_well_formed(verdict: Verdict) -> None:
    assert isinstance(verdict, Verdict)
    assert isinstance(verdict.state, VerdictState)
    assert REASON_STATES[verdict.reason] is verdict.state
    assert isinstance(verdict.message, str) and verdict.message.endswith(".")
    assert isinstance(verdict.culprits, tuple) and len(verdict.culprits) <= MAX_CULPRITS
    assert all(isinstance(name, str) and name for name in verdict.culprits)
    assert len(set(verdict.culprits)) == len(verdict.culprits)
    assert verdict.retryable is False or verdict.state is VerdictState.FAILED
    assert isinstance(verdict.operator_finished, bool)
    assert set(verdict.replicas) <= set(REPLICA_TYPES)
    for summary in verdict.replicas.values():
        counts = summary.to_dict().values()
        assert all(type(count) is int and count >= 0 for count in counts)
    assert Verdict.from_dict(json.loads(json.dumps(verdict.to_dict()))) == verdict


# --- strategies --------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
)
any_json = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=25,
)

WORDS = [
    *("True", "False", "Failed", "Succeeded", "Running", "Pending", "Unknown", "Restarting", "Suspended"),
    *("Created", "tensorflow", "tfjob-controller", "mnist", "Never", "OnFailure", "Always", "ExitCode"),
    *("chief", "worker", "ps", "master", "evaluator", "0", "1", "-1", "x", "", "OOMKilled", "Evicted"),
    *("ErrImagePull", "StartError", "DisruptionTarget", "PreemptionByScheduler", "AllWorkers", JOB_UID),
    *("2025-03-01T11:00:00Z", "kueue.x-k8s.io/multikueue", "has reached the specified backoff limit"),
]
word = st.sampled_from(WORDS) | st.integers(min_value=-3, max_value=300) | st.none() | st.booleans()
noise = st.recursive(
    word | st.just(MAGIC_EXIT_CODE),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(WORDS), children, max_size=3)
    ),
    max_leaves=8,
)


def shaped(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Mostly an object with all of ``fields``; sometimes a subset of them, sometimes random JSON."""
    complete = st.fixed_dictionaries(fields)
    return st.one_of(complete, complete, complete, st.fixed_dictionaries({}, optional=fields), noise)


def either(*values: Any) -> st.SearchStrategy[Any]:
    """Mostly one of ``values``, sometimes any word."""
    expected = st.sampled_from(values)
    return st.one_of(expected, expected, expected, word)


times = either("2025-03-01T11:00:00Z", "2025-03-01T11:59:59Z", "2024-01-01T00:00:00Z", "not a time")
state = shaped(
    {
        "terminated": shaped(
            {
                "exitCode": either(0, 1, 2, 127, 128, 137, 143, 255),
                "reason": either("OOMKilled", "Error"),
                "finishedAt": times,
            }
        ),
        "waiting": shaped({"reason": either("ErrImagePull", "ContainerCreating"), "message": word}),
        "running": shaped({}),
    }
)
container = shaped(
    {
        "name": either("tensorflow", "sidecar"),
        "restartCount": either(0, 1, 3),
        "state": state,
        "lastState": state,
    }
)
pod_shape = shaped(
    {
        "metadata": shaped(
            {
                "name": word,
                "labels": shaped(
                    {
                        LABEL_OPERATOR_NAME: either("tfjob-controller"),
                        LABEL_JOB_NAME: either("mnist"),
                        LABEL_REPLICA_TYPE: either(
                            "chief", "master", "worker", "ps", "evaluator", "launcher"
                        ),
                        LABEL_REPLICA_INDEX: either("0", "1", "2", "01"),
                    }
                ),
                "ownerReferences": st.lists(
                    shaped({"controller": either(True), "uid": either(JOB_UID, "old")})
                ),
                "deletionTimestamp": times,
                "creationTimestamp": times,
            }
        ),
        "status": shaped(
            {
                "phase": either("Running", "Succeeded", "Failed", "Pending", "", "Unknown"),
                "reason": either("Evicted", "Preempting", "Terminated", "OutOfcpu", "DeadlineExceeded"),
                "message": word,
                "conditions": st.lists(
                    shaped(
                        {"type": either("DisruptionTarget", "PodScheduled"), "status": word, "reason": word}
                    )
                ),
                "containerStatuses": st.lists(container, max_size=2),
                "initContainerStatuses": st.lists(container, max_size=1),
            }
        ),
    }
)
tfjob_shape = shaped(
    {
        "metadata": shaped({"name": either("mnist"), "namespace": word, "uid": either(JOB_UID)}),
        "spec": shaped(
            {
                "tfReplicaSpecs": st.dictionaries(
                    either("Chief", "Master", "Worker", "worker", "PS", "Evaluator", "Launcher"),
                    shaped(
                        {
                            "replicas": either(0, 1, 2, "2"),
                            "restartPolicy": either("Never", "OnFailure", "ExitCode"),
                        }
                    ),
                    max_size=4,
                ),
                "runPolicy": shaped(
                    {
                        "backoffLimit": either(0, 1, 3),
                        "activeDeadlineSeconds": either(0, 60, 86_400),
                        "suspend": either(True, False),
                        "managedBy": either("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"),
                    }
                ),
                "successPolicy": either("", "AllWorkers"),
                "enableDynamicWorker": either(True, False),
            }
        ),
        "status": shaped(
            {
                "conditions": st.lists(
                    shaped(
                        {
                            "type": either(
                                "Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"
                            ),
                            "status": either("True", "False"),
                            "message": word,
                        }
                    ),
                    max_size=4,
                ),
                "startTime": times,
                "replicaStatuses": st.dictionaries(
                    either("Worker", "PS"), shaped({"failed": word}), max_size=2
                ),
            }
        ),
    }
)

rules_strategy = st.builds(
    Rules,
    success_policy=st.sampled_from([None, "chief", "worker0", "all_workers"]),
    fail_on_worker_failure=st.booleans(),
    retryable_exit_codes=st.frozensets(st.sampled_from([1, 2, 137]), max_size=2),
    permanent_exit_codes=st.frozensets(st.sampled_from([143, 255, 0]), max_size=2),
    oom_is_retryable=st.booleans(),
    pending_timeout=st.none() | st.floats(min_value=1, max_value=10_000),
    image_pull_fail_fast=st.booleans(),
    image_pull_timeout=st.none() | st.floats(min_value=1, max_value=10_000),
)
moments = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(timezone.utc)
)


@st.composite
def realistic(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A factory-built TFJob and pods with a few random subtrees replaced by random JSON."""
    types = draw(
        st.lists(st.sampled_from(["Chief", "Master", "Worker", "PS", "Evaluator"]), min_size=1, unique=True)
    )
    replicas = {name: draw(st.integers(min_value=0, max_value=3)) for name in types}
    policy = draw(st.sampled_from([None, "Never", "OnFailure", "Always", "ExitCode"]))
    conditions = draw(
        st.lists(st.sampled_from(["Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"]))
    )
    job = make_tfjob(
        replicas,
        restart_policy=policy,
        conditions=[condition(kind) for kind in conditions],
        run_policy={"backoffLimit": draw(st.none() | st.integers(0, 3))},
        dynamic_workers=draw(st.booleans()),
    )
    pods = []
    for name in types:
        for index in range(draw(st.integers(min_value=0, max_value=3))):
            pods.append(
                make_pod(
                    name,
                    index,
                    phase=draw(st.sampled_from(["Running", "Succeeded", "Failed", "Pending", "", "Unknown"])),
                    exit_code=draw(st.none() | st.sampled_from([0, 1, 127, 128, 137, 255])),
                    restarts=draw(st.integers(0, 3)),
                    last_exit_code=draw(st.none() | st.sampled_from([0, 1, 137])),
                    deleting=draw(st.booleans()),
                    waiting=draw(st.none() | st.sampled_from(["ErrImagePull", "ContainerCreating"])),
                    pod_reason=draw(st.none() | st.sampled_from(["Evicted", "Preempting", "OutOfcpu"])),
                )
            )
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        target = draw(st.sampled_from([job, *pods]))
        _replace_somewhere(draw, target)
    return job, pods


def _replace_somewhere(draw: st.DrawFn, node: Any) -> None:
    """Walk a random path into ``node`` and replace what is there with random JSON."""
    while True:
        if isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            key = draw(st.integers(min_value=0, max_value=len(node) - 1))
        else:
            return
        child = node[key]
        if not isinstance(child, (dict, list)) or not child or draw(st.booleans()):
            node[key] = draw(any_json)
            return
        node = child


# Example counts come from the Hypothesis profile (conftest.py): "full" (make test), "fast" (make test-unit).
FAST = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(tfjob=any_json, pods=any_json, now=moments)
def test_decide_never_raises_on_arbitrary_json(tfjob: Any, pods: Any, now: datetime) -> None:
    assert_well_formed(decide(tfjob, pods, now=now))


@FAST
@given(tfjob=tfjob_shape, pods=st.lists(pod_shape, max_size=5), now=moments, rules=rules_strategy)
def test_decide_never_raises_on_json_shaped_like_what_it_reads(
    tfjob: Any, pods: Any, now: datetime, rules: Rules
) -> None:
    assert_well_formed(decide(tfjob, pods, now=now, rules=rules))


@FAST
@given(case=realistic(), now=moments, rules=rules_strategy)
def test_decide_never_raises_on_damaged_realistic_input(
    case: tuple[dict[str, Any], list[dict[str, Any]]], now: datetime, rules: Rules
) -> None:
    job, pods = case
    before = copy.deepcopy((job, pods))
    verdict = decide(job, pods, now=now, rules=rules)
    assert_well_formed(verdict)
    assert (job, pods) == before  # the inputs are read, never changed
    assert decide(job, pods, now=now, rules=rules) == verdict  # deterministic


# --- odd shapes, read defensively -------------------------------------------------------------------


@pytest.mark.parametrize("tfjob", [None, "TFJob", 7, [], {"status": []}, {"spec": "x", "metadata": []}])
def test_a_job_that_is_not_a_tfjob_is_not_reconciled(tfjob: Any) -> None:
    verdict = decide(tfjob, [], now=NOW)
    assert (verdict.state, verdict.reason) == (VerdictState.PENDING, REASON_NOT_RECONCILED)


@pytest.mark.parametrize("pods", [None, "pods", 3, {"kind": "PodList"}, [None, 1, "x", []]])
def test_pods_that_are_not_pods_are_ignored(pods: Any) -> None:
    assert decide(make_tfjob(), pods, now=NOW).state is VerdictState.PENDING


def test_a_pod_list_object_is_accepted() -> None:
    pod_list = {"kind": "PodList", "items": pods_for({"Chief": 1, "Worker": 2})}
    assert decide(make_tfjob(), pod_list, now=NOW).state is VerdictState.RUNNING  # type: ignore[arg-type]


def test_strings_where_integers_belong_are_read_as_integers() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy="OnFailure", run_policy={"backoffLimit": "3"})
    job["spec"]["tfReplicaSpecs"]["Chief"]["replicas"] = "2"
    pods = [make_pod("Chief", 0, phase="Succeeded"), make_pod("Chief", 1), make_pod("Worker", 0, restarts=2)]
    pods[2]["status"]["containerStatuses"][0]["restartCount"] = "3"
    pods[1]["metadata"]["labels"][LABEL_REPLICA_INDEX] = "01"
    verdict = decide(job, pods, now=NOW)
    assert verdict.reason == "BackoffLimitExceeded"  # "3" restarts >= "3"
    assert verdict.replicas["Chief"].active == 1 and verdict.replicas["Chief"].succeeded == 1


def test_string_exit_code_is_read() -> None:
    job = make_tfjob({"Chief": 1, "Worker": 1}, restart_policy="ExitCode")
    pod = make_pod("Worker", phase="Failed", exit_code=1)
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = "1"
    assert decide(job, [make_pod("Chief"), pod], now=NOW).state is VerdictState.FAILED


def test_lists_where_objects_belong_are_empty_objects() -> None:
    pod = make_pod("Chief")
    pod["status"]["containerStatuses"] = {"name": "tensorflow"}
    pod["spec"] = []
    job = make_tfjob()
    job["spec"]["runPolicy"] = ["suspend"]
    assert decide(job, [pod], now=NOW).state is VerdictState.RUNNING


@pytest.mark.parametrize("phase", ["", None, 17])
def test_a_pod_without_a_phase_is_pending(phase: Any) -> None:
    pod = make_pod("Chief", phase="Pending")
    pod["status"]["phase"] = phase
    verdict = decide(make_tfjob(), [pod, *pods_for({"Worker": 2})], now=NOW)
    assert verdict.state is VerdictState.PENDING
    assert verdict.replicas["Chief"].pending == 1


def test_timestamps_may_be_datetimes() -> None:
    job = make_tfjob(run_policy={"activeDeadlineSeconds": 60})
    job["status"]["startTime"] = datetime(2025, 3, 1, 10, 0)  # naive: read as UTC
    assert decide(job, pods_for({"Chief": 1, "Worker": 2}), now=NOW).reason == "DeadlineExceeded"


def test_bad_now_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match="datetime"):
        decide(make_tfjob(), [], now="2025-03-01")  # type: ignore[arg-type]


# --- which pods count (R2) ---------------------------------------------------------------------------

JOB = make_tfjob({"Chief": 1, "Worker": 2})


def running_job_but(failed_worker: dict[str, Any]) -> VerdictState:
    return decide(JOB, [make_pod("Chief"), make_pod("Worker", 0), failed_worker], now=NOW).state


def test_a_failed_pod_of_this_job_counts() -> None:
    assert running_job_but(make_pod("Worker", 1, phase="Failed")) is VerdictState.FAILED


@pytest.mark.parametrize(
    "labels",
    [
        {LABEL_JOB_NAME: "other-job"},
        {LABEL_OPERATOR_NAME: "pytorchjob-controller"},
        {LABEL_OPERATOR_NAME: None},
        {LABEL_REPLICA_TYPE: "Worker"},  # label values are lower case
        {LABEL_REPLICA_TYPE: "launcher"},
        {LABEL_REPLICA_INDEX: "one"},
        {LABEL_REPLICA_INDEX: "-1"},
        {LABEL_REPLICA_INDEX: None},
    ],
)
def test_pods_not_labelled_for_this_job_do_not_count(labels: dict[str, str | None]) -> None:
    assert running_job_but(make_pod("Worker", 1, phase="Failed", labels=labels)) is VerdictState.RUNNING


def test_a_pod_owned_by_an_earlier_tfjob_of_the_same_name_does_not_count() -> None:
    """A retry creates a new TFJob (new UID); the old one's terminating pods must not fail it."""
    stale = make_pod("Worker", 1, phase="Failed", owner_uid="an-older-uid")
    assert running_job_but(stale) is VerdictState.RUNNING


def test_an_orphan_pod_with_matching_labels_is_adopted() -> None:
    assert running_job_but(make_pod("Worker", 1, phase="Failed", owner_uid=None)) is VerdictState.FAILED


def test_a_slot_with_two_pods_is_skipped() -> None:
    twin = make_pod("Worker", 1, name="mnist-worker-1-twin")
    verdict = decide(
        JOB, [make_pod("Chief"), make_pod("Worker", 0), make_pod("Worker", 1, phase="Failed"), twin], now=NOW
    )
    assert verdict.state is VerdictState.RUNNING
    assert verdict.replicas["Worker"].active == 1


def test_a_pod_beyond_the_replica_count_still_counts() -> None:
    """R2: an out-of-range index is deleted by the operator but counted in the same pass."""
    assert running_job_but(make_pod("Worker", 5, phase="Failed")) is VerdictState.FAILED


def test_pods_of_replica_types_missing_from_the_spec_do_not_count() -> None:
    job = make_tfjob({"Chief": 1})
    assert (
        decide(job, [make_pod("Chief"), make_pod("PS", phase="Failed")], now=NOW).state
        is VerdictState.RUNNING
    )


# --- the operator's defaults (rules.md §5) ------------------------------------------------------------------


def test_case_variants_of_replica_keys_are_normalised() -> None:
    job = make_tfjob({"chief": 1, "worker": 2, "ps": 1})
    verdict = decide(job, [make_pod("Chief", phase="Succeeded"), *pods_for({"Worker": 2, "PS": 1})], now=NOW)
    assert verdict.state is VerdictState.SUCCEEDED
    assert set(verdict.replicas) == {"Chief", "Worker", "PS"}


@pytest.mark.parametrize("keys", [("worker", "Worker"), ("Worker", "worker")])
def test_the_exactly_spelled_key_wins_over_a_case_variant(keys: tuple[str, str]) -> None:
    job = make_tfjob({keys[0]: 5 if keys[0] == "worker" else 1, keys[1]: 5 if keys[1] == "worker" else 1})
    verdict = decide(job, [make_pod("Worker", 0, phase="Succeeded", exit_code=None)], now=NOW)
    assert verdict.reason == "AllWorkersSucceeded"  # replicas 1, not 5


def test_replicas_default_to_one() -> None:
    job = make_tfjob({"Chief": None, "Worker": 1})
    pods = [make_pod("Chief", phase="Succeeded"), make_pod("Worker")]
    assert decide(job, pods, now=NOW).state is VerdictState.SUCCEEDED


def test_unknown_replica_types_are_ignored_by_success_and_failure() -> None:
    job = make_tfjob({"Chief": 1, "Launcher": 1})
    pods = [make_pod("Chief"), make_pod("Launcher", phase="Failed")]
    assert decide(job, pods, now=NOW).state is VerdictState.RUNNING


# --- the readers themselves ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-03-01T12:00:00Z", NOW),
        ("2025-03-01T12:00:00z", NOW),
        ("2025-03-01T13:00:00+01:00", NOW),
        ("2025-03-01T12:00:00", NOW),  # naive: UTC
        (NOW, NOW),
        ("yesterday", None),
        ("", None),
        (1740830400, None),
    ],
)
def test_parse_time(text: object, expected: datetime | None) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3),
        ("3", 3),
        ("+3", 3),
        ("-2", -2),
        ("007", 7),
        (3.0, 3),
        (3.5, None),
        (True, None),
        ("3x", None),
        ([3], None),
    ],
)
def test_as_int(value: object, expected: int | None) -> None:
    assert as_int(value) == expected

"""The results channel: which pod's termination message holds the outputs, and how it is read."""

from __future__ import annotations

import json

import pytest

from tests.unit.factories import JOB_NAME, NOW, make_pod, make_tfjob
from tfjob_provider._outcome.outputs import (
    TERMINATION_MESSAGE_LIMIT,
    OutputsError,
    deciding_pod,
    parse_outputs,
    termination_message,
)
from tfjob_provider.policy import Rules, decide


def name_of(pod: object) -> str | None:
    return None if pod is None else pod["metadata"]["name"]  # type: ignore[index]


def test_the_chief_decides_and_holds_the_outputs() -> None:
    pods = [make_pod("Chief", phase="Succeeded"), make_pod("Worker", 0, phase="Succeeded")]
    verdict = decide(make_tfjob({"Chief": 1, "Worker": 1}), pods, now=NOW)
    assert name_of(deciding_pod(verdict, pods)) == f"{JOB_NAME}-chief-0"


def test_without_a_chief_worker_0_holds_them_also_under_all_workers() -> None:
    pods = [make_pod("Worker", i, phase="Succeeded") for i in (1, 0, 2)]
    job = make_tfjob({"Worker": 3}, success_policy="AllWorkers")
    verdict = decide(job, pods, now=NOW)
    assert verdict.state.value == "Succeeded" and len(verdict.culprits) == 3
    assert name_of(deciding_pod(verdict, pods)) == f"{JOB_NAME}-worker-0"
    forced = decide(make_tfjob({"Worker": 3}), pods, now=NOW, rules=Rules(success_policy="all_workers"))
    assert name_of(deciding_pod(forced, pods)) == f"{JOB_NAME}-worker-0"


def test_worker_0_is_found_when_the_verdict_names_only_20_of_many_deciding_workers() -> None:
    pods = [make_pod("Worker", i, phase="Succeeded") for i in reversed(range(30))]
    verdict = decide(make_tfjob({"Worker": 30}, success_policy="AllWorkers"), pods, now=NOW)
    assert verdict.state.value == "Succeeded" and len(verdict.culprits) == 20
    assert f"{JOB_NAME}-worker-0" not in verdict.culprits
    assert name_of(deciding_pod(verdict, pods)) == f"{JOB_NAME}-worker-0"


def test_a_deleted_deciding_pod_leaves_nothing_to_read() -> None:
    pods = [make_pod("Worker", 1, phase="Succeeded")]
    assert deciding_pod(None, pods) is None


def test_the_message_is_the_tensorflow_containers_and_bounded() -> None:
    assert (
        termination_message(make_pod("Chief", phase="Succeeded", terminated_message='{"a": 1}')) == '{"a": 1}'
    )
    assert termination_message(make_pod("Chief", phase="Succeeded")) is None
    huge = termination_message(make_pod("Chief", phase="Succeeded", terminated_message="x" * 100_000))
    assert huge is not None and len(huge) == TERMINATION_MESSAGE_LIMIT + 1


def test_parsing_accepts_json_and_nothing() -> None:
    assert parse_outputs("p", '{"step": 10, "loss": 0.25}\n') == {"step": 10, "loss": 0.25}
    assert parse_outputs("p", None) is None
    assert parse_outputs("p", "  \n") is None
    assert parse_outputs("p", "[1, 2]") == [1, 2]


def test_a_message_that_is_not_json_names_the_pod_and_the_problem() -> None:
    with pytest.raises(OutputsError, match=r"pod mnist-chief-0 is not JSON .*starts 'loss=0.1'"):
        parse_outputs("mnist-chief-0", "loss=0.1")


def test_a_message_at_the_limit_counts_as_cut() -> None:
    at_limit = json.dumps({"blob": "x" * (TERMINATION_MESSAGE_LIMIT - 12)})
    assert len(at_limit.encode()) == TERMINATION_MESSAGE_LIMIT
    with pytest.raises(OutputsError, match=r"4096 bytes, at Kubernetes' 4096-byte limit"):
        parse_outputs("mnist-chief-0", at_limit)
    just_under = json.dumps({"blob": "x" * (TERMINATION_MESSAGE_LIMIT - 13)})
    assert parse_outputs("mnist-chief-0", just_under) == json.loads(just_under)
    # Bytes, not characters: multi-byte text reaches the limit sooner.
    with pytest.raises(OutputsError, match="limit"):
        parse_outputs("p", json.dumps("é" * 2100, ensure_ascii=False))

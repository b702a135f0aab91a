"""Reading TF_CONFIG: roles, the chief rule, the sparse form, and clear errors for broken input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from trainer.tf_config import ClusterRole, TFConfigError, read_role

CLUSTER = {
    "chief": ["job-chief-0.default.svc:2222"],
    "ps": ["job-ps-0.default.svc:2222"],
    "worker": ["job-worker-0.default.svc:2222", "job-worker-1.default.svc:2222"],
}


def env(task_type: str, index: int, cluster: dict[str, Any] = CLUSTER) -> dict[str, str]:
    config = {"cluster": cluster, "task": {"type": task_type, "index": index}, "environment": "cloud"}
    return {"TF_CONFIG": json.dumps(config)}


def test_no_tf_config_is_a_one_process_job_whose_worker_0_is_the_chief() -> None:
    role = read_role({})
    assert role == ClusterRole(type="worker", index=0)
    assert (role.is_chief, role.trains, role.distributed, role.tag) == (True, True, False, "worker-0")
    assert role.describe() == "one process (no TF_CONFIG)"


@pytest.mark.parametrize(
    ("task_type", "index", "chief", "trains"),
    [
        ("chief", 0, True, True),
        ("worker", 0, False, True),
        ("worker", 1, False, True),
        ("ps", 0, False, False),
    ],
)
def test_roles_in_chief_mode(task_type: str, index: int, chief: bool, trains: bool) -> None:
    role = read_role(env(task_type, index))
    assert (role.type, role.index, role.is_chief, role.trains, role.distributed) == (
        task_type,
        index,
        chief,
        trains,
        True,
    )
    assert role.describe() == "chief 1, ps 1, worker 2"
    assert role.cluster["worker"] == {0: CLUSTER["worker"][0], 1: CLUSTER["worker"][1]}


@pytest.mark.parametrize(
    ("cluster", "strategy"),
    [
        (CLUSTER, "parameter_server"),
        ({"chief": ["c:1"], "worker": ["w0:1", "w1:1"]}, "multi_worker_mirrored"),
        ({"worker": ["w0:1", "w1:1"]}, "multi_worker_mirrored"),
        ({"worker": ["w0:1"]}, "single"),
    ],
)
def test_the_tensorflow_strategy_follows_the_cluster(cluster: dict[str, Any], strategy: str) -> None:
    assert read_role(env("worker", 0, cluster)).strategy == strategy


def test_no_tf_config_trains_in_one_process() -> None:
    assert read_role({}).strategy == "single"


def test_worker_0_is_the_chief_without_a_chief_replica() -> None:
    cluster = {"worker": ["w0:2222", "w1:2222"], "ps": ["p0:2222"]}
    assert read_role(env("worker", 0, cluster)).is_chief
    assert not read_role(env("worker", 1, cluster)).is_chief


def test_master_is_a_chief_and_types_are_case_insensitive() -> None:
    role = read_role(env("Master", 0, {"Master": ["m:1"], "Worker": ["w:1"]}))
    assert (role.type, role.is_chief) == ("master", True)


def test_sparse_cluster_of_dynamic_workers() -> None:
    role = read_role(env("worker", 3, {"worker": {"3": "w3:2222"}, "ps": ["p0:2222"]}))
    assert (role.type, role.index, role.cluster["worker"]) == ("worker", 3, {3: "w3:2222"})


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        (json.dumps({"cluster": {"worker": ["w:1"]}}), 'no "task"'),
        (json.dumps({"cluster": {"worker": "w:1"}, "task": {"type": "worker", "index": 0}}), "lists"),
        (json.dumps({"cluster": {"worker": [1]}, "task": {"type": "worker", "index": 0}}), "lists"),
        (json.dumps({"task": {"type": "", "index": 0}}), "non-empty string"),
        (json.dumps({"task": {"type": "worker", "index": -1}}), "non-negative integer"),
        (json.dumps({"task": {"type": "worker", "index": True}}), "non-negative integer"),
        (
            json.dumps({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 1}}),
            "no such replica",
        ),
        (json.dumps({"cluster": {"worker": ["w:1"]}, "task": {"type": "ps", "index": 0}}), "no such replica"),
    ],
)
def test_broken_tf_config_is_an_error_that_says_why(raw: str, complaint: str) -> None:
    with pytest.raises(TFConfigError, match=complaint):
        read_role({"TF_CONFIG": raw})


def test_sandbox_tf_config_string_is_read(tmp_path: Any) -> None:
    # The operator's exact encoding: compact, keys sorted, then task, then environment.
    raw = (
        '{"cluster":{"chief":["j-chief-0.default.svc:2222"],"worker":["j-worker-0.default.svc:2222"]},'
        '"task":{"type":"worker","index":0},"environment":"cloud"}'
    )
    role = read_role({"TF_CONFIG": raw})
    assert (role.tag, role.is_chief) == ("worker-0", False)

"""tfjob_to_jobset: the JobSet a TFJob becomes, and the TFJobs it refuses, field by field."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

import pytest

from tfjob_provider._jobset import JobSetTranslationError, names, tfjob_to_jobset
from tfjob_provider._jobset.restarts import restart_policy_of
from tfjob_provider._jobset.tf_config import TASK_INDEX
from tfjob_provider.manifest import ManifestError, build_tfjob

NAME, NAMESPACE = "mnist", "ml"


def _build(**build: Any) -> dict[str, Any]:
    build.setdefault("image", "registry.example.com/ml/mnist:1.4")
    build.setdefault("command", ["python", "train.py"])
    return build_tfjob(name=NAME, namespace=NAMESPACE, **build)


def _rjobs(jobset: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {rjob["name"]: rjob for rjob in jobset["spec"]["replicatedJobs"]}


def _container(rjob: Mapping[str, Any]) -> dict[str, Any]:
    containers = rjob["template"]["spec"]["template"]["spec"]["containers"]
    return next(container for container in containers if container["name"] == "tensorflow")


def _expand(value: str, environment: Mapping[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of an env value, as the kubelet applies it ($$ is a literal $)."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return environment.get(match.group(1), match.group(0))

    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", substitute, value)


def _tf_config(rjob: Mapping[str, Any], completion_index: int) -> dict[str, Any]:
    """The TF_CONFIG a pod of *rjob* with this completion index sees once its container starts."""
    env = _container(rjob)["env"]
    index_var = next(variable for variable in env if variable["name"] == TASK_INDEX)
    assert index_var["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    )
    names_in_order = [variable["name"] for variable in env]
    assert names_in_order.index(TASK_INDEX) < names_in_order.index("TF_CONFIG")  # expansion sees earlier vars
    raw = next(variable["value"] for variable in env if variable["name"] == "TF_CONFIG")
    parsed: dict[str, Any] = json.loads(_expand(raw, {TASK_INDEX: str(completion_index)}))
    return parsed


def test_one_indexed_job_per_replica_type() -> None:
    jobset = tfjob_to_jobset(_build(chief=1, worker=3, ps=2, evaluator=1))
    assert (jobset["apiVersion"], jobset["kind"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert jobset["metadata"] == {"name": NAME, "namespace": NAMESPACE}
    rjobs = _rjobs(jobset)
    assert list(rjobs) == ["chief", "evaluator", "ps", "worker"]
    for name, count in {"chief": 1, "evaluator": 1, "ps": 2, "worker": 3}.items():
        spec = rjobs[name]["template"]["spec"]
        assert rjobs[name]["replicas"] == 1
        assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", count, count)
        assert spec["podReplacementPolicy"] == "Failed"
    assert jobset["spec"]["network"] == {
        "enableDNSHostnames": True,
        "subdomain": NAME,
        "publishNotReadyAddresses": True,
    }


def test_every_pod_gets_the_tf_config_the_training_operator_would_write_with_jobset_hostnames() -> None:
    jobset = tfjob_to_jobset(_build(chief=1, worker=2, ps=1))
    cluster = {
        "chief": ["mnist-chief-0-0.mnist:2222"],
        "ps": ["mnist-ps-0-0.mnist:2222"],
        "worker": ["mnist-worker-0-0.mnist:2222", "mnist-worker-0-1.mnist:2222"],
    }
    rjobs = _rjobs(jobset)
    for rjob, index in (("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0)):
        config = _tf_config(rjobs[rjob], index)
        assert config == {"cluster": cluster, "task": {"type": rjob, "index": index}, "environment": "cloud"}
        # The hostname the Job controller gives that pod is the one listed for it.
        host = names.pod_hostname(NAME, rjob, 0, index)
        assert config["cluster"][rjob][index] == f"{host}.{jobset['spec']['network']['subdomain']}:2222"
    raw = next(var["value"] for var in _container(rjobs["worker"])["env"] if var["name"] == "TF_CONFIG")
    assert raw.startswith('{"cluster":{"chief":') and raw.endswith(
        ',"environment":"cloud"}'
    )  # compact, sorted


def test_the_tfjob_port_is_used() -> None:
    manifest = _build(worker=2)
    container = manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"name": "tfjob-port", "containerPort": 3333}]
    jobset = tfjob_to_jobset(manifest)
    assert _tf_config(_rjobs(jobset)["worker"], 1)["cluster"]["worker"][1] == "mnist-worker-0-1.mnist:3333"


def test_a_single_replica_gets_no_tf_config_as_under_the_operator() -> None:
    jobset = tfjob_to_jobset(_build(worker=1, env={"EPOCHS": "3"}))
    env = _container(_rjobs(jobset)["worker"])["env"]
    assert env == [{"name": "EPOCHS", "value": "3"}]


def test_the_users_env_comes_first_and_is_kept() -> None:
    jobset = tfjob_to_jobset(_build(worker=2, env={"EPOCHS": "3"}))
    env = _container(_rjobs(jobset)["worker"])["env"]
    assert env[0] == {"name": "EPOCHS", "value": "3"}
    assert [variable["name"] for variable in env[1:]] == [TASK_INDEX, "TF_CONFIG"]


SUCCESS = {
    "chief decides": ({"chief": 1, "worker": 2}, ["chief"], None),
    "master decides": (None, ["master"], None),
    "worker 0 decides": ({"worker": 3}, ["worker"], {"rules": [{"succeededIndexes": "0"}]}),
    "every worker decides": ({"worker": 3, "success_policy": "AllWorkers"}, ["worker"], None),
}


@pytest.mark.parametrize(("build", "targets", "worker_policy"), SUCCESS.values(), ids=SUCCESS.keys())
def test_who_decides_success(build: dict[str, Any] | None, targets: list[str], worker_policy: Any) -> None:
    if build is None:
        manifest = _build(worker=2)
        manifest["spec"]["tfReplicaSpecs"]["Master"] = copy.deepcopy(
            manifest["spec"]["tfReplicaSpecs"]["Worker"]
        )
        manifest["spec"]["tfReplicaSpecs"]["Master"]["replicas"] = 1
    else:
        manifest = _build(**build)
    jobset = tfjob_to_jobset(manifest)
    assert jobset["spec"]["successPolicy"] == {"operator": "All", "targetReplicatedJobs": targets}
    assert _rjobs(jobset)["worker"]["template"]["spec"].get("successPolicy") == worker_policy
    assert "failurePolicy" not in jobset["spec"]  # any failed Job fails the JobSet (R7)


@pytest.mark.parametrize("policy", ["Never", "OnFailure", "ExitCode"])
def test_restart_policies_round_trip(policy: str) -> None:
    jobset = tfjob_to_jobset(_build(chief=1, worker=2, restart_policy=policy, backoff_limit=3))
    for rjob in _rjobs(jobset).values():
        assert restart_policy_of(rjob["template"]["spec"]) == policy
        pod_policy = rjob["template"]["spec"]["template"]["spec"]["restartPolicy"]
        assert pod_policy == ("OnFailure" if policy == "OnFailure" else "Never")


def test_run_policy_fields() -> None:
    jobset = tfjob_to_jobset(
        _build(
            worker=2,
            active_deadline_seconds=3600,
            ttl_seconds_after_finished=60,
            suspend=True,
            managed_by="kueue.x-k8s.io/multikueue",
            labels={"team": "ml"},
            annotations={"owner": "ada"},
        )
    )
    spec = jobset["spec"]
    assert (spec["suspend"], spec["ttlSecondsAfterFinished"], spec["managedBy"]) == (
        True,
        60,
        "kueue.x-k8s.io/multikueue",
    )
    assert _rjobs(jobset)["worker"]["template"]["spec"]["activeDeadlineSeconds"] == 3600
    assert jobset["metadata"]["labels"] == {"team": "ml"}
    assert jobset["metadata"]["annotations"] == {"owner": "ada"}
    assert (
        "managedBy"
        not in tfjob_to_jobset(_build(worker=1, managed_by="kubeflow.org/training-operator"))["spec"]
    )


def test_the_input_is_not_changed() -> None:
    manifest = _build(worker=2, env={"A": "1"})
    before = copy.deepcopy(manifest)
    tfjob_to_jobset(manifest)
    assert manifest == before


def _refused(manifest: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(JobSetTranslationError) as raised:
        tfjob_to_jobset(manifest)
    assert str(raised.value).startswith("TFJob manifest cannot run as a JobSet")
    return {problem.field: problem.fix for problem in raised.value.problems}


def test_what_jobset_cannot_express_is_refused_field_by_field() -> None:
    manifest = _build(
        chief=1,
        worker=2,
        ps={"replicas": 1, "restart_policy": "Always"},
        enable_dynamic_worker=True,
        scheduling_policy={"min_available": 3},
        clean_pod_policy="All",
        env={"TF_CONFIG": "{}"},
    )
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["hostname"] = "fixed"
    fixes = _refused(manifest)
    assert set(fixes) == {
        "spec.enableDynamicWorker",
        "spec.runPolicy.schedulingPolicy",
        "spec.runPolicy.cleanPodPolicy",
        "spec.tfReplicaSpecs.PS.restartPolicy",
        "spec.tfReplicaSpecs.Worker.template.spec.hostname",
        "spec.tfReplicaSpecs.Chief.template.spec.containers[0].env[0].name",
        "spec.tfReplicaSpecs.Worker.template.spec.containers[0].env[0].name",
        "spec.tfReplicaSpecs.PS.template.spec.containers[0].env[0].name",
    }
    assert "OnFailure" in fixes["spec.tfReplicaSpecs.PS.restartPolicy"]
    assert "Kueue" in fixes["spec.runPolicy.schedulingPolicy"]


def test_a_name_too_long_for_jobset_pod_names_is_refused_with_the_length_that_fits() -> None:
    name = "a" * 50  # fits a TFJob: "<name>-worker-99" is 60 characters
    manifest = build_tfjob(name=name, image="trainer:1", worker=100)
    fixes = _refused(manifest)
    assert fixes == {"metadata.name": "Shorten the name to at most 45 characters."}
    assert len(names.pod_hostname("a" * 45, "worker", 0, 99) + "-abcde") == 63
    tfjob_to_jobset(build_tfjob(name="a" * 45, image="trainer:1", worker=100))


def test_an_invalid_tfjob_is_refused_as_a_tfjob_first() -> None:
    manifest = _build(worker=2)
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    with pytest.raises(ManifestError) as raised:
        tfjob_to_jobset(manifest)
    assert not isinstance(raised.value, JobSetTranslationError)
    assert raised.value.problems[0].field == "spec.tfReplicaSpecs.Worker.restartPolicy"


def test_clean_pod_policy_running_is_what_jobset_does() -> None:
    assert tfjob_to_jobset(_build(worker=2, clean_pod_policy="Running"))
    assert tfjob_to_jobset(_build(worker=2, clean_pod_policy=None))


def test_the_job_wide_backoff_limit_is_kept_for_the_verdict() -> None:
    jobset = tfjob_to_jobset(_build(worker=2, restart_policy="ExitCode", backoff_limit=0))
    assert jobset["metadata"]["annotations"] == {"tfjob-provider.airflow.apache.org/backoff-limit": "0"}
    assert "annotations" not in tfjob_to_jobset(_build(worker=2))["metadata"]

"""build_tfjob: typed, template-friendly parameters become a validated TFJob manifest."""

from __future__ import annotations

from typing import Any

import pytest

from tfjob_provider.manifest import (
    DEFAULT_CLEAN_POD_POLICY,
    ManifestError,
    Problem,
    ReplicaSpec,
    build_tfjob,
)

IMAGE = "registry.example/mnist:1.0"


def _problems(**parameters: Any) -> list[Problem]:
    with pytest.raises(ManifestError) as caught:
        build_tfjob(**parameters)
    return caught.value.problems


def _container(manifest: dict[str, Any], replica_type: str) -> dict[str, Any]:
    containers = manifest["spec"]["tfReplicaSpecs"][replica_type]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def test_the_minimal_build_is_one_worker_with_explicit_restart_and_clean_pod_policies() -> None:
    assert build_tfjob(name="mnist", image=IMAGE) == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "mnist"},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [{"name": "tensorflow", "image": IMAGE}]}},
                }
            },
            "runPolicy": {"cleanPodPolicy": "Running"},
        },
    }
    assert DEFAULT_CLEAN_POD_POLICY == "Running"


def test_parameters_must_be_given_by_keyword() -> None:
    with pytest.raises(TypeError):
        build_tfjob("mnist", IMAGE)  # type: ignore[misc]


def test_replica_types_with_zero_or_none_replicas_are_left_out() -> None:
    manifest = build_tfjob(name="mnist", image=IMAGE, chief=1, worker=0, ps=None, evaluator=ReplicaSpec(0))
    assert list(manifest["spec"]["tfReplicaSpecs"]) == ["Chief"]


def test_clean_pod_policy_none_leaves_the_operator_default_and_no_empty_run_policy() -> None:
    assert "runPolicy" not in build_tfjob(name="mnist", image=IMAGE, clean_pod_policy=None)["spec"]


def test_per_type_overrides_replace_job_values_and_env_is_merged_by_name() -> None:
    manifest = build_tfjob(
        name="mnist",
        image=IMAGE,
        command=["python", "train.py"],
        args=["--epochs", "5"],
        env={"SHARED": "job", "LEVEL": "job"},
        resources={"requests": {"cpu": "1"}},
        node_selector={"pool": "cpu"},
        restart_policy="ExitCode",
        chief=1,
        worker=ReplicaSpec(
            4,
            restart_policy="OnFailure",
            image="registry.example/mnist-gpu:1.0",
            args=["--epochs", "5", "--gpu"],
            env={"LEVEL": "worker", "NCCL_DEBUG": "INFO"},
            resources={"limits": {"nvidia.com/gpu": 1}},
            node_selector={"pool": "gpu"},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}],
        ),
    )
    chief, worker = _container(manifest, "Chief"), _container(manifest, "Worker")
    assert chief["image"] == IMAGE and worker["image"] == "registry.example/mnist-gpu:1.0"
    assert chief["command"] == worker["command"] == ["python", "train.py"]
    assert (chief["args"], worker["args"]) == (["--epochs", "5"], ["--epochs", "5", "--gpu"])
    assert chief["env"] == [{"name": "SHARED", "value": "job"}, {"name": "LEVEL", "value": "job"}]
    assert worker["env"] == [
        {"name": "SHARED", "value": "job"},
        {"name": "LEVEL", "value": "worker"},
        {"name": "NCCL_DEBUG", "value": "INFO"},
    ]
    assert (chief["resources"], worker["resources"]) == (
        {"requests": {"cpu": "1"}},
        {"limits": {"nvidia.com/gpu": 1}},
    )
    replicas = manifest["spec"]["tfReplicaSpecs"]
    assert (
        replicas["Chief"]["restartPolicy"] == "ExitCode"
        and replicas["Worker"]["restartPolicy"] == "OnFailure"
    )
    assert replicas["Chief"]["template"]["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert replicas["Worker"]["template"]["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert "tolerations" not in replicas["Chief"]["template"]["spec"]


def test_replicas_given_as_plain_dicts_use_replicaspec_field_names() -> None:
    as_dict = build_tfjob(
        name="m", image=IMAGE, worker={"replicas": 3, "restart_policy": "OnFailure", "args": ["-v"]}
    )
    as_spec = build_tfjob(
        name="m", image=IMAGE, worker=ReplicaSpec(3, restart_policy="OnFailure", args=["-v"])
    )
    assert as_dict == as_spec


def test_a_dict_without_replicas_means_one_replica() -> None:
    manifest = build_tfjob(name="m", image=IMAGE, ps={"restart_policy": "OnFailure"})
    assert manifest["spec"]["tfReplicaSpecs"]["PS"]["replicas"] == 1


def test_values_rendered_by_jinja_as_text_are_read_as_numbers_and_booleans() -> None:
    manifest = build_tfjob(
        name="m",
        image=IMAGE,
        worker={"replicas": " 3 ", "restart_policy": "ExitCode"},
        ps="2",
        backoff_limit="4",
        active_deadline_seconds="3600",
        ttl_seconds_after_finished="0",
        suspend="False",
        enable_dynamic_worker="true",
        scheduling_policy={"min_available": "3", "queue": "q"},
    )
    spec = manifest["spec"]
    assert spec["tfReplicaSpecs"]["Worker"]["replicas"] == 3 and spec["tfReplicaSpecs"]["PS"]["replicas"] == 2
    assert spec["runPolicy"] == {
        "cleanPodPolicy": "Running",
        "backoffLimit": 4,
        "activeDeadlineSeconds": 3600,
        "ttlSecondsAfterFinished": 0,
        "suspend": False,
        "schedulingPolicy": {"minAvailable": 3, "queue": "q"},
    }
    assert spec["enableDynamicWorker"] is True


def test_env_mapping_values_become_kubernetes_env_vars() -> None:
    manifest = build_tfjob(
        name="m",
        image=IMAGE,
        env={
            "EPOCHS": 10,
            "RATE": 0.5,
            "DEBUG": False,
            "TOKEN": {"secretKeyRef": {"name": "s", "key": "t"}},
            "E": None,
        },
    )
    assert _container(manifest, "Worker")["env"] == [
        {"name": "EPOCHS", "value": "10"},
        {"name": "RATE", "value": "0.5"},
        {"name": "DEBUG", "value": "false"},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}},
        {"name": "E"},
    ]


def test_numbers_in_command_and_args_are_written_as_text() -> None:
    manifest = build_tfjob(name="m", image=IMAGE, args=["--epochs", 10, "--rate", 0.1])
    assert _container(manifest, "Worker")["args"] == ["--epochs", "10", "--rate", "0.1"]


def test_pod_level_parameters_land_in_every_replica_template() -> None:
    manifest = build_tfjob(
        name="m",
        image=IMAGE,
        chief=1,
        pod_labels={"cost-center": "research"},
        pod_annotations={"sidecar.istio.io/inject": "false"},
        service_account_name="trainer",
        image_pull_policy="Always",
        image_pull_secrets=["registry-credentials"],
        volumes=[{"name": "data", "emptyDir": {}}],
        volume_mounts=[{"name": "data", "mountPath": "/data"}],
    )
    for replica_type in ("Chief", "Worker"):
        template = manifest["spec"]["tfReplicaSpecs"][replica_type]["template"]
        assert template["metadata"] == {
            "labels": {"cost-center": "research"},
            "annotations": {"sidecar.istio.io/inject": "false"},
        }
        assert template["spec"]["serviceAccountName"] == "trainer"
        assert template["spec"]["imagePullSecrets"] == [{"name": "registry-credentials"}]
        assert template["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]
        assert _container(manifest, replica_type)["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
        assert _container(manifest, replica_type)["imagePullPolicy"] == "Always"


def test_the_result_shares_nothing_with_the_inputs() -> None:
    resources = {"limits": {"cpu": "1"}}
    manifest = build_tfjob(name="m", image=IMAGE, resources=resources)
    resources["limits"]["cpu"] = "64"
    assert _container(manifest, "Worker")["resources"] == {"limits": {"cpu": "1"}}


def test_semantic_problems_name_the_manifest_field_the_parameter_fills() -> None:
    problems = _problems(name="m", image=IMAGE, chief=ReplicaSpec(1, restart_policy="Always"))
    assert [(p.field, "Use OnFailure, ExitCode or Never." in p.fix) for p in problems] == [
        ("spec.tfReplicaSpecs.Chief.restartPolicy", True)
    ]


def test_parameter_problems_and_manifest_problems_are_reported_together() -> None:
    problems = _problems(
        name="Bad_Name",
        image=IMAGE,
        command="python train.py",
        chief=[1],
        worker={"replicas": 2, "restartPolicy": "OnFailure"},
        env="A=1",
        clean_pod_policy="Finished",
        success_policy="allworkers",
    )
    fields = [problem.field for problem in problems]
    assert fields == [
        "env",
        "command",
        "chief",
        "worker.restartPolicy",
        "metadata.name",
        "spec.successPolicy",
        "spec.runPolicy.cleanPodPolicy",
    ]
    by_field = {problem.field: problem for problem in problems}
    assert 'did you mean "restart_policy"?' in by_field["worker.restartPolicy"].message
    assert 'command=["python", "train.py"]' in by_field["command"].fix
    assert 'did you mean "AllWorkers"?' in by_field["spec.successPolicy"].fix


def test_invalid_replica_counts_are_reported_on_the_manifest_field() -> None:
    (problem,) = _problems(name="m", image=IMAGE, worker={"replicas": "many"})
    assert problem.field == "spec.tfReplicaSpecs.Worker.replicas" and 'the string "many"' in problem.message
    (problem,) = _problems(name="m", image=IMAGE, worker=-2)
    assert problem.field == "spec.tfReplicaSpecs.Worker.replicas" and "is -2" in problem.message
    (problem,) = _problems(name="m", image=IMAGE, worker=True)
    assert problem.field == "worker" and "not True" in problem.message


def test_the_name_must_leave_room_for_the_largest_replica_index() -> None:
    name = "n" * 52
    assert build_tfjob(
        name=name, image=IMAGE, worker=9, ps=1000
    )  # n…-worker-8 is 61, n…-ps-999 59 characters
    (problem,) = _problems(name=name, image=IMAGE, worker=9, evaluator=1, ps=1000)
    assert problem.field == "metadata.name" and f'"{name}-ps-999"' not in problem.message
    assert "-evaluator-0" in problem.message and "at most 51 characters" in problem.fix


def test_success_policy_all_workers_needs_worker_mode() -> None:
    build_tfjob(name="m", image=IMAGE, worker=3, success_policy="AllWorkers")
    (problem,) = _problems(name="m", image=IMAGE, chief=1, worker=3, success_policy="AllWorkers")
    assert problem.field == "spec.successPolicy"

"""The pure side of assets and lineage: asset ``extra``, output URIs, OpenLineage naming and facets."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tfjob_provider._outcome.report import result_dict
from tfjob_provider._outcome.wait import WaitOutcome
from tfjob_provider.lineage.extra import asset_extra, check_asset_keys, output_uris
from tfjob_provider.lineage.facets import (
    TrainingEnd,
    datasets,
    error_message,
    job_facet,
    replica_of_pod,
    run_facet,
)
from tfjob_provider.lineage.naming import DatasetName, dataset_name
from tfjob_provider.manifest import build_tfjob
from tfjob_provider.policy import ReplicaSummary, Verdict, VerdictState

TOKEN = "tok-3b9f0c1e"


@pytest.mark.parametrize(
    ("uri", "namespace", "name"),
    [
        ("s3://bucket/models/m1", "s3://bucket", "models/m1"),
        ("s3a://bucket/k", "s3://bucket", "k"),
        ("s3://bucket", "s3://bucket", "/"),
        ("gs://bucket/k/x", "gs://bucket", "k/x"),
        ("file:///tmp/model", "file", "/tmp/model"),
        ("file://localhost/tmp/model", "file", "/tmp/model"),
        ("file://nfs-host/exports/model", "file://nfs-host", "/exports/model"),
        ("hdfs://namenode:8020/data/x", "hdfs://namenode:8020", "/data/x"),
        ("abfss://box@acct.dfs.core.windows.net/p/q", "abfss://box@acct.dfs.core.windows.net", "p/q"),
        ("postgres://db:5432/mydb/public/runs", "postgres://db:5432", "mydb.public.runs"),
        ("postgresql://db:5432/mydb/public/runs", "postgres://db:5432", "mydb.public.runs"),
        ("bigquery://proj/ds/table", "bigquery", "proj.ds.table"),
        ("https://user:secret@host.example/a/b?sig=1#f", "https://host.example", "a/b"),
    ],
)
def test_uris_get_openlineage_namespace_and_name(uri: str, namespace: str, name: str) -> None:
    assert dataset_name(uri) == DatasetName(namespace, name)


@pytest.mark.parametrize("uri", ["mnist_model", "", "s3:/no-authority", "http://[::1"])
def test_plain_names_and_unreadable_uris_are_no_datasets(uri: str) -> None:
    assert dataset_name(uri) is None


def test_no_credential_of_a_uri_reaches_a_dataset() -> None:
    for uri in ("s3://AKIA:secret@bucket/key", "abfss://box:secret@acct.dfs.core.windows.net/p"):
        named = dataset_name(uri)
        assert named is not None and "secret" not in named.namespace + named.name


def succeeded_result(outputs: Any = None) -> dict[str, Any]:
    verdict = Verdict(
        state=VerdictState.SUCCEEDED,
        retryable=False,
        reason="ChiefSucceeded",
        message="Chief completed",
        culprits=("job-chief-0",),
        replicas={"Chief": ReplicaSummary(succeeded=1), "Worker": ReplicaSummary(succeeded=2)},
    )
    return result_dict(
        name="job",
        namespace="team",
        uid="u-1",
        verdict=verdict,
        start_time="2026-01-01T00:00:00Z",
        completion_time="2026-01-01T00:01:30Z",
        outputs=outputs,
        recreations={"Worker": 1},
    )


def test_asset_extra_is_the_outputs_and_the_identity_and_json() -> None:
    extra = asset_extra(succeeded_result({"model_uri": "s3://m/1", "loss": 0.1}))
    assert extra == {
        "tfjob": {
            "namespace": "team",
            "name": "job",
            "uid": "u-1",
            "state": "Succeeded",
            "reason": "ChiefSucceeded",
            "start_time": "2026-01-01T00:00:00Z",
            "completion_time": "2026-01-01T00:01:30Z",
            "replicas": {
                "Chief": {"active": 0, "succeeded": 1, "failed": 0, "pending": 0, "restarts": 0},
                "Worker": {"active": 0, "succeeded": 2, "failed": 0, "pending": 0, "restarts": 0},
            },
            "recreations": {"Chief": 0, "Worker": 1},
            "recreation_count": 1,
        },
        "outputs": {"model_uri": "s3://m/1", "loss": 0.1},
    }
    assert json.loads(json.dumps(extra)) == extra


def test_output_uris_take_strings_and_lists_and_name_every_problem() -> None:
    outputs = {"model_uri": "s3://m/1", "shards": ["gs://a/1", "gs://a/2"], "loss": 0.1, "bad": [3]}
    found, problems = output_uris(outputs, ["model_uri", "shards", "loss", "bad", "gone"])
    assert [(item.key, item.uri) for item in found] == [
        ("model_uri", "s3://m/1"),
        ("shards", "gs://a/1"),
        ("shards", "gs://a/2"),
    ]
    assert problems == [
        "output 'loss' holds '0.1', not a URI",
        "output 'bad' holds '3', not a URI",
        "output 'gone' is missing",
    ]
    assert output_uris(None, ["model_uri"])[1] == [
        "the outputs are not a JSON object, so they hold no ['model_uri']"
    ]
    assert output_uris(outputs, []) == ([], [])


@pytest.mark.parametrize("value", ["model_uri", 3, ["model_uri", ""], [None]])
def test_asset_keys_must_be_a_list_of_names(value: Any) -> None:
    with pytest.raises(ValueError, match=r"train: output_asset_keys"):
        check_asset_keys(value, field="output_asset_keys", task_id="train")


def test_asset_keys_become_a_tuple() -> None:
    assert check_asset_keys(["model_uri"], field="output_asset_keys", task_id="t") == ("model_uri",)
    assert check_asset_keys(None, field="output_asset_keys", task_id="t") == ()


def test_the_job_facet_shows_the_shape_and_nothing_of_commands_or_env() -> None:
    manifest = build_tfjob(
        name="job",
        image="trainer:1",
        command=["python", "-c", f"print('{TOKEN}')"],
        args=["--token", TOKEN],
        env={"API_TOKEN": TOKEN},
        resources={"limits": {"nvidia.com/gpu": 1}},
        worker=2,
        ps=1,
        restart_policy="ExitCode",
        success_policy="AllWorkers",
        backoff_limit=3,
        scheduling_policy={"queue": "gpu", "minAvailable": 3},
        labels={"secret-label": TOKEN},
        annotations={"note": TOKEN},
    )
    facet = job_facet(manifest)
    replica = {
        "restartPolicy": "ExitCode",
        "images": ["trainer:1"],
        "resources": {"limits": {"nvidia.com/gpu": 1}},
    }
    assert facet == {
        "replicaSpecs": {"Worker": {"replicas": 2, **replica}, "PS": {"replicas": 1, **replica}},
        "runPolicy": {
            "cleanPodPolicy": "Running",
            "backoffLimit": 3,
            "schedulingPolicy": {"minAvailable": 3, "queue": "gpu"},
        },
        "successPolicy": "AllWorkers",
        "enableDynamicWorker": False,
    }
    assert TOKEN not in json.dumps(facet)
    assert job_facet(None) is None and job_facet({"spec": {}}) is None


def failed_outcome() -> WaitOutcome:
    verdict = Verdict(
        state=VerdictState.FAILED,
        retryable=False,
        reason="PermanentExitCode",
        message="Worker replica 1 (pod job-worker-1) exited with code 3",
        culprits=("job-worker-1",),
        replicas={"Worker": ReplicaSummary(failed=1, succeeded=1)},
    )
    return WaitOutcome(
        status="failed",
        name="job",
        namespace="team",
        uid="u-2",
        message=verdict.message,
        verdict=verdict,
        start_time="2026-01-01T00:00:00Z",
        completion_time="2026-01-01T00:00:09.5Z",
        recreations={"Worker": 2},
    )


def test_the_run_facet_and_the_error_of_a_permanent_failure() -> None:
    end = TrainingEnd.from_outcome(failed_outcome().to_event(), ending="failed")
    assert run_facet(end) == {
        "ending": "failed",
        "namespace": "team",
        "name": "job",
        "uid": "u-2",
        "state": "Failed",
        "reason": "PermanentExitCode",
        "retryable": False,
        "message": "Worker replica 1 (pod job-worker-1) exited with code 3",
        "decidingPods": [{"pod": "job-worker-1", "replica": "Worker 1"}],
        "replicas": {"Worker": {"active": 0, "succeeded": 1, "failed": 1, "pending": 0, "restarts": 0}},
        "recreations": {"Worker": 2},
        "recreationCount": 2,
        "startTime": "2026-01-01T00:00:00Z",
        "completionTime": "2026-01-01T00:00:09.5Z",
        "durationSeconds": 9.5,
        "outputKeys": [],
    }
    assert error_message(end) == (
        "Worker 1 (pod job-worker-1): TFJob team/job: Worker replica 1 (pod job-worker-1) exited with "
        "code 3 [PermanentExitCode, permanent]"
    )


def test_a_success_has_no_error_and_shows_only_its_output_keys() -> None:
    end = TrainingEnd.from_result(succeeded_result({"model_uri": "s3://m/1", "loss": 0.1}), ending="success")
    facet = run_facet(end)
    assert (facet["state"], facet["retryable"], facet["durationSeconds"]) == ("Succeeded", None, 90.0)
    assert facet["outputKeys"] == ["loss", "model_uri"] and "s3://m/1" not in json.dumps(facet)
    assert facet["recreations"] == {"Worker": 1} and facet["recreationCount"] == 1
    assert facet["decidingPods"] == [{"pod": "job-chief-0", "replica": "Chief 0"}]
    assert error_message(end) is None


@pytest.mark.parametrize(
    ("pod", "replica"),
    [
        ("job-ps-0", "PS 0"),
        ("job-master-2", "Master 2"),
        ("job-evaluator-0", "Evaluator 0"),
        ("other", "other"),
    ],
)
def test_replica_of_pod(pod: str, replica: str) -> None:
    assert replica_of_pod("job", pod) == replica


def test_datasets_of_declared_and_reported_uris_in_order_without_repeats() -> None:
    outputs = {"model_uri": "s3://models/m1", "copies": ["s3://models/m1", "gs://b/m1"]}
    named = datasets(
        ["s3://models/declared", "mnist_model", "s3://models/m1"], outputs, ["model_uri", "copies"]
    )
    assert named == [
        DatasetName("s3://models", "declared"),
        DatasetName("s3://models", "m1"),
        DatasetName("gs://b", "m1"),
    ]


@pytest.mark.slow  # a fresh interpreter imports the stack: not in make test-unit
def test_without_openlineage_the_tasks_import_and_never_touch_it() -> None:
    """Importing the tasks imports nothing of OpenLineage (its client is blocked in a fresh interpreter):
    only their ``get_openlineage_facets_*`` methods do, when the OpenLineage provider calls them."""
    script = (
        "import sys\n"
        "sys.modules['openlineage'] = None\n"
        "import tfjob_provider.operators.tfjob, tfjob_provider.sensors.tfjob\n"
        "import tfjob_provider.decorators.tfjob\n"
        "print(sorted(m for m in sys.modules if m.startswith(('openlineage.', 'tfjob_provider.lineage.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = done.stdout.strip().splitlines()[-1]
    assert "tfjob_provider.lineage.task_lineage" in loaded, "the check sees the provider's modules"
    assert "openlineage." not in loaded.replace("tfjob_provider.lineage.", "")
    assert "tfjob_provider.lineage.openlineage_objects" not in loaded

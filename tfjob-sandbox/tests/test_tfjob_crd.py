"""The TFJob CRD shipped in tfjob-sandbox is what ``tfjob_crd_generator.py`` (beside this file) writes.

The file is generated (from the ``kubernetes`` client's models, see the generator's docstring); a
hand edit, a generator change without regenerating, or a client upgrade that changes the pod
template shows up here as a difference, with the command that fixes it.
"""

from __future__ import annotations

from typing import Any

import tfjob_crd_generator
from tfjob_sandbox.admission.tfjob_crd import tfjob_crd
from tfjob_sandbox.api import wire


def _schema() -> dict[str, Any]:
    (version,) = tfjob_crd()["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def test_the_committed_crd_is_what_the_generator_writes() -> None:
    committed = tfjob_crd_generator.CRD_PATH.read_text(encoding="utf-8")
    assert committed == tfjob_crd_generator.render(), (
        "tfjob_sandbox/admission/crds/tfjobs.yaml is out of date: "
        "run `python tfjob-sandbox/tests/tfjob_crd_generator.py`"
    )
    assert tfjob_crd_generator.main(["--check"]) == 0


def test_the_packaged_file_parses_to_the_generated_document() -> None:
    assert tfjob_crd() == tfjob_crd_generator.tfjob_crd()


def test_names_version_subresource_and_printer_columns() -> None:
    crd = tfjob_crd()
    assert crd["metadata"]["name"] == "tfjobs.kubeflow.org"
    spec = crd["spec"]
    assert (spec["group"], spec["scope"], spec["names"]["kind"], spec["names"]["plural"]) == (
        "kubeflow.org",
        "Namespaced",
        "TFJob",
        "tfjobs",
    )
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = {column["name"]: column["jsonPath"] for column in version["additionalPrinterColumns"]}
    assert columns == {"State": ".status.conditions[-1:].type", "Age": ".metadata.creationTimestamp"}


def test_tfjob_fields_types_required_and_enums() -> None:
    spec = _schema()["properties"]["spec"]
    assert spec["required"] == ["tfReplicaSpecs"]
    replica_specs = spec["properties"]["tfReplicaSpecs"]
    assert set(replica_specs["properties"]) == set(wire.REPLICA_TYPES)
    assert "additionalProperties" not in replica_specs
    replica = replica_specs["properties"]["Worker"]["properties"]
    assert replica["restartPolicy"]["enum"] == ["Always", "OnFailure", "Never", "ExitCode"]
    assert replica["replicas"] == {"type": "integer", "format": "int32", "minimum": 0}
    run_policy = spec["properties"]["runPolicy"]["properties"]
    assert run_policy["cleanPodPolicy"]["enum"] == ["All", "Running", "None"]
    assert run_policy["suspend"] == {"type": "boolean", "default": False}
    assert run_policy["activeDeadlineSeconds"]["format"] == "int64"
    assert spec["properties"]["successPolicy"]["enum"] == ["", "AllWorkers"]
    quantity = run_policy["schedulingPolicy"]["properties"]["minResources"]["additionalProperties"]
    assert quantity["x-kubernetes-int-or-string"] is True and quantity["pattern"].startswith("^(\\+|-)?")


def test_the_pod_template_comes_from_the_client_models() -> None:
    template = _schema()["properties"]["spec"]["properties"]["tfReplicaSpecs"]["properties"]["Chief"][
        "properties"
    ]["template"]
    pod = template["properties"]["spec"]
    assert pod["required"] == ["containers"]
    container = pod["properties"]["containers"]["items"]
    assert container["required"] == ["name"]
    assert container["properties"]["resources"]["properties"]["limits"]["additionalProperties"][
        "x-kubernetes-int-or-string"
    ]
    probe_port = container["properties"]["livenessProbe"]["properties"]["httpGet"]["properties"]["port"]
    assert probe_port["x-kubernetes-int-or-string"] is True and "pattern" not in probe_port
    assert container["properties"]["ports"]["items"]["properties"]["protocol"]["default"] == "TCP"
    assert set(template["properties"]["metadata"]["properties"]) == set(
        tfjob_crd_generator.EMBEDDED_METADATA_FIELDS
    )


def test_status_fields_the_operator_writes() -> None:
    status = _schema()["properties"]["status"]["properties"]
    assert set(status) == {
        "completionTime",
        "conditions",
        "lastReconcileTime",
        "replicaStatuses",
        "startTime",
    }
    assert status["conditions"]["items"]["required"] == ["status", "type"]
    counts = status["replicaStatuses"]["additionalProperties"]["properties"]
    assert {"active", "succeeded", "failed", "selector", "labelSelector"} <= set(counts)

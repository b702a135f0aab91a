"""Hostile or broken input fails once, clearly, and costs nothing — through real Airflow and real HTTPS.

Every case is a task of one DAG run with ``dag.test()`` against one sandbox cluster for the whole
module, so that forty-odd cases cost one run; a few run again with ``deferrable=True``, which must
change nothing (the refusal comes before any deferral).  Each task has ``retries=2``; each must
end ``failed`` on try 1 with ``AirflowFailException``, a message under a few kilobytes that names
the field, and the sandbox's request log must show that no request at all reached the cluster
(the manifest, the typed parameters and the templates are all judged before the first API call).

Template cases use ``template_undefined=jinja2.StrictUndefined`` on the DAG, as a DAG that wants
undefined variables to be errors would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import DAGS_FOLDER
from tests.integration.airflow_harness import RunOutcome, load_dag, run_dag, write_dag_file
from tests.integration.conftest import FAST_SANDBOX_OPTIONS

CORPUS = Path(__file__).parents[1] / "unit" / "manifest_corpus"
#: "A few kilobytes": every failure message of this module must be shorter.
MAX_MESSAGE_CHARS = 5000

UNCLOSED_TEMPLATE = """\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {{ unclosed
spec: {}
"""
UNDEFINED_TEMPLATE = """\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
  labels:
    run-date: "{{ ds }}"
    owner: "{{ nope }}"
"""
TEMPLATE_FILES = {"hostile_unclosed.yaml": UNCLOSED_TEMPLATE, "hostile_undefined.yaml": UNDEFINED_TEMPLATE}

HOSTILE_DAG = """
from __future__ import annotations
import datetime
from pathlib import Path
import jinja2
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator
from tfjob_provider.sensors.tfjob import TFJobSensor

ERRORS = Path({errors!r})
CORPUS = Path({corpus!r})

def remember_error(context):
    ti = context["ti"]
    name = ti.task_id if ti.map_index is None or ti.map_index < 0 else f"{{ti.task_id}}[{{ti.map_index}}]"
    ERRORS.joinpath(name).write_text(type(context["exception"]).__name__ + ": " + str(context["exception"]))

BASE = '''apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              image: python:3.11
'''

def corpus(name):
    return "\\n".join(line for line in CORPUS.joinpath(name).read_text().splitlines()
                     if not line.startswith("# expect:")) + "\\n"

with DAG("hostile_inputs", schedule=None, start_date=datetime.datetime(2024, 1, 1),
         template_undefined=jinja2.StrictUndefined) as dag:
    common = dict(retries=2, on_failure_callback=remember_error)
    typed = dict(image="python:3.11", **common)
    # -- templates --------------------------------------------------------------------------------
    TFJobOperator(task_id="template_syntax_in_text", tfjob=BASE.replace("name: mnist", "name: {{{{ unclosed"),
                  **common)
    TFJobOperator(task_id="template_syntax_in_file", tfjob="hostile_unclosed.yaml", **common)
    TFJobOperator(task_id="template_file_missing", tfjob="missing.yaml", **common)
    TFJobOperator(task_id="template_undefined_in_file", tfjob="hostile_undefined.yaml", **common)
    TFJobOperator(task_id="template_undefined_in_typed_field", image="python:{{{{ nope }}}}", **common)
    TFJobSensor(task_id="sensor_template_syntax", job_name="{{{{ unclosed", **common)
    TFJobSensor(task_id="sensor_template_undefined", job_name="mnist", namespace="{{{{ nope }}}}", **common)
    TFJobOperator.partial(task_id="mapped_template_syntax", tfjob="{{% if %}}", **common).expand(
        job_name=["mapped-a", "mapped-b"])
    # -- the manifest: YAML and JSON text ----------------------------------------------------------
    TFJobOperator(task_id="alias_bomb_in_volumes", tfjob=corpus("alias-bomb-in-volumes.yaml"), **common)
    TFJobOperator(task_id="alias_bomb_in_command", tfjob=corpus("alias-bomb-in-command.yaml"), **common)
    TFJobOperator(task_id="alias_inside_its_anchor", tfjob=corpus("alias-used-inside-its-anchor.yaml"),
                  **common)
    TFJobOperator(task_id="yaml_nested_5000_levels",
                  tfjob=BASE + "              args: " + "[" * 5000 + "]" * 5000 + "\\n", **common)
    TFJobOperator(task_id="json_nested_5000_levels", tfjob='{{"a":' * 5000 + "1" + "}}" * 5000, **common)
    TFJobOperator(task_id="yaml_text_over_1_mib", tfjob=BASE + "#" * (1 << 20) + "\\n", **common)
    TFJobOperator(task_id="yaml_nul_byte", tfjob=BASE.replace("mnist", "mn\\x00ist"), **common)
    TFJobOperator(task_id="yaml_integer_5000_digits",
                  tfjob=BASE.replace("replicas: 1", "replicas: " + "9" * 5000), **common)
    TFJobOperator(task_id="yaml_replicas_1e9", tfjob=BASE.replace("replicas: 1", "replicas: 1e9"), **common)
    TFJobOperator(task_id="yaml_replicas_float", tfjob=corpus("replicas-float.yaml"), **common)
    TFJobOperator(task_id="yaml_duplicate_key", tfjob=corpus("duplicate-key-in-container.yaml"), **common)
    TFJobOperator(task_id="yaml_key_is_a_number", tfjob=corpus("key-is-a-number.yaml"), **common)
    TFJobOperator(task_id="yaml_field_confusable", tfjob=corpus("field-unicode-confusable.yaml"), **common)
    TFJobOperator(task_id="yaml_spec_is_a_string", tfjob=corpus("spec-string.yaml"), **common)
    TFJobOperator(task_id="yaml_containers_mapping", tfjob=corpus("containers-mapping.yaml"), **common)
    TFJobOperator(task_id="yaml_image_with_space", tfjob=corpus("image-with-space.yaml"), **common)
    TFJobOperator(task_id="manifest_is_a_list", tfjob=["apiVersion", "kind"], **common)
    # -- typed parameters ---------------------------------------------------------------------------
    TFJobOperator(task_id="env_100000_entries",
                  env=[{{"name": f"V{{i}}", "value": "x"}} for i in range(100_000)], **typed)
    TFJobOperator(task_id="worker_1e9_text", worker="1e9", **typed)
    TFJobOperator(task_id="worker_huge", worker=10**30, **typed)
    TFJobOperator(task_id="worker_float", worker=2.5, **typed)
    TFJobOperator(task_id="worker_negative", worker=-1, **typed)
    TFJobOperator(task_id="worker_boolean", worker=True, **typed)
    TFJobOperator(task_id="chief_zero_worker_zero", chief=0, worker=0, **typed)
    TFJobOperator(task_id="name_confusable", job_name="mn\\u0456st", **typed)
    TFJobOperator(task_id="name_300_characters", job_name="m" * 300, **typed)
    TFJobOperator(task_id="image_with_nul", image="python:3.11\\x00", **common)
    TFJobOperator(task_id="label_value_bad_characters", labels={{"team": "data science/ml"}}, **typed)
    TFJobOperator(task_id="label_key_bad", labels={{"-team lead": "ml"}}, **typed)
    TFJobOperator(task_id="volumes_mapping", volumes={{"data": {{"emptyDir": {{}}}}}}, **typed)
    TFJobOperator(task_id="command_string", command="python train.py", **typed)
    TFJobOperator(task_id="env_value_number", env=[{{"name": "EPOCHS", "value": 10}}], **typed)
    TFJobOperator(task_id="replica_resources_string", worker={{"replicas": 1, "resources": "4 cpus"}},
                  **typed)
    # -- the same in deferrable mode: refused before any deferral ------------------------------------
    TFJobOperator(task_id="deferrable_template_file_missing", tfjob="missing.yaml", deferrable=True, **common)
    TFJobOperator(task_id="deferrable_alias_bomb", tfjob=corpus("alias-bomb-in-volumes.yaml"),
                  deferrable=True, **common)
    TFJobOperator(task_id="deferrable_worker_1e9_text", worker="1e9", deferrable=True, **typed)
    TFJobSensor(task_id="deferrable_sensor_template_undefined", job_name="{{{{ nope }}}}", deferrable=True,
                **common)
"""


@dataclass(frozen=True)
class Case:
    """What the failure message of one task must say (all parts), besides the common checks."""

    parts: tuple[str, ...]


CASES: dict[str, Case] = {
    "template_syntax_in_text": Case(("'tfjob'", "Jinja syntax error in the field's own text, line 5")),
    "template_syntax_in_file": Case(
        ("'tfjob'", "Jinja syntax error in template file 'hostile_unclosed.yaml', line 5")
    ),
    "template_file_missing": Case(
        ("'tfjob'", "the template file 'missing.yaml' does not exist", "looked in")
    ),
    "template_undefined_in_file": Case(
        ("'tfjob'", "'nope' is undefined", "hostile_undefined.yaml", "line 7")
    ),
    "template_undefined_in_typed_field": Case(
        ("'image'", "'nope' is undefined", "the field's own text, line 1")
    ),
    "sensor_template_syntax": Case(("'job_name'", "Jinja syntax error in the field's own text, line 1")),
    "sensor_template_undefined": Case(("'namespace'", "'nope' is undefined")),
    "mapped_template_syntax[0]": Case(("'tfjob'", "Jinja syntax error in the field's own text, line 1")),
    "mapped_template_syntax[1]": Case(("'tfjob'", "Jinja syntax error in the field's own text, line 1")),
    "alias_bomb_in_volumes": Case(("document", "YAML aliases may repeat at most 1,000 nodes")),
    "alias_bomb_in_command": Case(("document", "YAML aliases may repeat at most 1,000 nodes")),
    "alias_inside_its_anchor": Case(("document", "is used inside the node it names")),
    "yaml_nested_5000_levels": Case(("document", "deeper than 64 levels")),
    "json_nested_5000_levels": Case(("document", "deeper than 64 levels")),
    "yaml_text_over_1_mib": Case(("tfjob", "over the 1 MiB (1,048,576 bytes) limit")),
    "yaml_nul_byte": Case(("document", "contains the character #x0000")),
    "yaml_integer_5000_digits": Case(("document", "an integer of 5,000 digits")),
    "yaml_replicas_1e9": Case(("spec.tfReplicaSpecs.Worker.replicas", 'not the string "1e9"')),
    "yaml_replicas_float": Case(("spec.tfReplicaSpecs.Worker.replicas", "not 2.0 (a number)", "Write 2")),
    "yaml_duplicate_key": Case(("document", "duplicate key 'image'")),
    "yaml_key_is_a_number": Case(("containers[0]", "has the key 8080 (a number)")),
    "yaml_field_confusable": Case(('spec["tfReplicaSp\u0435cs"]', 'Did you mean "tfReplicaSpecs"?')),
    "yaml_spec_is_a_string": Case(("spec", "must be a mapping (the TFJob spec)")),
    "yaml_containers_mapping": Case(("template.spec.containers", "must be a list, not a mapping")),
    "yaml_image_with_space": Case(("containers[0].image", "is not an image reference")),
    "manifest_is_a_list": Case(("document", "A TFJob manifest was expected, got list")),
    "env_100000_entries": Case(("templated field env", "over the 1 MiB (1,048,576 bytes) limit")),
    "worker_1e9_text": Case(("worker", "must be a replica count", "'1e9'")),
    "worker_huge": Case(("spec.tfReplicaSpecs.Worker.replicas", "must be between 0 and 2147483647")),
    "worker_float": Case(("worker", "must be a replica count", "2.5")),
    "worker_negative": Case(("spec.tfReplicaSpecs.Worker.replicas", "is -1")),
    "worker_boolean": Case(("worker", "not True")),
    "chief_zero_worker_zero": Case(("spec.tfReplicaSpecs", "has no Chief, Master or Worker")),
    "name_confusable": Case(("metadata.name", "is not a DNS-1035 label")),
    "name_300_characters": Case(("metadata.name", "is 300 characters")),
    "image_with_nul": Case(("containers[0].image", "contains a NUL character")),
    "label_value_bad_characters": Case(("metadata.labels.team", "is not a valid label value")),
    "label_key_bad": Case(('metadata.labels["-team lead"]', "is not a valid key")),
    "volumes_mapping": Case(("volumes", "must be a list of mappings")),
    "command_string": Case(("command", "must be a list of strings")),
    "env_value_number": Case(("containers[0].env[0].value", "must be a string, not 10 (a number)")),
    "replica_resources_string": Case(("worker.resources", "must be a mapping, not '4 cpus'")),
    "deferrable_template_file_missing": Case(("'tfjob'", "the template file 'missing.yaml' does not exist")),
    "deferrable_alias_bomb": Case(("document", "YAML aliases may repeat at most 1,000 nodes")),
    "deferrable_worker_1e9_text": Case(("worker", "must be a replica count", "'1e9'")),
    "deferrable_sensor_template_undefined": Case(("'job_name'", "'nope' is undefined")),
}


@dataclass(frozen=True)
class HostileRun:
    outcome: RunOutcome
    errors: dict[str, str]
    requests: int


@pytest.fixture(scope="module")
def hostile_run(airflow_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileRun]:
    """One run of the hostile DAG against a sandbox of this module's own, whose request log starts empty."""
    from tfjob_sandbox.testing import running_sandbox

    errors = tmp_path_factory.mktemp("hostile-errors")
    written = [DAGS_FOLDER / name for name in TEMPLATE_FILES]
    for path in written:
        path.write_text(TEMPLATE_FILES[path.name])
    with (
        running_sandbox(workdir=tmp_path_factory.mktemp("hostile-pods"), **FAST_SANDBOX_OPTIONS) as sandbox,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", sandbox.airflow_conn_uri)
        dag_path = write_dag_file(
            DAGS_FOLDER, "hostile_inputs", HOSTILE_DAG.format(errors=str(errors), corpus=str(CORPUS))
        )
        written.append(dag_path)
        try:
            sandbox.reset_request_counts()
            outcome = run_dag(load_dag(dag_path, "hostile_inputs"))
            requests = sandbox.request_total()
        finally:
            for path in written:
                path.unlink(missing_ok=True)
    yield HostileRun(outcome, {path.name: path.read_text() for path in errors.iterdir()}, requests)


def test_the_dag_holds_every_case_and_nothing_reached_the_cluster(hostile_run: HostileRun) -> None:
    assert set(hostile_run.outcome.tasks) == set(CASES)
    assert hostile_run.requests == 0  # not one request: no create, no get, no discovery


@pytest.mark.parametrize("task", list(CASES))
def test_hostile_input_fails_on_try_1_without_retries_naming_the_field(
    hostile_run: HostileRun, task: str
) -> None:
    state = hostile_run.outcome.task(task)
    assert (state.state, state.try_number) == ("failed", 1)
    said = hostile_run.errors[task]
    assert said.startswith("AirflowFailException: "), said[:500]
    assert len(said) < MAX_MESSAGE_CHARS, len(said)
    for part in CASES[task].parts:
        assert part in said, f"{part!r} not in {said[:1500]!r}"


DEEP_DICT_DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

deep = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {}}
level = deep["spec"]
for _ in range(5000):
    level["a"] = {}
    level = level["a"]

with DAG("deep_dict", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(task_id="deep", tfjob=deep)
"""


def test_a_manifest_dict_nested_5000_levels_is_refused_when_the_dag_is_loaded(dags_folder: Path) -> None:
    """Airflow walks templated values recursively when the operator is created, so the refusal
    has to come from ``__init__``: the DAG's import error names the field and the limit (no task
    runs, so nothing can reach a cluster)."""
    path = write_dag_file(dags_folder, "deep_dict", DEEP_DICT_DAG)
    with pytest.raises(ValueError) as caught:
        load_dag(path, "deep_dict")
    message = str(caught.value)
    assert message.startswith(
        "deep: tfjob.spec" + ".a" * 63 + ": nests mappings and lists deeper than 64 levels"
    )
    assert len(message) < MAX_MESSAGE_CHARS

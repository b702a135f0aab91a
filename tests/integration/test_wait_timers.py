"""Every time-based rule ends the task within 1 s of its instant, in the worker and deferred, with no poll.

No task here passes ``poll_interval``, and nothing in the cluster changes near a rule's instant
(scripted pods, a kubelet whose pull back-off is a minute, the training operator stopped where it
would act itself), so only the waiters' timers can end these tasks.  The rule's instant is computed
from the API server's own timestamps, recorded while the task waits (the provider deletes the
TFJob when it fails it); the task's end is the instant its ``on_failure_callback`` runs.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from tfjob_sandbox.testing import running_sandbox, sync_api_client

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value
from tfjob_provider._outcome.wait import parse_utc
from tfjob_provider._outcome.wait_clock import CLOCK_CHECK_SECONDS
from tfjob_provider.constants import LABEL_DAG_ID, LABEL_JOB_NAME, LABEL_TASK_ID
from tfjob_provider.policy import (
    REASON_DEADLINE,
    REASON_IMAGE_PULL,
    REASON_PENDING_TIMEOUT,
    REASON_STARTUP_TIMEOUT,
)

#: What the harness adds between the wait's end and ``on_failure_callback``: the confirmation read
#: of a failure the provider judged itself, the TFJob's deletion, the XCom pushes and, deferred,
#: dag.test() resuming the task with the trigger's event (1.5-2 s seen at a load average of 10 on
#: 2 cores).  The trigger's own end is also measured, from its log line, against a tighter bound.
HARNESS_MARGIN = 2.5
#: What an event loop shared with dag.test() may add to a due timer on a loaded machine.
LOOP_SLACK = 0.5
#: Long enough for every waiter to be asleep on its timer before the instant (a deferred task's
#: trigger needs a client, a list and a watch first: over 2 s on a loaded machine).
RULE_SECONDS = 8
#: The trigger's last log line before its event: "TFJob <namespace>/<name>: <status> — <message>".
TRIGGER_END = re.compile(r"^(\S+Z) \[info\s*\] TFJob default/(\S+): (?:failed|timeout) \u2014 ", re.MULTILINE)

DAG_SOURCE = """
from __future__ import annotations
import datetime
import time
from pathlib import Path
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

def remember_end(context):
    ended, error = time.time(), type(context["exception"]).__name__
    Path({ends!r}).joinpath(context["ti"].task_id).write_text(f"{{ended}} {{error}}")

with DAG({dag_id!r}, schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    common = dict(image="tf:2.15", command=["train"], chief=1, retries=0, log_tail_lines=0,
                  on_failure_callback=remember_end, pod_annotations={{"tfjob-sandbox/script": {script!r}}})
    TFJobOperator(task_id="in_worker", **common, **{extra!r})
    TFJobOperator(task_id="deferred", deferrable=True, **common, **{extra!r})
"""


@dataclass
class Seen:
    """First-seen timestamps of one task's TFJob and pods (whole seconds, as the API server writes)."""

    job_name: str = ""
    created: datetime | None = None
    started: datetime | None = None
    pods_created: list[datetime] = field(default_factory=list)


class Recorder(threading.Thread):
    """Polls the DAG's TFJobs and pods; with ``stop_operator_once_running``, stops the training operator once
    a job's pods run (it would enforce activeDeadlineSeconds itself) and restarts it when the job is gone."""

    def __init__(self, sandbox: Any, dag_id: str, *, stop_operator_once_running: bool = False) -> None:
        super().__init__(daemon=True)
        self.sandbox = sandbox
        self.dag_id = dag_id
        self.stop_operator_once_running = stop_operator_once_running
        self.seen: dict[str, Seen] = {}
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        api = sync_api_client(self.sandbox)
        custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
        held: str | None = None  # the job for which the operator is stopped
        try:
            while not self.stopping.is_set():
                listing = custom.list_namespaced_custom_object(
                    "kubeflow.org", "v1", "default", "tfjobs", label_selector=f"{LABEL_DAG_ID}={self.dag_id}"
                )
                names = set()
                for job in listing["items"]:
                    metadata = job["metadata"]
                    names.add(metadata["name"])
                    seen = self.seen.setdefault(metadata["labels"][LABEL_TASK_ID], Seen(metadata["name"]))
                    seen.created = seen.created or parse_utc(metadata["creationTimestamp"])
                    seen.started = seen.started or parse_utc((job.get("status") or {}).get("startTime"))
                    pods = core.list_namespaced_pod(
                        "default", label_selector=f"{LABEL_JOB_NAME}={metadata['name']}"
                    ).items
                    for pod in pods:
                        created = pod.metadata.creation_timestamp
                        if created not in seen.pods_created:
                            seen.pods_created.append(created)
                    running = pods and all(pod.status.phase == "Running" for pod in pods)
                    if self.stop_operator_once_running and held is None and seen.started and running:
                        self.sandbox.stop_operator()
                        held = metadata["name"]
                if held is not None and held not in names:
                    self.sandbox.start_operator()
                    held = None
                time.sleep(0.05)
        except BaseException as error:  # reported by the test
            self.error = error
        finally:
            if held is not None:
                self.sandbox.start_operator()
            api.close()


@pytest.fixture(scope="module")
def quiet_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A sandbox whose kubelet retries a failed pull only after a minute: no pod event near a rule."""
    with running_sandbox(
        workdir=tmp_path_factory.mktemp("quiet-pods"), backoff_initial=60.0, backoff_cap=60.0
    ) as sandbox:
        yield sandbox


@pytest.fixture
def quiet_cluster(quiet_sandbox: Any, dags_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", quiet_sandbox.airflow_conn_uri)
    quiet_sandbox.start_operator()
    return quiet_sandbox


@dataclass(frozen=True)
class Rule:
    extra: dict[str, Any]
    script: dict[str, Any]
    reason: str | None  # the verdict's reason (None: a timeout, AirflowTaskTimeout)
    stop_operator: str = ""  # "" | "before" | "once running"


RULES: dict[str, Rule] = {
    "activeDeadlineSeconds": Rule(
        {"active_deadline_seconds": RULE_SECONDS + 1}, {}, REASON_DEADLINE, stop_operator="once running"
    ),
    "Rules.pending_timeout": Rule(
        {"rules": {"pending_timeout": RULE_SECONDS}}, {"start_after": 600}, REASON_PENDING_TIMEOUT
    ),
    "Rules.image_pull_timeout": Rule(
        {"rules": {"image_pull_timeout": RULE_SECONDS}}, {"image_pull": "rate-limited"}, REASON_IMAGE_PULL
    ),
    "startup_timeout": Rule(
        {"startup_timeout": RULE_SECONDS}, {}, REASON_STARTUP_TIMEOUT, stop_operator="before"
    ),
    "timeout": Rule({"timeout": RULE_SECONDS}, {}, None),
}


def rule_instant(name: str, seen: Seen) -> datetime:
    """When the rule comes due, from the API server's timestamps."""
    seconds = timedelta(seconds=RULE_SECONDS)
    if name == "activeDeadlineSeconds":
        assert seen.started is not None, "the TFJob never got a startTime"
        return seen.started + seconds + timedelta(seconds=1)  # active_deadline_seconds is one more
    if name in ("startup_timeout", "timeout"):
        assert seen.created is not None
        return seen.created + seconds
    assert seen.pods_created, "no pod was ever created"
    return min(seen.pods_created) + seconds


@pytest.mark.parametrize("name", RULES.keys())
def test_each_rule_ends_the_task_within_a_second_of_its_instant(
    name: str, quiet_cluster: Any, dags_folder: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    rule = RULES[name]
    dag_id = "timer_" + "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
    ends = tmp_path / "ends"
    ends.mkdir()
    source = DAG_SOURCE.format(
        ends=str(ends), dag_id=dag_id, script=json.dumps(rule.script), extra=rule.extra
    )
    path = write_dag_file(dags_folder, dag_id, source)
    if rule.stop_operator == "before":
        quiet_cluster.stop_operator()
    recorder = Recorder(
        quiet_cluster, dag_id, stop_operator_once_running=rule.stop_operator == "once running"
    )
    recorder.start()
    try:
        outcome = run_dag(load_dag(path, dag_id))
    finally:
        recorder.stopping.set()
        recorder.join(timeout=30)
        quiet_cluster.start_operator()
    assert recorder.error is None, recorder.error
    output = capfd.readouterr()
    trigger_ends = {
        job: datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        for stamp, job in TRIGGER_END.findall(output.out + output.err)
    }
    instant = rule_instant(name, recorder.seen["deferred"])
    trigger_delay = (trigger_ends[recorder.seen["deferred"].job_name] - instant).total_seconds()
    assert 0 <= trigger_delay < CLOCK_CHECK_SECONDS + LOOP_SLACK, (
        f"the trigger ended {trigger_delay:.2f} s after"
    )
    delays = {}
    for task in ("in_worker", "deferred"):
        assert outcome.task(task).state == "failed", task
        ended_text, exception = (ends / task).read_text().split()
        if rule.reason is None:
            assert exception == "AirflowTaskTimeout", task
        else:
            failure = xcom_value(outcome, task, "tfjob_failure")
            assert failure["reason"] == rule.reason, (task, failure)
        delays[task] = float(ended_text) - rule_instant(name, recorder.seen[task]).timestamp()
    for task, delay in delays.items():
        assert delay >= 0, f"{name} ({task}) ended {-delay:.2f} s before its instant"
        assert delay < CLOCK_CHECK_SECONDS + HARNESS_MARGIN, f"{name} ({task}) ended {delay:.2f} s after it"
    with capfd.disabled():
        ended = ", ".join(f"{task} {delay:.3f} s" for task, delay in delays.items())
        print(f"\n{name}: the trigger ended {trigger_delay:.3f} s after the rule's instant; the task {ended}")

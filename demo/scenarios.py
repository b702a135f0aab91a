"""The demo's scenarios: which task of which example DAG, and how it must end to count as a pass.

Why spelled out: the demo's promise is "a distributed TFJob succeeds, fails for good, and fails
then succeeds on an Airflow retry", and a person should be able to trust the word PASS.  Each
scenario therefore states the Airflow outcome (task state and try number), the TFJobs the task
must have created (one per try that submitted) with the provider's verdict for each, and the
replica facts that make the story true (worker 1 exited 137 and was recreated; worker 0 exited 3).
:func:`evaluate` compares that with the evidence — Airflow's records and the cluster observer —
and lists every difference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from demo.observer import ClusterObserver, ReplicaRow, TFJobRecord
from demo.outcomes import LoggedVerdict, RunRecord, TaskRecord, TriggeredRun, logged_failures
from tfjob_provider.constants import ANNOTATION_TRY_NUMBER


@dataclass(frozen=True)
class ExpectedAttempt:
    """A TFJob the task must have created, and the verdict it must have got."""

    state: str  # "Succeeded" or "Failed"
    reason: str
    kind: str = ""  # for failures: "permanent" or "retryable"


@dataclass(frozen=True)
class Attempt:
    """A TFJob the task created (one per try that submitted), with what became of it."""

    job: TFJobRecord
    try_number: int | None
    rows: list[ReplicaRow]
    state: str = "?"
    reason: str = "?"
    kind: str = ""
    message: str = ""


@dataclass(frozen=True)
class Evidence:
    """Everything known about one scenario after its DAG ran."""

    scenario: Scenario
    run: RunRecord | None
    task: TaskRecord | None
    attempts: list[Attempt]
    result: dict[str, Any] | None
    related: dict[str, TaskRecord] = field(default_factory=dict)
    related_results: dict[str, Any] = field(default_factory=dict)
    logical_date: str = ""
    problems_running: list[str] = field(default_factory=list)
    triggered: TriggeredRun | None = None


Check = Callable[[Evidence], "str | None"]


@dataclass(frozen=True)
class Scenario:
    """One expected ending.

    :param job_task_id: the task that created the TFJob (``task_id`` unless, as with the sensor,
        another task submits it).
    :param checks: further facts, each returning a problem or None.
    :param result_key: the XCom holding the TFJob's result dict: ``return_value`` for the
        operator and the sensor, ``tfjob_result`` for ``@task.tfjob`` (whose ``return_value`` is
        the function's).
    :param triggers: ``(dag_id, task_id)`` of a DAG scheduled on the task's asset, run after it
        from the asset event (:mod:`demo.asset_pair`).
    """

    key: str
    title: str
    dag_id: str
    task_id: str
    expect_state: str
    expect_try: int
    expect_attempts: tuple[ExpectedAttempt, ...]
    story: str
    job_task_id: str | None = None
    checks: tuple[Check, ...] = ()
    result_key: str = "return_value"
    triggers: tuple[str, str] | None = None

    @property
    def submitting_task(self) -> str:
        return self.job_task_id or self.task_id


# --- checks ------------------------------------------------------------------------------------------


def row(attempt: Attempt, replica_type: str, index: int) -> ReplicaRow | None:
    return next((r for r in attempt.rows if (r.replica_type, r.index) == (replica_type, index)), None)


def replica_exits(attempt_index: int, replica_type: str, index: int, codes: Sequence[int]) -> Check:
    """The replica's pod instances exited with exactly ``codes``, in order."""

    def check(evidence: Evidence) -> str | None:
        if len(evidence.attempts) <= attempt_index:
            return None  # already reported as a missing TFJob
        found = row(evidence.attempts[attempt_index], replica_type, index)
        wanted = tuple(codes)
        if found is None:
            return f"{replica_type} {index} was never seen"
        if found.exit_codes != wanted:
            return f"{replica_type} {index} exited {found.exit_text}, expected {' → '.join(map(str, wanted))}"
        return None

    return check


def replica_recreated_after(attempt_index: int, replica_type: str, index: int, first_exit: int) -> Check:
    """The replica's first pod exited with ``first_exit`` and the training operator made another."""

    def check(evidence: Evidence) -> str | None:
        if len(evidence.attempts) <= attempt_index:
            return None
        found = row(evidence.attempts[attempt_index], replica_type, index)
        if found is None:
            return f"{replica_type} {index} was never seen"
        if not found.exit_codes or found.exit_codes[0] != first_exit or found.instances < 2:
            return (
                f"{replica_type} {index}: {found.instances} pod(s), exits {found.exit_text}; "
                f"expected a first exit {first_exit} and a recreated pod"
            )
        return None

    return check


def replicas_present(attempt_index: int, expected: dict[str, int]) -> Check:
    """The TFJob ran exactly this many replicas of each type."""

    def check(evidence: Evidence) -> str | None:
        if len(evidence.attempts) <= attempt_index:
            return None
        counts: dict[str, int] = {}
        for seen in evidence.attempts[attempt_index].rows:
            counts[seen.replica_type] = counts.get(seen.replica_type, 0) + 1
        return None if counts == expected else f"replicas {counts}, expected {expected}"

    return check


def related_task(task_id: str, state: str, try_number: int = 1) -> Check:
    def check(evidence: Evidence) -> str | None:
        record = evidence.related.get(task_id)
        if record is None:
            return f"task {task_id} did not run"
        if (record.state, record.try_number) != (state, try_number):
            return (
                f"task {task_id} ended {record.state} on try {record.try_number}, "
                f"expected {state} on try {try_number}"
            )
        return None

    return check


def downstream_used_result(evidence: Evidence) -> str | None:
    produced = evidence.related_results.get("register_model") or {}
    uid = evidence.attempts[-1].job.uid if evidence.attempts else None
    if produced.get("tfjob_uid") != uid:
        return f"register_model used TFJob uid {produced.get('tfjob_uid')}, not the training's {uid}"
    return None


def downstream_got_the_outputs(evidence: Evidence) -> str | None:
    """register_model read the chief's final step and loss (its termination message)."""
    produced = evidence.related_results.get("register_model") or {}
    outputs = (evidence.result or {}).get("outputs") or {}
    if not outputs.get("final_step") or produced.get("final_step") != outputs.get("final_step"):
        return (
            f"register_model saw final step {produced.get('final_step')}, the chief's outputs say {outputs}"
        )
    return None


def downstream_got_the_chiefs_return_value(evidence: Evidence) -> str | None:
    """show_metrics received what the chief's function returned (the TFJob result's outputs)."""
    shown = evidence.related_results.get("show_metrics")
    outputs = (evidence.result or {}).get("outputs")
    if not isinstance(outputs, dict) or outputs.get("role") != "chief-0":
        return f"the TFJob's outputs are {outputs!r}, not the chief's return value"
    return None if shown == outputs else f"show_metrics received {shown!r}, the chief returned {outputs!r}"


def templated_labels(evidence: Evidence) -> str | None:
    if not evidence.attempts:
        return None
    labels = evidence.attempts[-1].job.labels
    wanted = {"team": "vision", "data-date": evidence.logical_date}
    got = {key: labels.get(key) for key in wanted}
    return None if got == wanted else f"rendered labels {got}, expected {wanted}"


def sensor_saw_the_submitted_job(evidence: Evidence) -> str | None:
    uid = evidence.attempts[0].job.uid if evidence.attempts else None
    seen = (evidence.result or {}).get("uid")
    return None if seen == uid and uid else f"the sensor judged TFJob uid {seen}, the submitted one is {uid}"


def deploy_started_by_the_training(evidence: Evidence) -> str | None:
    """The consumer's run was asset-triggered by this training run's event, and its task read the
    model URI, loss and TFJob UID from that event."""
    triggered, run = evidence.triggered, evidence.run
    if triggered is None or run is None:
        return "the asset-scheduled DAG did not run"
    if triggered.run_type != "asset_triggered":
        return f"{triggered.dag_id} run {triggered.run_id} is {triggered.run_type}, not asset_triggered"
    sources = {
        (event.source_dag_id, event.source_run_id, event.source_task_id) for event in triggered.consumed
    }
    if sources != {(run.dag_id, run.run_id, evidence.scenario.task_id)}:
        return f"{triggered.dag_id} consumed events of {sorted(map(str, sources))}, not of this training"
    shown = triggered.result if isinstance(triggered.result, dict) else {}
    outputs = (evidence.result or {}).get("outputs") or {}
    uid = evidence.attempts[-1].job.uid if evidence.attempts else None
    wanted = {"model_uri": outputs.get("model_uri"), "loss": outputs.get("loss"), "tfjob_uid": uid}
    got = {key: shown.get(key) for key in wanted}
    if triggered.task_state != "success" or got != wanted or not uid:
        return f"{triggered.dag_id} task ended {triggered.task_state} with {got}, expected {wanted}"
    return None


def distinct_jobs(evidence: Evidence) -> str | None:
    uids = [attempt.job.uid for attempt in evidence.attempts]
    return None if len(set(uids)) == len(uids) else f"a TFJob was reused across tries: {uids}"


def on_jobset(evidence: Evidence) -> str | None:
    """Every job the task created was a JobSet (no TFJob: the training operator had no part)."""
    kinds = sorted({attempt.job.kind for attempt in evidence.attempts})
    return None if kinds == ["JobSet"] else f"expected JobSets only, the task created: {kinds}"


# --- the scenarios -------------------------------------------------------------------------------------

SUCCEEDED = ExpectedAttempt("Succeeded", "ChiefSucceeded")

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        key="distributed",
        title="Distributed training: Chief + 2 Workers + 1 PS, typed parameters, deferrable",
        dag_id="tfjob_distributed_training",
        task_id="train",
        expect_state="success",
        expect_try=1,
        expect_attempts=(SUCCEEDED,),
        story="the chief's success decides the job; the result dict feeds register_model",
        checks=(
            replicas_present(0, {"Chief": 1, "Worker": 2, "PS": 1}),
            replica_exits(0, "Chief", 0, [0]),
            related_task("register_model", "success"),
            downstream_used_result,
            downstream_got_the_outputs,
        ),
    ),
    Scenario(
        key="taskflow",
        title="@task.tfjob: a Python function as Chief + 2 Workers + 1 PS, deferrable",
        dag_id="tfjob_taskflow",
        task_id="train",
        expect_state="success",
        expect_try=1,
        expect_attempts=(SUCCEEDED,),
        story="every replica runs the function; the chief's return value is the task's XCom, "
        "shown by a @task",
        checks=(
            replicas_present(0, {"Chief": 1, "Worker": 2, "PS": 1}),
            related_task("pick_data", "success"),
            related_task("show_metrics", "success"),
            downstream_got_the_chiefs_return_value,
        ),
        result_key="tfjob_result",
    ),
    Scenario(
        key="yaml",
        title="TFJob from a Jinja-templated YAML file ({{ ds }}, params)",
        dag_id="tfjob_from_yaml",
        task_id="train_from_yaml",
        expect_state="success",
        expect_try=1,
        expect_attempts=(SUCCEEDED,),
        story="labels and arguments rendered from the logical date and the DAG's params",
        checks=(replicas_present(0, {"Chief": 1, "Worker": 2, "PS": 1}), templated_labels),
    ),
    Scenario(
        key="sensor",
        title="Submit without waiting, then a deferrable TFJobSensor",
        dag_id="tfjob_sensor",
        task_id="wait_for_training",
        job_task_id="submit",
        expect_state="success",
        expect_try=1,
        expect_attempts=(SUCCEEDED,),
        story="submit returns at once; the sensor judges the same TFJob in the triggerer",
        checks=(related_task("submit", "success"), sensor_saw_the_submitted_job),
    ),
    Scenario(
        key="recovers",
        title="ExitCode policy: worker killed (137), recreated, recovers inside the TFJob",
        dag_id="tfjob_retry_policies",
        task_id="crash_recovers_inside_tfjob",
        expect_state="success",
        expect_try=1,
        expect_attempts=(SUCCEEDED,),
        story="the training operator replaces the pod; it resumes from its checkpoint; one Airflow try",
        checks=(replica_recreated_after(0, "Worker", 1, 137),),
    ),
    Scenario(
        key="recovers-jobset",
        title='The same on JobSet (backend="jobset"): worker killed (137), replaced, recovers',
        dag_id="tfjob_on_jobset",
        task_id="crash_recovers_on_jobset",
        expect_state="success",
        expect_try=1,
        expect_attempts=(SUCCEEDED,),
        story="the Job controller replaces the pod for the same index (podFailurePolicy ignores 137); "
        "no training operator; one Airflow try",
        checks=(replica_recreated_after(0, "Worker", 1, 137), on_jobset),
    ),
    Scenario(
        key="permanent",
        title="Permanent error: worker exits 3, task fails without using its retries",
        dag_id="tfjob_retry_policies",
        task_id="permanent_error_fails_fast",
        expect_state="failed",
        expect_try=1,
        expect_attempts=(ExpectedAttempt("Failed", "PermanentExitCode", "permanent"),),
        story="exit codes 1-127 are the program's own error: AirflowFailException, 2 retries left unused "
        "(so this DAG run ends failed, by design)",
        checks=(replica_exits(0, "Worker", 0, [3]),),
    ),
    Scenario(
        key="transient",
        title="Transient failure (137 under Never) fixed by an Airflow retry",
        dag_id="tfjob_retry_policies",
        task_id="transient_failure_retried_by_airflow",
        expect_state="success",
        expect_try=2,
        expect_attempts=(
            ExpectedAttempt("Failed", "RetryableExitCode", "retryable"),
            SUCCEEDED,
        ),
        story="try 1's TFJob fails retryably; try 2 submits a fresh TFJob that resumes from the checkpoint",
        checks=(replica_exits(0, "Worker", 1, [137]), distinct_jobs),
    ),
    Scenario(
        key="asset",
        title="A trained model is an asset event: deploy_model starts for it",
        dag_id="tfjob_model_training",
        task_id="train",
        expect_state="success",
        expect_try=1,
        expect_attempts=(SUCCEEDED,),
        story="the event's extra carries the model URI, loss and TFJob uid; the asset-scheduled "
        "deploy_model run is created from it by the scheduler's own step",
        checks=(deploy_started_by_the_training,),
        result_key="tfjob_result",
        triggers=("deploy_model", "show_model"),
    ),
)


def build_attempts(
    observer: ClusterObserver,
    *,
    job_name: str,
    result: Any,
    last_failure: Any,
    log_text: str,
) -> tuple[list[Attempt], list[str]]:
    """Every TFJob the observer saw under ``job_name``, oldest first, each with its verdict.

    A success's verdict is the task's ``return_value`` (``result``); the last failure's is its
    ``tfjob_failure`` XCom (``last_failure``); Airflow clears a task's XComs when it retries it, so
    earlier failures' verdicts come from the exceptions in ``log_text`` (one per failed try, in
    order).  Returns the attempts and any inconsistency (a logged failure no TFJob accounts for).
    """
    logged: list[LoggedVerdict] = [
        verdict for verdict in logged_failures(log_text) if verdict.job == job_name
    ]
    attempts: list[Attempt] = []
    for job in observer.jobs_named(job_name):
        annotated = job.annotations.get(ANNOTATION_TRY_NUMBER)
        seen = Attempt(
            job=job,
            try_number=int(annotated) if annotated and annotated.isdigit() else None,
            rows=observer.replica_rows(job.uid),
            message="no verdict was reported",
        )
        if isinstance(result, dict) and result.get("uid") == job.uid:
            seen = replace(
                seen,
                state=str(result.get("state")),
                reason=str(result.get("reason")),
                message=str(result.get("message")),
            )
        elif isinstance(last_failure, dict) and last_failure.get("uid") == job.uid:
            if logged:
                logged.pop()  # the same failure, logged too (the last one)
            seen = replace(
                seen,
                state="Failed",
                reason=str(last_failure.get("reason")),
                kind="retryable" if last_failure.get("retryable") else "permanent",
                message=str(last_failure.get("message")),
            )
        elif logged:
            verdict = logged.pop(0)
            seen = replace(
                seen, state="Failed", reason=verdict.reason, kind=verdict.kind, message=verdict.message
            )
        attempts.append(seen)
    problems = (
        [f"{len(logged)} failure verdict(s) in the log match no TFJob the cluster showed"] if logged else []
    )
    return attempts, problems


def evaluate(evidence: Evidence) -> list[str]:
    """Every way the evidence differs from the scenario (empty: it ended as expected)."""
    scenario = evidence.scenario
    problems = list(evidence.problems_running)
    task = evidence.task
    if task is None:
        return [*problems, f"task {scenario.task_id} has no task instance (did the DAG run?)"]
    if task.state != scenario.expect_state or task.try_number != scenario.expect_try:
        problems.append(
            f"task ended {task.state} on try {task.try_number}, "
            f"expected {scenario.expect_state} on try {scenario.expect_try}"
        )
    expected = scenario.expect_attempts
    if len(evidence.attempts) != len(expected):
        problems.append(f"{len(evidence.attempts)} TFJob(s) created, expected {len(expected)}")
    for number, (attempt, wanted) in enumerate(zip(evidence.attempts, expected, strict=False), start=1):
        got = (attempt.state, attempt.reason, attempt.kind)
        if got != (wanted.state, wanted.reason, wanted.kind):
            problems.append(
                f"TFJob {number}: verdict {attempt.state} {attempt.reason} {attempt.kind}".rstrip()
                + f", expected {wanted.state} {wanted.reason} {wanted.kind}".rstrip()
            )
    for check in scenario.checks:
        problem = check(evidence)
        if problem:
            problems.append(problem)
    return problems

"""Judge the example DAGs' runs under the full stack with the demo's own scenarios.

Why reuse them: ``make demo`` and the full-stack test promise the same endings (a distributed job
succeeds, a permanent error fails without retries, a transient one succeeds on try 2, ...), so
they are written down once (:data:`tfjob_provider.demo.scenarios.SCENARIOS`).  Here the evidence
comes from the REST API — task instances, XComs, the task logs of earlier tries — and from the
cluster observer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tfjob_provider.demo.outcomes import XCOM_TFJOB_FAILURE, XCOM_TFJOB_NAME, RunRecord, TaskRecord
from tfjob_provider.demo.scenarios import SCENARIOS, Evidence, build_attempts, evaluate
from tfjob_provider.demo.summary import ScenarioResult
from tfjob_provider.naming import job_name_for

if TYPE_CHECKING:
    from tests.e2e.conftest import FullStack


def example_results(full: FullStack, *, timeout: float) -> list[ScenarioResult]:
    """Wait for every example run to end, then evaluate every scenario."""
    rest = full.airflow.rest
    runs = {
        dag_id: rest.wait_for_run(dag_id, run_id, timeout=timeout)
        for dag_id, run_id in full.example_runs.items()
    }
    time.sleep(0.5)  # the observer's last events (pod deletions) arrive within milliseconds
    results = []
    for scenario in SCENARIOS:
        run_id = full.example_runs[scenario.dag_id]
        instances = rest.task_instances(scenario.dag_id, run_id)
        tasks = {
            task_id: TaskRecord(
                task_id=task_id,
                state=ti.get("state"),
                try_number=int(ti["try_number"]),
                max_tries=int(ti["max_tries"]),
            )
            for task_id, ti in instances.items()
        }
        task = tasks.get(scenario.task_id)
        submitting = scenario.submitting_task
        job_name = rest.xcom(scenario.dag_id, run_id, submitting, XCOM_TFJOB_NAME) or job_name_for(
            dag_id=scenario.dag_id, task_id=submitting, run_id=run_id, map_index=-1
        )
        result = rest.xcom(scenario.dag_id, run_id, scenario.task_id)
        tries = task.try_number if task is not None else 0
        log_text = "\n".join(
            rest.task_log(scenario.dag_id, run_id, scenario.task_id, number) for number in range(1, tries + 1)
        )
        attempts, problems = build_attempts(
            full.observer,
            job_name=str(job_name),
            result=result,
            last_failure=rest.xcom(scenario.dag_id, run_id, scenario.task_id, XCOM_TFJOB_FAILURE),
            log_text=log_text,
        )
        related = {task_id: record for task_id, record in tasks.items() if task_id != scenario.task_id}
        evidence = Evidence(
            scenario=scenario,
            run=RunRecord(
                dag_id=scenario.dag_id, run_id=run_id, state=runs[scenario.dag_id].get("state"), tasks=tasks
            ),
            task=task,
            attempts=attempts,
            result=result if isinstance(result, dict) else None,
            related=related,
            related_results={task_id: rest.xcom(scenario.dag_id, run_id, task_id) for task_id in related},
            logical_date=full.logical_date,
            problems_running=problems,
        )
        results.append(ScenarioResult(evidence=evidence, problems=evaluate(evidence)))
    return results

"""The demo's last screen: one block per scenario that a person reads at a glance.

Why plain aligned text: it must read the same in a terminal, a CI log and a bug report.  Each
block answers, in order: did it end as expected (PASS/FAIL and why not), what Airflow did (task
state, try number, retries left), which TFJob(s) it ran, the provider's verdict and its reason,
and what each replica did (phase, exit code(s), restarts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from demo.observer import iter_rows
from demo.scenarios import Attempt, Evidence

INDENT = " " * 6


@dataclass(frozen=True)
class ScenarioResult:
    evidence: Evidence
    problems: list[str]

    @property
    def passed(self) -> bool:
        return not self.problems


def _airflow_line(evidence: Evidence) -> str:
    scenario, task = evidence.scenario, evidence.task
    where = f"{scenario.dag_id}.{scenario.task_id}"
    if task is None:
        return f"Airflow   {where}: did not run"
    retries = task.max_tries
    used = max(task.try_number - 1, 0)
    if task.state == "failed":
        left = max(retries - used, 0)
        budget = f"{left} of {retries} retries left unused" if left else f"all {retries} retries used"
    else:
        budget = f"{used} of {retries} retries used"
    return f"Airflow   {where}: {task.state} on try {task.try_number} ({budget})"


def _short(uid: str) -> str:
    return uid[:8] if uid else "?"


def _attempt_lines(attempt: Attempt, *, number: int, total: int) -> list[str]:
    job = attempt.job
    label = f"{job.kind} {number}/{total}" if total > 1 else job.kind
    try_text = f"try {attempt.try_number}" if attempt.try_number is not None else "try ?"
    fate = "; deleted since" if job.deleted else "; still exists"
    lines = [f"{label:<9} {job.namespace}/{job.name}  uid {_short(job.uid)}  (created by {try_text}{fate})"]
    kind = f", {attempt.kind}" if attempt.kind else ""
    message = attempt.message
    for verb in ("succeeded", "failed"):  # the name is on the line above
        prefix = f"{job.kind} {job.namespace}/{job.name} {verb}: "
        if message.startswith(prefix):
            message = message[len(prefix) :]
    lines.append(f"{'verdict':<9} {attempt.state} ({attempt.reason}{kind}): {message}")
    header = ("replica", "index", "phase", "exit", "restarts", "")
    cells = [header, *iter_rows(attempt.rows)]
    widths = [max(len(row[column]) for row in cells) for column in range(len(header))]
    for row in cells:
        text = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        lines.append(f"{'':<9} {text}")
    if not attempt.rows:
        lines.append(f"{'':<9} (no pods were seen)")
    return lines


def _triggered_lines(evidence: Evidence) -> list[str]:
    """The asset-scheduled run the training's asset event started, and what its task read."""
    triggered = evidence.triggered
    if evidence.scenario.triggers is None:
        return []
    if triggered is None:
        return [f"{'Asset':<9} {evidence.scenario.triggers[0]} did not run"]
    sources = ", ".join(
        f"{event.source_dag_id} run {event.source_run_id} task {event.source_task_id}"
        for event in triggered.consumed
    )
    lines = [
        f"{'Asset':<9} {triggered.dag_id} run {triggered.run_id} ({triggered.run_type}), "
        f"triggered by the asset event of {sources or 'no event'}"
    ]
    shown = triggered.result if isinstance(triggered.result, dict) else {}
    lines.append(
        f"{'':<9} {triggered.dag_id} task {triggered.task_state}: model {shown.get('model_uri')}, "
        f"loss {shown.get('loss')}, TFJob uid {_short(str(shown.get('tfjob_uid') or ''))}"
    )
    return lines


def render_scenario(result: ScenarioResult) -> str:
    evidence = result.evidence
    scenario = evidence.scenario
    lines = [f"{'PASS' if result.passed else 'FAIL':<6}{scenario.title}", f"{INDENT}{scenario.story}"]
    lines.append(INDENT + _airflow_line(evidence))
    for number, attempt in enumerate(evidence.attempts, start=1):
        lines.extend(
            INDENT + line for line in _attempt_lines(attempt, number=number, total=len(evidence.attempts))
        )
    if not evidence.attempts:
        lines.append(f"{INDENT}TFJob     none was seen")
    lines.extend(INDENT + line for line in _triggered_lines(evidence))
    for problem in result.problems:
        lines.append(f"{INDENT}!! {problem}")
    return "\n".join(lines)


def render_summary(results: Sequence[ScenarioResult], *, title: str, notes: Sequence[str] = ()) -> str:
    """The whole summary: a title, one block per scenario, then the verdict of the demo."""
    rule = "=" * 100
    blocks = [rule, title, rule]
    for result in results:
        blocks.append(render_scenario(result))
        blocks.append("")
    failed = [result.evidence.scenario.key for result in results if not result.passed]
    blocks.extend(notes)
    if failed:
        blocks.append(
            f"{len(failed)} of {len(results)} scenarios did NOT end as expected: {', '.join(failed)}"
        )
    else:
        blocks.append(f"All {len(results)} scenarios ended as expected.")
    blocks.append(rule)
    return "\n".join(blocks)

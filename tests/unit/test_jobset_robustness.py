"""decide_jobset() never raises and returns a well-formed verdict, whatever the API server sends.

Realistic JobSets, Jobs and pods (the provider's own translation, the controllers' labels) with
random parts replaced by random JSON: the strategy reaches the mapping code with odd shapes
where it expects labels, indexes, owner references, conditions and counts.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.factories import NOW
from tests.unit.jobset_states import child_job, jobset_condition, jobset_pod, make_jobset
from tests.unit.test_policy_robustness import any_json, assert_well_formed
from tfjob_provider._jobset import decide_jobset, names, tfjob_to_jobset
from tfjob_provider.manifest import ManifestError, build_tfjob


def _baseline() -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    jobset = make_jobset(chief=1, worker=3, ps=1, restart_policy="ExitCode", active_deadline_seconds=600)
    jobset["spec"]["failurePolicy"] = {"maxRestarts": 2, "rules": [{"action": "RestartJobSet"}]}
    jobset["status"]["conditions"] = [jobset_condition("RestartingJobSet")]
    jobs = [child_job(jobset, rjob["name"]) for rjob in jobset["spec"]["replicatedJobs"]]
    jobs[1] = child_job(jobset, "ps", finished=names.JOB_FAILED, reason="PodFailurePolicy")
    pods = [
        jobset_pod("chief", 0, phase="Running"),
        jobset_pod("worker", 0, phase="Succeeded"),
        jobset_pod("worker", 1, phase="Failed", exit_code=137, suffix="old01"),
        jobset_pod("worker", 1, phase="Running", suffix="new01"),
        jobset_pod("worker", 2, phase="Pending", waiting="ErrImagePull"),
        jobset_pod("ps", 0, phase="Failed", exit_code=1, deleting=True),
    ]
    return jobset, jobs, pods


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


BASELINE = _baseline()
PATHS = [path for path in _paths(list(BASELINE)) if len(path) >= 2]


def _replaced(document: list[Any], path: tuple[Any, ...], value: Any) -> list[Any]:
    result = copy.deepcopy(document)
    parent: Any = result
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return result


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), any_json), min_size=1, max_size=4))
def test_random_parts_replaced_never_break_the_verdict(changes: list[tuple[tuple[Any, ...], Any]]) -> None:
    document: list[Any] = list(BASELINE)
    for path, value in changes:
        try:
            document = _replaced(document, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the parent of this path
    jobset, jobs, pods = document
    verdict = decide_jobset(jobset, jobs, pods, now=NOW)
    assert_well_formed(verdict)
    assert "TFJob " not in verdict.message


def test_the_baseline_reaches_the_interesting_paths() -> None:
    """The unchanged baseline: a restart the failure policy will make, seen through replaced pods."""
    verdict = decide_jobset(*BASELINE, now=NOW)
    assert_well_formed(verdict)
    assert verdict.state.value in ("Restarting", "Failed")


TFJOB = build_tfjob(
    name="mnist",
    image="trainer:1",
    chief=1,
    worker={"replicas": 2, "restart_policy": "ExitCode"},
    ps=1,
    env={"A": "1"},
    volumes=[{"name": "data", "emptyDir": {}}],
    volume_mounts=[{"name": "data", "mountPath": "/data"}],
    backoff_limit=3,
)
TFJOB_PATHS = [path for path in _paths(TFJOB) if path]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(TFJOB_PATHS), any_json), min_size=1, max_size=3))
def test_any_manifest_is_translated_or_refused_with_problems(
    changes: list[tuple[tuple[Any, ...], Any]],
) -> None:
    manifest: Any = TFJOB
    for path, value in changes:
        try:
            manifest = _replaced([manifest], (0, *path), value)[0]
        except (KeyError, IndexError, TypeError):
            continue
    try:
        jobset = tfjob_to_jobset(manifest)
    except ManifestError as error:
        assert error.problems and all(problem.field and problem.fix for problem in error.problems)
        return
    assert jobset["kind"] == "JobSet" and jobset["spec"]["replicatedJobs"]

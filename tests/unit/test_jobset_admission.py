"""Every translation passes JobSet's admission webhook and, later, batch/v1 Job validation.

JobSet's webhook checks a JobSet when it is created; the Jobs in it are validated only when the
JobSet controller creates them, so a bad Job template surfaces as a ``JobCreationFailed`` event
long after the Airflow task submitted it.  The rules below are those two validators' create-time
rules for the fields the translation writes, restated for these tests from
https://github.com/kubernetes-sigs/jobset/blob/v0.6.0/pkg/webhooks/jobset_webhook.go (ValidateCreate)
and https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/batch/validation/validation.go
(ValidateJobSpec).  They run over the typed builds of ``test_jobset_crd`` and over every manifest
of the TFJob corpus that translates; a manifest that does not must be refused with a
ManifestError, never with another exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.unit.jobset_states import make_jobset
from tests.unit.test_jobset_crd import BUILDS, schema_errors
from tfjob_provider._jobset import names, tfjob_to_jobset
from tfjob_provider.manifest import ManifestError, load_tfjob

HERE = Path(__file__).parent
MANIFESTS = sorted(
    path
    for folder in ("manifest_corpus", "manifest_examples")
    for path in (HERE / folder).iterdir()
    if path.suffix in (".yaml", ".json")
)
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_INT32_MAX = 2**31 - 1
_MAX_INDEXED = 100_000
_INDEX_INTERVALS = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")


def _dns1035(value: str) -> bool:
    return len(value) <= 63 and _DNS1035.fullmatch(value) is not None


def webhook_problems(jobset: Mapping[str, Any]) -> list[str]:
    """JobSet's ValidateCreate, for the fields the translation writes."""
    problems: list[str] = []
    name = jobset["metadata"]["name"]
    spec = jobset["spec"]
    subdomain = spec.get("network", {}).get("subdomain")
    if subdomain and not _dns1035(subdomain):
        problems.append(f"subdomain {subdomain!r} is not a DNS-1035 label")
    rjob_names = [rjob["name"] for rjob in spec["replicatedJobs"]]
    for rjob in spec["replicatedJobs"]:
        job_spec = rjob["template"]["spec"]
        replicas = rjob.get("replicas", 1)
        if job_spec.get("parallelism", 1) * replicas > _INT32_MAX:
            problems.append(f"{rjob['name']}: replicas x parallelism over int32")
        if not _dns1035(names.job_name(name, rjob["name"], replicas - 1)):
            problems.append(f"{rjob['name']}: job name too long or not DNS-1035")
        if job_spec.get("completionMode") == "Indexed" and job_spec.get("completions") is not None:
            pod = names.pod_hostname(name, rjob["name"], replicas - 1, job_spec["completions"] - 1) + "-abcde"
            if not _dns1035(pod):
                problems.append(f"{rjob['name']}: pod name {pod!r} too long or not DNS-1035")
    for target in spec.get("successPolicy", {}).get("targetReplicatedJobs", []):
        if target not in rjob_names:
            problems.append(f"successPolicy target {target!r} is not a replicated Job")
    managed_by = spec.get("managedBy")
    if managed_by is not None and (len(managed_by) > 63 or "/" not in managed_by):
        problems.append("managedBy is not a domain-prefixed path of at most 63 characters")
    return problems


def _exit_code_problems(where: str, requirement: Mapping[str, Any]) -> list[str]:
    values = requirement.get("values", [])
    problems = []
    if not 0 < len(values) <= 255:
        problems.append(f"{where}: 1 to 255 exit code values")
    if values != sorted(set(values)):
        problems.append(f"{where}: exit codes must be ordered without duplicates")
    if requirement.get("operator") == "In" and 0 in values:
        problems.append(f"{where}: In may not list exit code 0")
    if requirement.get("operator") not in ("In", "NotIn"):
        problems.append(f"{where}: operator In or NotIn")
    return problems


def batch_problems(rjob: str, job_spec: Mapping[str, Any]) -> list[str]:
    """batch/v1 ValidateJobSpec, for the fields the translation writes."""
    problems: list[str] = []
    pod_restart = job_spec["template"]["spec"].get("restartPolicy")
    if pod_restart not in ("OnFailure", "Never"):
        problems.append(f"{rjob}: a Job's pods restart OnFailure or Never, not {pod_restart}")
    indexed = job_spec.get("completionMode") == "Indexed"
    completions = job_spec.get("completions")
    if indexed and (
        completions is None or completions > _MAX_INDEXED or job_spec.get("parallelism", 1) > _MAX_INDEXED
    ):
        problems.append(f"{rjob}: an Indexed Job needs completions, and at most {_MAX_INDEXED} of them")
    if job_spec.get("backoffLimit", 0) < 0 or job_spec.get("backoffLimit", 0) > _INT32_MAX:
        problems.append(f"{rjob}: backoffLimit out of range")
    if job_spec.get("activeDeadlineSeconds", 1) < 0:
        problems.append(f"{rjob}: activeDeadlineSeconds negative")
    pod_failure_policy = job_spec.get("podFailurePolicy")
    if pod_failure_policy is not None:
        if pod_restart != "Never":
            problems.append(f"{rjob}: podFailurePolicy needs the pods' restartPolicy Never")
        if job_spec.get("podReplacementPolicy", "Failed") != "Failed":
            problems.append(f"{rjob}: podFailurePolicy allows only podReplacementPolicy Failed")
        rules = pod_failure_policy.get("rules", [])
        if len(rules) > 20:
            problems.append(f"{rjob}: at most 20 podFailurePolicy rules")
        for position, rule in enumerate(rules):
            where = f"{rjob}: podFailurePolicy.rules[{position}]"
            if rule.get("action") not in ("FailJob", "Ignore", "Count", "FailIndex"):
                problems.append(f"{where}: unknown action")
            if ("onExitCodes" in rule) == ("onPodConditions" in rule):
                problems.append(f"{where}: exactly one of onExitCodes and onPodConditions")
            if "onExitCodes" in rule:
                problems.extend(_exit_code_problems(where, rule["onExitCodes"]))
    if job_spec.get("podReplacementPolicy") not in (None, "Failed", "TerminatingOrFailed"):
        problems.append(f"{rjob}: unknown podReplacementPolicy")
    success_policy = job_spec.get("successPolicy")
    if success_policy is not None:
        if not indexed:
            problems.append(f"{rjob}: successPolicy needs completionMode Indexed")
        rules = success_policy.get("rules", [])
        if not 0 < len(rules) <= 20:
            problems.append(f"{rjob}: 1 to 20 successPolicy rules")
        for rule in rules:
            indexes = rule.get("succeededIndexes")
            if indexes is None and rule.get("succeededCount") is None:
                problems.append(f"{rjob}: a successPolicy rule needs succeededIndexes or succeededCount")
            if indexes is not None and (
                _INDEX_INTERVALS.fullmatch(indexes) is None
                or max(int(part) for part in re.split(r"[-,]", indexes)) >= (completions or 0)
            ):
                problems.append(f"{rjob}: succeededIndexes {indexes!r} outside 0..completions-1")
    return problems


def admission_problems(jobset: Mapping[str, Any]) -> list[str]:
    problems = webhook_problems(jobset) + schema_errors(jobset)
    for rjob in jobset["spec"]["replicatedJobs"]:
        problems.extend(batch_problems(rjob["name"], rjob["template"]["spec"]))
    return problems


def _builds() -> Iterator[dict[str, Any]]:
    for build in BUILDS.values():
        jobset = make_jobset(**build)
        jobset.pop("status")
        yield jobset


@pytest.mark.parametrize("jobset", list(_builds()), ids=list(BUILDS))
def test_typed_builds_pass_admission(jobset: dict[str, Any]) -> None:
    assert admission_problems(jobset) == []


@pytest.mark.parametrize("path", MANIFESTS, ids=[path.name for path in MANIFESTS])
def test_every_corpus_manifest_is_translated_validly_or_refused(path: Path) -> None:
    try:
        jobset = tfjob_to_jobset(load_tfjob(path))
    except ManifestError as error:
        assert error.problems  # refused with problems, each naming its field
        return
    assert admission_problems(jobset) == []


def test_the_rules_catch_a_bad_translation() -> None:
    """The checks above can fail: a template they must refuse."""
    jobset = make_jobset(worker=2, restart_policy="ExitCode")
    jobset.pop("status")
    job_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    job_spec["template"]["spec"]["restartPolicy"] = "OnFailure"
    job_spec["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] = [0, 2, 1]
    job_spec["successPolicy"] = {"rules": [{"succeededIndexes": "5"}]}
    jobset["spec"]["successPolicy"]["targetReplicatedJobs"] = ["chief"]
    problems = admission_problems(jobset)
    assert any("restartPolicy Never" in problem for problem in problems), problems
    assert any("ordered" in problem for problem in problems), problems
    assert any("may not list exit code 0" in problem for problem in problems), problems
    assert any("succeededIndexes" in problem for problem in problems), problems
    assert any("successPolicy target" in problem for problem in problems), problems

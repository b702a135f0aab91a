"""A JobSet's replicated Jobs read as TFJob replica types: name, count, restart behaviour."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tfjob_provider._jobset.restarts import restart_policy_of
from tfjob_provider._policy.readers import as_int, as_list, as_mapping, as_str
from tfjob_provider._policy.tfjob import CANONICAL_TYPES


@dataclass(frozen=True)
class ReplicatedJob:
    """One replicated Job as a replica type: its name in the JobSet and in the TFJob view."""

    name: str
    replica_type: str
    jobs: int
    completions: int
    restart_policy: str
    job_spec: Mapping[str, Any]


def read_replicated_jobs(spec: Mapping[str, Any]) -> dict[str, ReplicatedJob]:
    """Replicated Jobs by name; the first one of each canonical type keeps the type's name."""
    found: dict[str, ReplicatedJob] = {}
    taken: set[str] = set()
    for item in as_list(spec.get("replicatedJobs")):
        rjob = as_mapping(item)
        name = as_str(rjob.get("name"))
        if not name or name in found:
            continue
        job_spec = as_mapping(as_mapping(rjob.get("template")).get("spec"))
        completions = as_int(job_spec.get("completions"))
        if completions is None:
            completions = as_int(job_spec.get("parallelism"))
        canonical = CANONICAL_TYPES.get(name.lower())
        replica_type = canonical if canonical is not None and canonical not in taken else name
        taken.add(replica_type)
        replicas = as_int(rjob.get("replicas"))
        found[name] = ReplicatedJob(
            name=name,
            replica_type=replica_type,
            jobs=1 if replicas is None else max(replicas, 0),
            completions=1 if completions is None else max(completions, 0),
            restart_policy=restart_policy_of(job_spec),
            job_spec=job_spec,
        )
    return found

""":func:`decide_jobset`: the TFJob engine's verdict on a JobSet, its Jobs and its pods, worded for
the JobSet; a failure its own failure policy restarts from is reported Restarting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tfjob_provider._jobset.judging import decide_jobset_with_next_change
from tfjob_provider.policy import Rules, Verdict


def decide_jobset(
    jobset: Mapping[str, Any],
    jobs: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    *,
    now: datetime | None = None,
    rules: Rules | None = None,
) -> Verdict:
    """Judge a JobSet from its own object, its child Jobs and their pods (JSON as served).

    The same contract as :func:`~tfjob_provider.policy.decide`: never raises on malformed input;
    ``operator_finished`` is True only when the JobSet carries Completed or Failed itself.
    """
    return decide_jobset_with_next_change(jobset, jobs, pods, now=now, rules=rules)[0]

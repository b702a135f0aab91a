"""``podFailurePolicy`` matching (pod_failure_policy.go): the first rule a failed pod matches decides."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Pod = dict[str, Any]

FAIL_JOB, IGNORE, COUNT, FAIL_INDEX = "FailJob", "Ignore", "Count", "FailIndex"


@dataclass(frozen=True)
class Match:
    """What the policy says about one failed pod.

    ``action`` is ``None`` when no rule matched (the failure counts); ``count_failed`` is whether
    the failure counts against ``backoffLimit``; ``message`` is set for ``FailJob``.
    """

    action: str | None
    count_failed: bool
    message: str | None = None


NO_MATCH = Match(None, True)


def match_pod_failure_policy(policy: dict[str, Any] | None, pod: Pod) -> Match:
    """Walk the rules in order; exit code 0 never matches, containers without a terminated state neither."""
    if not policy:
        return NO_MATCH
    meta = pod["metadata"]
    where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        if rule.get("onExitCodes") is not None:
            container = _matching_container(pod.get("status") or {}, rule["onExitCodes"])
            if container is None:
                continue
            exit_code = container["state"]["terminated"].get("exitCode")
            detail = (
                f"Container {container.get('name')} for pod {where} failed with exit code {exit_code} "
                f"matching {action} rule at index {index}"
            )
        elif rule.get("onPodConditions"):
            condition = _matching_condition(pod.get("status") or {}, rule["onPodConditions"])
            if condition is None:
                continue
            detail = f"Pod {where} has condition {condition} matching {action} rule at index {index}"
        else:
            continue
        if action == IGNORE:
            return Match(IGNORE, False)
        if action == FAIL_JOB:
            return Match(FAIL_JOB, True, detail)
        if action in (COUNT, FAIL_INDEX):
            return Match(action, True)
    return NO_MATCH


def _matching_container(status: dict[str, Any], requirement: dict[str, Any]) -> dict[str, Any] | None:
    for statuses in (status.get("containerStatuses"), status.get("initContainerStatuses")):
        for container in statuses or []:
            terminated = (container.get("state") or {}).get("terminated")
            if not terminated:
                continue  # still running or terminating: no exit code to match
            wanted = requirement.get("containerName")
            if wanted is not None and wanted != container.get("name"):
                continue
            code = terminated.get("exitCode")
            if code == 0:
                continue
            values = requirement.get("values") or []
            operator = requirement.get("operator")
            if (operator == "In" and code in values) or (operator == "NotIn" and code not in values):
                return dict(container)
    return None


def _matching_condition(status: dict[str, Any], patterns: list[dict[str, Any]]) -> str | None:
    for condition in status.get("conditions") or []:
        for pattern in patterns:
            if condition.get("type") == pattern.get("type") and condition.get("status") == pattern.get(
                "status", "True"
            ):
                return str(condition.get("type"))
    return None

""":func:`job_restart_fields`: a TFJob ``restartPolicy`` as a Job's pod ``restartPolicy``,
``backoffLimit`` and ``podFailurePolicy``; :func:`restart_policy_of` reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from tfjob_provider._jobset.names import UNLIMITED_BACKOFF
from tfjob_provider._policy.readers import as_int, as_list, as_mapping
from tfjob_provider._policy.rules import Rules
from tfjob_provider.constants import DEFAULT_CONTAINER_NAME

NEVER: Final = "Never"
ON_FAILURE: Final = "OnFailure"
EXIT_CODE: Final = "ExitCode"
ALWAYS: Final = "Always"

#: Linux exit codes a container can end with besides 0 (128 + N: killed by signal N).
_NON_ZERO_EXIT_CODES: Final = range(1, 256)
_DEFAULT_RULES: Final = Rules()


def permanent_exit_codes(rules: Rules | None = None) -> list[int]:
    """The non-zero exit codes the engine calls permanent: 1-127 unless *rules* move some."""
    chosen = rules or _DEFAULT_RULES
    return [code for code in _NON_ZERO_EXIT_CODES if not chosen.is_retryable_exit_code(code)]


def _on_exit_codes(codes: list[int]) -> dict[str, Any]:
    return {"containerName": DEFAULT_CONTAINER_NAME, "operator": "In", "values": list(codes)}


def _exit_code_policy(rules: Rules | None) -> dict[str, Any]:
    """ExitCode as a podFailurePolicy: a permanent code fails the Job, anything else is replaced.

    Rule order follows R3/R4: the ``tensorflow`` container's exit code decides first; a pod
    without one (evicted, preempted, node lost) is replaced without counting, as the operator
    replaces it (48879 is retryable).  The Job controller never matches exit code 0.
    """
    permanent = permanent_exit_codes(rules)
    retryable = [code for code in _NON_ZERO_EXIT_CODES if code not in permanent]
    policy_rules: list[dict[str, Any]] = []
    if permanent:
        policy_rules.append({"action": "FailJob", "onExitCodes": _on_exit_codes(permanent)})
    policy_rules.append(
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    )
    if retryable:
        policy_rules.append({"action": "Ignore", "onExitCodes": _on_exit_codes(retryable)})
    return {"rules": policy_rules}


def job_restart_fields(
    policy: str, *, backoff_limit: int | None, rules: Rules | None = None
) -> dict[str, Any]:
    """``restartPolicy`` (of the pod template), ``backoffLimit`` and ``podFailurePolicy`` for *policy*.

    * ``Never``: no pod is replaced (backoffLimit 0), so the first failure fails the Job (R7).
    * ``OnFailure``: the kubelet restarts the container in place; the Job's backoffLimit counts
      those restarts as the TFJob's does (R9), unlimited when the TFJob sets none.
    * ``ExitCode``: a permanent exit code fails the Job, any other failure is replaced without
      limit — the operator never counts ExitCode restarts either (kubeflow/trainer#2045).
    """
    if policy == ON_FAILURE:
        limit = UNLIMITED_BACKOFF if backoff_limit is None else backoff_limit
        return {"restartPolicy": ON_FAILURE, "backoffLimit": limit}
    if policy == EXIT_CODE:
        return {
            "restartPolicy": NEVER,
            "backoffLimit": UNLIMITED_BACKOFF,
            "podFailurePolicy": _exit_code_policy(rules),
        }
    return {"restartPolicy": NEVER, "backoffLimit": 0}


def _fails_on_exit_codes(pod_failure_policy: object) -> bool:
    for rule in as_list(as_mapping(pod_failure_policy).get("rules")):
        rule = as_mapping(rule)
        on_exit_codes = as_mapping(rule.get("onExitCodes"))
        container = on_exit_codes.get("containerName")
        if rule.get("action") == "FailJob" and on_exit_codes and container in (None, DEFAULT_CONTAINER_NAME):
            return True
    return False


def restart_policy_of(job_spec: Mapping[str, Any]) -> str:
    """The TFJob restart policy a Job template behaves like (for the verdict engine).

    A Job that replaces failed pods without an exit-code rule (``Never`` with a backoffLimit
    above 0, Kubernetes' default 6) restarts whatever the cause, as ``OnFailure`` replicas do.
    """
    pod_spec = as_mapping(as_mapping(job_spec.get("template")).get("spec"))
    if pod_spec.get("restartPolicy") == ON_FAILURE:
        return ON_FAILURE
    if _fails_on_exit_codes(job_spec.get("podFailurePolicy")):
        return EXIT_CODE
    backoff_limit = as_int(job_spec.get("backoffLimit"))
    return NEVER if backoff_limit == 0 else ON_FAILURE

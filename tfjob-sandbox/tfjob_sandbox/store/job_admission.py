"""kube-apiserver's defaulting and validation of batch/v1 Jobs (the registry strategy and validation)."""

from __future__ import annotations

import itertools
import re
from typing import Any

from tfjob_sandbox.api import job_wire
from tfjob_sandbox.store.builtin_admission import (
    Cause,
    cause,
    default_pod_spec,
    invalid_value,
    required,
    validate_pod_spec,
)

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
_OPERATORS = ("In", "NotIn")
_CONDITION_STATUSES = ("False", "True", "Unknown")
_INTERVALS = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
#: Template fields a suspended Job that never started may change (mutable scheduling directives).
_MUTABLE_WHILE_SUSPENDED = ("nodeSelector", "tolerations", "affinity", "schedulingGates")


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{value}"' for value in values)


def not_supported(field: str, value: Any, supported: tuple[str, ...]) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else repr(value)
    return cause(
        "FieldValueNotSupported", field, f"Unsupported value: {shown}: supported values: {_quoted(supported)}"
    )


def default_job(job: dict[str, Any]) -> None:
    """Fill a new Job's defaults in place: counts, modes, policies, the generated selector and labels."""
    spec = job.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", job_wire.NON_INDEXED)
    spec.setdefault("suspend", False)
    if spec.get("podReplacementPolicy") is None:
        has_failure_policy = spec.get("podFailurePolicy") is not None
        spec["podReplacementPolicy"] = (
            job_wire.REPLACE_FAILED if has_failure_policy else job_wire.TERMINATING_OR_FAILED
        )
    for rule in (spec.get("podFailurePolicy") or {}).get("rules") or []:
        patterns = rule.get("onPodConditions") if isinstance(rule, dict) else None
        for pattern in patterns or []:
            if isinstance(pattern, dict):
                pattern.setdefault("status", "True")
    template = spec.setdefault("template", {})
    if not isinstance(template, dict):
        return
    if isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"])
    if not spec.get("manualSelector"):
        _generate_selector(job, spec, template)


def _generate_selector(job: dict[str, Any], spec: dict[str, Any], template: dict[str, Any]) -> None:
    meta = job.get("metadata") or {}
    name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    if not isinstance(template.get("metadata"), dict):
        template["metadata"] = {}
    if not isinstance(template["metadata"].get("labels"), dict):
        template["metadata"]["labels"] = {}
    labels = template["metadata"]["labels"]
    for key in (job_wire.LEGACY_JOB_NAME, job_wire.JOB_NAME):
        labels.setdefault(key, name)
    for key in (job_wire.LEGACY_CONTROLLER_UID, job_wire.CONTROLLER_UID):
        labels.setdefault(key, uid)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    selector.setdefault("matchLabels", {}).setdefault(job_wire.CONTROLLER_UID, uid)


def selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    """Whether a metav1.LabelSelector (dict form) selects ``labels``; ``None`` selects nothing."""
    if not isinstance(selector, dict):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def validate_job(job: dict[str, Any]) -> list[Cause]:
    """The 422 causes of a Job, in kube-apiserver's order and wording (the parts the sandbox checks)."""
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    meta = job.get("metadata") or {}
    causes = _generated_selector_causes(meta, spec)
    causes += _spec_causes(spec)
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if spec.get("selector") is None:
        causes.append(required("spec.selector"))
    elif not selector_matches(spec.get("selector"), template_labels):
        causes.append(
            invalid_value(
                "spec.template.metadata.labels",
                template_labels,
                "`selector` does not match template `labels`",
            )
        )
    completions = spec.get("completions")
    if spec.get("completionMode") == job_wire.INDEXED and isinstance(completions, int) and completions > 0:
        hostname = f"{meta.get('name', '')}-{completions - 1}"
        if len(hostname) > 63 or not _DNS1123_LABEL.match(hostname):
            causes.append(
                invalid_value(
                    "metadata.name",
                    meta.get("name", ""),
                    f"will not able to create pod with invalid DNS label: {hostname}",
                )
            )
    return causes


def _generated_selector_causes(meta: dict[str, Any], spec: dict[str, Any]) -> list[Cause]:
    if spec.get("manualSelector") or not isinstance(spec.get("selector"), dict):
        return []
    expected = {
        job_wire.CONTROLLER_UID: str(meta.get("uid", "")),
        job_wire.JOB_NAME: str(meta.get("name", "")),
        job_wire.LEGACY_CONTROLLER_UID: str(meta.get("uid", "")),
        job_wire.LEGACY_JOB_NAME: str(meta.get("name", "")),
    }
    if selector_matches(spec["selector"], expected):
        return []
    return [invalid_value("spec.selector", spec["selector"], "`selector` not auto-generated")]


def _nonnegative(spec: dict[str, Any], key: str) -> list[Cause]:
    value = spec.get(key)
    if isinstance(value, int) and value < 0:
        return [invalid_value(f"spec.{key}", value, "must be greater than or equal to 0")]
    return []


def _spec_causes(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for key in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ):
        causes += _nonnegative(spec, key)
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        causes.append(required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    causes += _completion_mode_causes(spec)
    if spec.get("podFailurePolicy") is not None:
        causes += _pod_failure_policy_causes(spec)
    if spec.get("successPolicy") is not None:
        causes += _success_policy_causes(spec)
    causes += _replacement_policy_causes(spec)
    template = spec.get("template") or {}
    causes += validate_pod_spec(template.get("spec"), "spec.template.spec")
    restart = (template.get("spec") or {}).get("restartPolicy", "")
    if restart in ("Always", ""):
        causes.append(required("spec.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        causes.append(not_supported("spec.template.spec.restartPolicy", restart, ("OnFailure", "Never")))
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        causes.append(
            invalid_value(
                "spec.template.spec.restartPolicy",
                restart,
                'only "Never" is supported when podFailurePolicy is specified',
            )
        )
    return causes


def _completion_mode_causes(spec: dict[str, Any]) -> list[Cause]:
    mode = spec.get("completionMode")
    if mode not in (job_wire.NON_INDEXED, job_wire.INDEXED):
        return [not_supported("spec.completionMode", mode, (job_wire.NON_INDEXED, job_wire.INDEXED))]
    causes: list[Cause] = []
    if mode == job_wire.INDEXED:
        limit = job_wire.MAX_PARALLELISM_INDEXED
        completions, parallelism = spec.get("completions"), spec.get("parallelism")
        if completions is None:
            causes.append(required("spec.completions", "when completion mode is Indexed"))
        if isinstance(parallelism, int) and parallelism > limit:
            causes.append(
                invalid_value(
                    "spec.parallelism",
                    parallelism,
                    f"must be less than or equal to {limit} when completion mode is Indexed",
                )
            )
        if (
            isinstance(completions, int)
            and completions > limit
            and spec.get("backoffLimitPerIndex") is not None
        ) and spec.get("maxFailedIndexes") is None:
            causes.append(
                required("spec.maxFailedIndexes", f"must be specified when completions is above {limit}")
            )
        max_failed = spec.get("maxFailedIndexes")
        if isinstance(max_failed, int) and isinstance(completions, int) and max_failed > completions:
            causes.append(
                invalid_value(
                    "spec.maxFailedIndexes", max_failed, "must be less than or equal to completions"
                )
            )
    else:
        for key in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(key) is not None:
                causes.append(invalid_value(f"spec.{key}", spec[key], "requires indexed completion mode"))
    return causes


def _pod_failure_policy_causes(spec: dict[str, Any]) -> list[Cause]:
    policy = spec["podFailurePolicy"]
    rules = policy.get("rules") if isinstance(policy, dict) else None
    if not isinstance(rules, list):
        return [required("spec.podFailurePolicy.rules")]
    causes: list[Cause] = []
    if len(rules) > 20:
        causes.append(
            cause(
                "FieldValueTooMany",
                "spec.podFailurePolicy.rules",
                f"Too many: {len(rules)}: must have at most 20 items",
            )
        )
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    names = {
        c.get("name") for c in [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]
    }
    for index, rule in enumerate(rules):
        causes += _rule_causes(spec, rule, f"spec.podFailurePolicy.rules[{index}]", names)
    return causes


def _rule_causes(spec: dict[str, Any], rule: Any, path: str, names: set[Any]) -> list[Cause]:
    if not isinstance(rule, dict):
        return [invalid_value(path, rule, "must be an object")]
    causes: list[Cause] = []
    action = rule.get("action", "")
    if not action:
        causes.append(
            required(f"{path}.action", f"valid values: [{' '.join(_quoted(_ACTIONS).split(', '))}]")
        )
    elif action == "FailIndex":
        if spec.get("backoffLimitPerIndex") is None:
            causes.append(
                invalid_value(f"{path}.action", action, "requires the backoffLimitPerIndex to be set")
            )
    elif action not in _ACTIONS:
        causes.append(not_supported(f"{path}.action", action, _ACTIONS))
    on_exit, on_conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
    if on_exit is not None:
        causes += _on_exit_codes_causes(on_exit, f"{path}.onExitCodes", names)
    for index, pattern in enumerate(on_conditions or []):
        status = (pattern or {}).get("status", "")
        if status not in _CONDITION_STATUSES:
            causes.append(
                not_supported(f"{path}.onPodConditions[{index}].status", status, _CONDITION_STATUSES)
            )
    if on_exit is not None and on_conditions:
        causes.append(
            cause(
                "FieldValueInvalid",
                path,
                'Invalid value: "null": specifying both OnExitCodes and OnPodConditions is not supported',
            )
        )
    if on_exit is None and not on_conditions:
        causes.append(
            cause(
                "FieldValueInvalid",
                path,
                'Invalid value: "null": specifying one of OnExitCodes and OnPodConditions is required',
            )
        )
    return causes


def _on_exit_codes_causes(on_exit: Any, path: str, names: set[Any]) -> list[Cause]:
    if not isinstance(on_exit, dict):
        return [invalid_value(path, on_exit, "must be an object")]
    causes: list[Cause] = []
    operator = on_exit.get("operator", "")
    if not operator:
        causes.append(required(f"{path}.operator", 'valid values: ["In" "NotIn"]'))
    elif operator not in _OPERATORS:
        causes.append(not_supported(f"{path}.operator", operator, _OPERATORS))
    container = on_exit.get("containerName")
    if container is not None and container not in names:
        causes.append(
            invalid_value(
                f"{path}.containerName",
                container,
                "must be one of the container or initContainer names in the pod template",
            )
        )
    values = on_exit.get("values") or []
    if not values:
        causes.append(invalid_value(f"{path}.values", values, "at least one value is required"))
    seen: set[Any] = set()
    for index, value in enumerate(values):
        if operator == "In" and value == 0:
            causes.append(
                invalid_value(f"{path}.values[{index}]", value, "must not be 0 for the In operator")
            )
        if value in seen:
            causes.append(
                cause("FieldValueDuplicate", f"{path}.values[{index}]", f"Duplicate value: {value}")
            )
        seen.add(value)
    if any(a > b for a, b in itertools.pairwise(values)):
        causes.append(invalid_value(f"{path}.values", values, "must be ordered"))
    return causes


def _success_policy_causes(spec: dict[str, Any]) -> list[Cause]:
    policy = spec["successPolicy"]
    if spec.get("completionMode") != job_wire.INDEXED:
        return [invalid_value("spec.successPolicy", policy, "requires indexed completion mode")]
    rules = policy.get("rules") if isinstance(policy, dict) else None
    if not rules:
        return [
            required(
                "spec.successPolicy.rules",
                "at least one rules must be specified when the successPolicy is specified",
            )
        ]
    causes: list[Cause] = []
    completions = spec.get("completions")
    for index, rule in enumerate(rules):
        path = f"spec.successPolicy.rules[{index}]"
        indexes, count = (rule or {}).get("succeededIndexes"), (rule or {}).get("succeededCount")
        if indexes is None and count is None:
            causes.append(
                required(path, "at least one of succeededCount or succeededIndexes must be specified")
            )
        if indexes is not None and not _valid_intervals(indexes, completions):
            causes.append(
                invalid_value(f"{path}.succeededIndexes", indexes, "error parsing succeededIndexes")
            )
        if count is not None:
            if not isinstance(count, int) or count < 0:
                causes.append(
                    invalid_value(f"{path}.succeededCount", count, "must be greater than or equal to 0")
                )
            elif isinstance(completions, int) and count > completions:
                causes.append(
                    invalid_value(
                        f"{path}.succeededCount",
                        count,
                        f"must be less than or equal to {completions} (the number of specified completions)",
                    )
                )
    return causes


def _valid_intervals(text: Any, completions: Any) -> bool:
    if not isinstance(text, str) or not _INTERVALS.match(text):
        return False
    previous = -1
    for part in text.split(","):
        first, _, last = part.partition("-")
        low, high = int(first), int(last or first)
        if low <= previous or high < low or (isinstance(completions, int) and high >= completions):
            return False
        previous = high
    return True


def _replacement_policy_causes(spec: dict[str, Any]) -> list[Cause]:
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return []
    if spec.get("podFailurePolicy") is not None:
        if policy != job_wire.REPLACE_FAILED:
            return [not_supported("spec.podReplacementPolicy", policy, (job_wire.REPLACE_FAILED,))]
        return []
    supported = (job_wire.REPLACE_FAILED, job_wire.TERMINATING_OR_FAILED)
    if policy not in supported:
        return [not_supported("spec.podReplacementPolicy", policy, supported)]
    return []


def validate_job_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """The Job checks plus the immutable fields (the template may change while suspended and unstarted)."""
    causes = validate_job(new)
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    for key in ("completions", "selector", "completionMode", "podFailurePolicy", "backoffLimitPerIndex"):
        if spec.get(key) != old_spec.get(key):
            causes.append(invalid_value(f"spec.{key}", spec.get(key), "field is immutable"))
    template, old_template = spec.get("template") or {}, old_spec.get("template") or {}
    if template != old_template:
        unstarted = bool(old_spec.get("suspend")) and not (old.get("status") or {}).get("startTime")
        if not (unstarted and _only_scheduling_changed(template, old_template)):
            causes.append(invalid_value("spec.template", "...", "field is immutable"))
    return causes


def _only_scheduling_changed(template: dict[str, Any], old_template: dict[str, Any]) -> bool:
    def stripped(value: dict[str, Any]) -> dict[str, Any]:
        pod_spec = {k: v for k, v in (value.get("spec") or {}).items() if k not in _MUTABLE_WHILE_SUSPENDED}
        meta = {k: v for k, v in (value.get("metadata") or {}).items() if k not in ("labels", "annotations")}
        return {"metadata": meta, "spec": pod_spec}

    return stripped(template) == stripped(old_template)

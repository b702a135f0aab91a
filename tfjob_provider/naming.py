"""Kubernetes naming rules and the Airflow identity on every TFJob: :func:`job_name_for`,
:func:`stamp_identity`, :func:`matches_identity` (docs/adr/0001-deterministic-names-and-adoption.md).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Final

from tfjob_provider.clipping import shown
from tfjob_provider.constants import (
    ANNOTATION_DAG_ID,
    ANNOTATION_MAP_INDEX,
    ANNOTATION_RUN_ID,
    ANNOTATION_TASK_ID,
    ANNOTATION_TRY_NUMBER,
    IDENTITY_PREFIX,
    LABEL_DAG_ID,
    LABEL_MANAGED_BY,
    LABEL_MAP_INDEX,
    LABEL_RUN_ID,
    LABEL_TASK_ID,
    LABEL_TRY_NUMBER,
    MANAGED_BY_VALUE,
)

#: Longest DNS-1035 / DNS-1123 label and longest label value Kubernetes accepts.
DNS_LABEL_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63
#: Longest name :func:`job_name_for` returns.  63 - len("-evaluator-") - 3 digits = 49 would be the
#: hard limit for three-digit replica indices; 40 leaves room for the operator's naming to change.
JOB_NAME_MAX_LENGTH: Final = 40

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_QUALIFIED_NAME_PART = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NOT_LABEL_VALUE_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
_NOT_DNS_CHARS = re.compile(r"[^a-z0-9]+")

_JOB_HASH_LENGTH: Final = 10  # base32 characters = 50 bits
_LABEL_HASH_LENGTH: Final = 10  # hex characters = 40 bits
_FALLBACK_PREFIX: Final = "tf"


def is_dns1123_label(value: str) -> bool:
    """Whether *value* is a DNS-1123 label: what Kubernetes requires of namespace names."""
    return len(value) <= DNS_LABEL_MAX_LENGTH and _DNS1123_LABEL.fullmatch(value) is not None


def is_label_value(value: str) -> bool:
    """Whether *value* may be used as a Kubernetes label value (empty is allowed)."""
    return len(value) <= LABEL_VALUE_MAX_LENGTH and _LABEL_VALUE.fullmatch(value) is not None


def is_qualified_key(key: str) -> bool:
    """Whether *key* may be used as a label or annotation key (``[prefix/]name``)."""
    prefix, slash, name = key.rpartition("/")
    if slash and not (len(prefix) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return False
    return len(name) <= DNS_LABEL_MAX_LENGTH and _QUALIFIED_NAME_PART.fullmatch(name) is not None


def _sha256(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _ascii_fold(text: str) -> str:
    """``"Café_ÉTL"`` → ``"Cafe_ETL"``: keep what can be kept readable of non-ASCII ids."""
    decomposed = unicodedata.normalize("NFKD", text)
    return decomposed.encode("ascii", "ignore").decode("ascii")


def _dns_fragment(text: str) -> str:
    """Lower-case letters, digits and single dashes, no dash at either end (may be empty)."""
    return _NOT_DNS_CHARS.sub("-", _ascii_fold(text).lower()).strip("-")


def suggest_dns1035_label(text: str) -> str:
    """A DNS-1035 label close to *text*, for "rename it to …" hints (``"My_Job.v2"`` → ``"my-job-v2"``)."""
    fragment = _dns_fragment(text)[:DNS_LABEL_MAX_LENGTH].rstrip("-")
    if not fragment[:1].isalpha():
        fragment = f"{_FALLBACK_PREFIX}-{fragment}"[:DNS_LABEL_MAX_LENGTH].rstrip("-")
    return fragment


def _readable_prefix(dag_part: str, task_part: str, budget: int) -> str:
    """Join dag and task fragments within *budget* characters, sharing it fairly when both are long."""
    if not dag_part or not task_part:
        return (dag_part or task_part)[:budget].rstrip("-")
    room = budget - 1  # one dash between the two
    if len(dag_part) + len(task_part) > room:
        half = room // 2
        if len(dag_part) <= half:
            task_part = task_part[: room - len(dag_part)]
        elif len(task_part) <= half:
            dag_part = dag_part[: room - len(task_part)]
        else:
            dag_part, task_part = dag_part[:half], task_part[: room - half]
    return f"{dag_part.rstrip('-')}-{task_part.rstrip('-')}".strip("-")


def job_name_for(*, dag_id: str, task_id: str, run_id: str, map_index: int = -1) -> str:
    """The TFJob name for one task instance: deterministic, a DNS-1035 label, at most 40 characters.

    The name reads ``<dag>-<task>-<hash>``: a readable prefix folded to DNS characters and cut to
    fit, then ten base32 characters of the SHA-256 of all four parts.  Only the hash makes the
    name unique (the prefix is lossy); it covers the run id and map index, which are never shown.
    The try number is deliberately left out so that every try of a task instance looks for the
    same TFJob — that is what lets a retry adopt, skip or replace the previous try's job.
    """
    encoded = json.dumps([dag_id, task_id, run_id, map_index], ensure_ascii=False, separators=(",", ":"))
    digest = base64.b32encode(_sha256(encoded)).decode("ascii").lower()[:_JOB_HASH_LENGTH]
    budget = JOB_NAME_MAX_LENGTH - 1 - _JOB_HASH_LENGTH
    prefix = _readable_prefix(_dns_fragment(dag_id), _dns_fragment(task_id), budget)
    if not prefix[:1].isalpha():  # empty, or starts with a digit: DNS-1035 wants a letter first
        prefix = f"{_FALLBACK_PREFIX}-{prefix}"[:budget].rstrip("-")
    return f"{prefix}-{digest}"


def sanitize_label_value(value: str) -> str:
    """Turn any string into a valid label value, keeping it readable and, in practice, unique.

    Runs of characters labels do not allow become ``-`` and non-alphanumeric ends are trimmed.
    Whenever the result differs from *value* — characters replaced, or cut to 63 — a dash and ten
    hex characters of the SHA-256 of the original are appended, so two different ids never end up
    with the same label value (a plain replacement would give ``a:b`` and ``a+b`` the same one,
    and a label selector would then match another run's TFJob).  Valid values come back unchanged;
    ``""`` stays ``""``.
    """
    if is_label_value(value):
        return value
    cleaned = _NOT_LABEL_VALUE_CHARS.sub("-", value)
    cleaned = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", cleaned)
    digest = _sha256(value).hex()[:_LABEL_HASH_LENGTH]
    keep = LABEL_VALUE_MAX_LENGTH - 1 - _LABEL_HASH_LENGTH
    cleaned = re.sub(r"[^A-Za-z0-9]+$", "", cleaned[:keep])
    return f"{cleaned}-{digest}" if cleaned else digest


def identity_labels(
    *, dag_id: str, task_id: str, run_id: str, map_index: int, try_number: int
) -> dict[str, str]:
    """Selectable labels naming the task instance; values sanitised with :func:`sanitize_label_value`.

    The map-index label is only present for mapped task instances (``map_index >= 0``): ``-1``
    is not a valid label value, and the cncf-kubernetes KubernetesPodOperator follows the same
    convention for its ``map_index`` pod label.
    """
    labels = {
        LABEL_DAG_ID: sanitize_label_value(dag_id),
        LABEL_TASK_ID: sanitize_label_value(task_id),
        LABEL_RUN_ID: sanitize_label_value(run_id),
        LABEL_TRY_NUMBER: str(try_number),
        LABEL_MANAGED_BY: MANAGED_BY_VALUE,
    }
    if map_index >= 0:
        labels[LABEL_MAP_INDEX] = str(map_index)
    return labels


def identity_annotations(
    *, dag_id: str, task_id: str, run_id: str, map_index: int, try_number: int
) -> dict[str, str]:
    """The exact task-instance identity; :func:`matches_identity` compares against these."""
    return {
        ANNOTATION_DAG_ID: dag_id,
        ANNOTATION_TASK_ID: task_id,
        ANNOTATION_RUN_ID: run_id,
        ANNOTATION_MAP_INDEX: str(map_index),
        ANNOTATION_TRY_NUMBER: str(try_number),
    }


def _mapping_or_new(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    existing = parent.get(key)
    if existing is None:
        parent[key] = {}
    elif not isinstance(existing, dict):
        raise ValueError(
            f"{where} must be a mapping to stamp the Airflow identity on it, not {shown(existing)}"
        )
    result: dict[str, Any] = parent[key]
    return result


def stamp_identity(
    manifest: Mapping[str, Any],
    *,
    name: str,
    namespace: str,
    dag_id: str,
    task_id: str,
    run_id: str,
    map_index: int,
    try_number: int,
) -> dict[str, Any]:
    """A deep copy of *manifest* with its name, namespace and the Airflow identity applied.

    Keys under the provider's own prefix (``tfjob-provider.airflow.apache.org/``) are always
    overwritten — reattaching depends on them being right.  Every other user label and annotation
    is kept as given; ``app.kubernetes.io/managed-by`` is only added when the user has not set it.
    Raises :class:`ValueError` when ``metadata``, its labels or its annotations are not mappings.
    """
    stamped: dict[str, Any] = copy.deepcopy(dict(manifest))
    metadata = _mapping_or_new(stamped, "metadata", "metadata")
    metadata["name"] = name
    metadata["namespace"] = namespace
    labels = _mapping_or_new(metadata, "labels", "metadata.labels")
    annotations = _mapping_or_new(metadata, "annotations", "metadata.annotations")
    wanted_labels = identity_labels(
        dag_id=dag_id, task_id=task_id, run_id=run_id, map_index=map_index, try_number=try_number
    )
    for key, value in wanted_labels.items():
        if key.startswith(f"{IDENTITY_PREFIX}/") or key not in labels:
            labels[key] = value
    if map_index < 0:  # a stale map-index label copied from elsewhere would mislead selectors
        labels.pop(LABEL_MAP_INDEX, None)
    annotations.update(
        identity_annotations(
            dag_id=dag_id, task_id=task_id, run_id=run_id, map_index=map_index, try_number=try_number
        )
    )
    return stamped


def matches_identity(
    tfjob: Mapping[str, Any], *, dag_id: str, task_id: str, run_id: str, map_index: int
) -> bool:
    """Whether *tfjob* (as read from the cluster) was submitted for exactly this task instance.

    Compares the exact annotations, never the lossy labels; the try number is not compared, so a
    later try recognises an earlier try's job.  Odd shapes simply do not match.
    """
    metadata = tfjob.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return False
    expected = {
        ANNOTATION_DAG_ID: dag_id,
        ANNOTATION_TASK_ID: task_id,
        ANNOTATION_RUN_ID: run_id,
        ANNOTATION_MAP_INDEX: str(map_index),
    }
    return all(annotations.get(key) == value for key, value in expected.items())

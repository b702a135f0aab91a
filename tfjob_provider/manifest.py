"""The TFJob manifest: load it (:func:`load_tfjob`), build it (:func:`build_tfjob`), validate it
(:func:`validate_tfjob`); every problem is reported at once as a :class:`ManifestError`.

Validate after :func:`tfjob_provider.naming.stamp_identity`: the name-length rule needs the final name.
"""

from __future__ import annotations

from tfjob_provider._manifest.build_parameters import (
    DEFAULT_CLEAN_POD_POLICY,
    DEFAULT_RESTART_POLICY,
    EnvInput,
    ReplicaInput,
    ReplicaSpec,
)
from tfjob_provider._manifest.building import build_tfjob
from tfjob_provider._manifest.limits import (
    MAX_ALIAS_NODES,
    MAX_MANIFEST_BYTES,
    MAX_NESTING_DEPTH,
    shape_problem,
)
from tfjob_provider._manifest.loading import MANIFEST_SUFFIXES, load_tfjob
from tfjob_provider._manifest.problems import ManifestError, Problem
from tfjob_provider._manifest.validation import (
    CLEAN_POD_POLICIES,
    MANAGED_BY_VALUES,
    RESTART_POLICIES,
    SUCCESS_POLICIES,
    resolve_namespace,
    validate_tfjob,
)

__all__ = [
    "CLEAN_POD_POLICIES",
    "DEFAULT_CLEAN_POD_POLICY",
    "DEFAULT_RESTART_POLICY",
    "MANAGED_BY_VALUES",
    "MANIFEST_SUFFIXES",
    "MAX_ALIAS_NODES",
    "MAX_MANIFEST_BYTES",
    "MAX_NESTING_DEPTH",
    "RESTART_POLICIES",
    "SUCCESS_POLICIES",
    "EnvInput",
    "ManifestError",
    "Problem",
    "ReplicaInput",
    "ReplicaSpec",
    "build_tfjob",
    "load_tfjob",
    "resolve_namespace",
    "shape_problem",
    "validate_tfjob",
]

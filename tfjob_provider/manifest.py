"""The TFJob manifest: load it, build it from typed parameters, validate it — one import for all three.

Why this module exists: everything that submits a TFJob (the Airflow operator, the examples,
the tests) needs the same three steps — turn user input into one manifest, check it completely
before any API call, and report every problem with its field and fix — and must not depend on
Airflow or a Kubernetes client to do so.  The work is split by concern into
:mod:`~tfjob_provider._manifest.loading`, :mod:`~tfjob_provider._manifest.building`,
:mod:`~tfjob_provider._manifest.validation` (with its building blocks in
:mod:`~tfjob_provider._manifest.checks`) and :mod:`~tfjob_provider._manifest.problems`;
this module is the stable interface the rest of the provider imports from.

Typical use by the operator::

    manifest = load_tfjob(tfjob)                      # or build_tfjob(name=..., image=..., ...)
    namespace = resolve_namespace(manifest, requested=self.namespace, fallback=connection_namespace)
    manifest = stamp_identity(manifest, name=..., namespace=namespace, dag_id=..., ...)
    manifest = validate_tfjob(manifest)               # ManifestError lists every problem

Validate after stamping: the name-length rule needs the final name.  Pure: standard library
plus PyYAML (an import-linter contract forbids Airflow and Kubernetes imports here).
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

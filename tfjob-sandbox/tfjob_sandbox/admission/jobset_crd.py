"""The project's JobSet CRD, ``crds/jobsets.yaml``: ``install_jobset_crd(store)`` stores it at start."""

from __future__ import annotations

import copy
from functools import cache
from importlib import resources
from typing import Any

import yaml

from tfjob_sandbox.api.resource_types import CRDS
from tfjob_sandbox.store.store import Store

#: The file inside the package, relative to ``tfjob_sandbox``.
JOBSET_CRD_FILE = "admission/crds/jobsets.yaml"
JOBSET_CRD_NAME = "jobsets.jobset.x-k8s.io"


@cache
def _parsed() -> dict[str, Any]:
    text = resources.files("tfjob_sandbox").joinpath(JOBSET_CRD_FILE).read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"tfjob_sandbox/{JOBSET_CRD_FILE} is not a CustomResourceDefinition")
    return document


def jobset_crd() -> dict[str, Any]:
    """A fresh copy of the project's JobSet CustomResourceDefinition."""
    return copy.deepcopy(_parsed())


def install_jobset_crd(store: Store) -> bool:
    """Store the JobSet CRD unless one is already there (a restored state keeps its own); True if stored."""
    if store.peek(CRDS, JOBSET_CRD_NAME) is not None:
        return False
    store.create(CRDS, jobset_crd())
    return True

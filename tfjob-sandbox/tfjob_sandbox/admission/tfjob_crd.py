"""The sandbox's own TFJob CRD (``crds/tfjobs.yaml`` in this package), installed when it starts.

A cluster with the training operator installed has the ``tfjobs.kubeflow.org`` CRD, so its API
server prunes, defaults and validates every TFJob before the operator's webhook sees it.  The
sandbox does the same by default: :class:`~tfjob_sandbox.launch.assembly.SandboxRuntime` stores this CRD
at start (``tfjob_crd=False`` leaves TFJobs schemaless until a CRD is applied).  The file is
generated from the official Kubernetes client's models by ``tests/tfjob_crd_generator.py`` in the
repository; its header says how to regenerate it.
"""

from __future__ import annotations

import copy
from functools import cache
from importlib import resources
from typing import Any

import yaml

from tfjob_sandbox.api.resource_types import CRDS
from tfjob_sandbox.store.store import Store

#: The file inside the package, relative to ``tfjob_sandbox``.
TFJOB_CRD_FILE = "admission/crds/tfjobs.yaml"
TFJOB_CRD_NAME = "tfjobs.kubeflow.org"

# libyaml parses the 200 kB file in a tenth of the time of the pure-Python loader.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _parsed() -> dict[str, Any]:
    text = resources.files("tfjob_sandbox").joinpath(TFJOB_CRD_FILE).read_text(encoding="utf-8")
    document = yaml.load(text, Loader=_LOADER)
    if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"tfjob_sandbox/{TFJOB_CRD_FILE} is not a CustomResourceDefinition")
    return document


def tfjob_crd() -> dict[str, Any]:
    """A fresh copy of the project's TFJob CustomResourceDefinition."""
    return copy.deepcopy(_parsed())


def install_tfjob_crd(store: Store) -> bool:
    """Store the TFJob CRD unless one is already there (a restored state keeps its own); True if stored."""
    if store.peek(CRDS, TFJOB_CRD_NAME) is not None:
        return False
    store.create(CRDS, tfjob_crd())
    return True

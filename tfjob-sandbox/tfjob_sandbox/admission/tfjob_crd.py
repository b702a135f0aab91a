"""The project's TFJob CRD, ``crds/tfjobs.yaml``, which ``tfjob_crd_generator.py`` in the tests writes.

``install_tfjob_crd(store)`` stores it at start; ``tfjob_crd()`` returns a copy.
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

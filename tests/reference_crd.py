"""Where the tests find the training operator's own TFJob CRD, used for cross-checks only.

The project serves and validates TFJobs with its own CRD (shipped in ``tfjob-sandbox``).  The
reference file from Kubeflow is not part of this repository; tests that compare with it look for it
in ``$TFJOB_PROVIDER_CRD`` or in a ``shared/crds`` folder beside the checkout or above it, and are
skipped, naming the variable, where it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: Names the reference TFJob CRD file when it is not in a ``shared/crds`` folder beside the checkout.
REFERENCE_CRD_ENV = "TFJOB_PROVIDER_CRD"
_CRD_RELATIVE = Path("shared") / "crds" / "kubeflow.org_tfjobs.yaml"
_CHECKOUT = Path(__file__).resolve().parents[1]


def find_reference_crd(checkout: Path = _CHECKOUT) -> Path | None:
    """``$TFJOB_PROVIDER_CRD`` if set, else ``shared/crds/kubeflow.org_tfjobs.yaml`` above the checkout."""
    configured = os.environ.get(REFERENCE_CRD_ENV)
    if configured:
        return Path(configured)
    for folder in checkout.parents:
        if (folder / _CRD_RELATIVE).is_file():
            return folder / _CRD_RELATIVE
    return None


REFERENCE_CRD = find_reference_crd()

#: Marks a test that compares with the training operator's own CRD.
needs_reference_crd = pytest.mark.skipif(
    REFERENCE_CRD is None,
    reason=f"the training operator's TFJob CRD is not here: set ${REFERENCE_CRD_ENV} to its path "
    "(kubeflow/trainer release-1.9, manifests/base/crds/kubeflow.org_tfjobs.yaml) to run this cross-check",
)

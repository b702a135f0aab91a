"""Where the tests find the reference TFJob CRD: the variable, or ``shared/crds`` above the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reference_crd import REFERENCE_CRD_ENV, find_reference_crd


@pytest.fixture
def workplace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``<tmp>/projects/{checkout,shared/crds/...}``: a checkout with the CRD beside it."""
    monkeypatch.delenv(REFERENCE_CRD_ENV, raising=False)
    crd = tmp_path / "projects" / "shared" / "crds" / "kubeflow.org_tfjobs.yaml"
    crd.parent.mkdir(parents=True)
    crd.write_text("kind: CustomResourceDefinition\n")
    (tmp_path / "projects" / "checkout").mkdir()
    return tmp_path


def test_the_crd_beside_the_checkout_is_found(workplace: Path) -> None:
    expected = workplace / "projects" / "shared" / "crds" / "kubeflow.org_tfjobs.yaml"
    assert find_reference_crd(workplace / "projects" / "checkout") == expected


def test_a_checkout_with_no_shared_folder_above_it_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REFERENCE_CRD_ENV, raising=False)
    lonely = tmp_path / "lonely" / "p"
    lonely.mkdir(parents=True)
    assert find_reference_crd(lonely) is None


def test_the_environment_variable_wins(workplace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REFERENCE_CRD_ENV, "/somewhere/crd.yaml")
    assert find_reference_crd(workplace / "projects" / "checkout") == Path("/somewhere/crd.yaml")

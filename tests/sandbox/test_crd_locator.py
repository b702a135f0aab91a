"""Where the tests find the real TFJob CRD: beside the checkout, or beside the repository it was cloned from.

A clone made for a clean check (``git clone /work/main /tmp/x/p``) has no ``shared/`` beside it;
its ``origin`` does.  These tests build that layout with real git repositories.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tfjob_provider.sandbox.testing import REAL_TFJOB_CRD_ENV, find_real_tfjob_crd


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def workplace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp/work/{main,shared/crds/...}``: a repository with the CRD beside it."""
    monkeypatch.delenv(REAL_TFJOB_CRD_ENV, raising=False)
    crd = tmp_path / "work" / "shared" / "crds" / "kubeflow.org_tfjobs.yaml"
    crd.parent.mkdir(parents=True)
    crd.write_text("kind: CustomResourceDefinition\n")
    main = tmp_path / "work" / "main"
    main.mkdir()
    git("init", "-q", cwd=main)
    (main / "README.md").write_text("x\n")
    git("add", "README.md", cwd=main)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "x", cwd=main)
    return tmp_path


def test_the_crd_beside_the_checkout_is_found(workplace: Path) -> None:
    expected = workplace / "work" / "shared" / "crds" / "kubeflow.org_tfjobs.yaml"
    assert find_real_tfjob_crd(workplace / "work" / "main") == expected


def test_a_clone_elsewhere_finds_the_crd_beside_its_origin(workplace: Path) -> None:
    clone = workplace / "elsewhere" / "p"
    git("clone", "-q", ".", str(clone), cwd=workplace / "work" / "main")
    expected = workplace / "work" / "shared" / "crds" / "kubeflow.org_tfjobs.yaml"
    assert find_real_tfjob_crd(clone) == expected


def test_without_any_crd_the_expected_path_beside_the_checkout_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REAL_TFJOB_CRD_ENV, raising=False)
    lonely = tmp_path / "lonely" / "p"
    lonely.mkdir(parents=True)
    assert find_real_tfjob_crd(lonely) == tmp_path / "lonely" / "shared" / "crds" / "kubeflow.org_tfjobs.yaml"


def test_the_environment_variable_wins(workplace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REAL_TFJOB_CRD_ENV, "/somewhere/crd.yaml")
    assert find_real_tfjob_crd(workplace / "work" / "main") == Path("/somewhere/crd.yaml")

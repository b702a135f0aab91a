"""The built wheels, installed as a user installs them, run a TFJob DAG.

Everything else in the suite imports the provider from the checkout, where a module missing from
the wheel, a wrong entry point or a dependency the provider imports but does not declare would go
unnoticed.  Here:

* both wheels are built with ``uv build`` and their contents checked (``distributions.py``);
* the provider wheel goes into a fresh venv holding the locked runtime dependencies of
  ``tfjob-provider`` only (``uv sync --frozen --no-dev --package tfjob-provider`` into that venv,
  offline from uv's cache, falling back to the registry), then ``uv pip install`` of the wheel
  itself, which must resolve against that set offline;
* the sandbox wheel goes into a second venv of its own, as on a developer's laptop or in CI, and is
  started through its console script ``tfjob-sandbox serve``;
* in the provider venv: ``airflow providers list`` shows the provider, the operator, sensor and
  trigger import from site-packages, the sandbox/demo/test packages do not exist, and one deferrable
  DAG runs with ``dag.test()`` against the sandbox through ``AIRFLOW_CONN_KUBERNETES_DEFAULT``.

On a warm uv cache this takes well under a minute; most of it is Airflow's own start-up (``db
migrate``, ``providers list``) on a loaded machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from tfjob_sandbox.launch.kubeconfig import connection_json

from demo.processes import ProcessGroupSet, new_run_marker, wait_for_line
from tests.packaging.distributions import PROVIDER, SANDBOX, wheel_problems

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

REPOSITORY = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("venv_probe.py")
READY_PREFIX = "sandbox ready "


def _uv() -> str:
    """The uv that ``make install`` uses: one on the PATH, else the repository's ``.tools`` copy."""
    found = shutil.which("uv") or str(REPOSITORY / ".tools" / "bin" / "uv")
    if not Path(found).exists():
        pytest.fail("uv not found on PATH nor in .tools/bin: run `make install` first")
    return found


def _run(argv: list[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> str:
    """Run ``argv``; its stdout, or a failure that shows what it printed."""
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done.stdout


def _clean_env() -> dict[str, str]:
    """This process's environment without the test session's Airflow set-up or venv."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AIRFLOW", "VIRTUAL_ENV", "PYTHON", "UV_PROJECT_ENVIRONMENT"))
    }


def _venv_with(uv: str, venv: Path, package: str, wheel: Path) -> None:
    """A venv with ``package``'s locked runtime deps, then ``wheel`` installed into it.

    ``uv sync --frozen`` reads exact versions and URLs from uv.lock, so it can run from uv's cache
    with ``--offline``; the registry is used only when the cache lacks something.
    """
    env = {**_clean_env(), "UV_PROJECT_ENVIRONMENT": str(venv)}
    sync = [uv, "sync", "--quiet", "--frozen", "--no-dev", "--no-install-workspace"]
    sync += ["--package", package, "--python", sys.executable]
    offline = subprocess.run([*sync, "--offline"], env=env, cwd=REPOSITORY, capture_output=True, timeout=300)
    if offline.returncode != 0:
        _run(sync, env=env, cwd=REPOSITORY)
    # The wheel's own requirements must be met by the locked set: --offline fails on anything else.
    _run([uv, "pip", "install", "--quiet", "--offline", "--python", str(venv / "bin" / "python"), str(wheel)])


@dataclass(frozen=True)
class Installed:
    provider_venv: Path
    sandbox_venv: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    uv = _uv()
    root = tmp_path_factory.mktemp("wheels")
    dist = root / "dist"
    for package in ("tfjob-provider", "tfjob-sandbox"):
        _run(
            [uv, "build", "--quiet", "--package", package, "--wheel", "--out-dir", str(dist)], cwd=REPOSITORY
        )
    (provider_wheel,) = dist.glob(f"{PROVIDER}-*.whl")
    (sandbox_wheel,) = dist.glob(f"{SANDBOX}-*.whl")
    assert wheel_problems(provider_wheel, PROVIDER) == []
    assert wheel_problems(sandbox_wheel, SANDBOX) == []
    installed = Installed(provider_venv=root / "provider-venv", sandbox_venv=root / "sandbox-venv")
    _venv_with(uv, installed.provider_venv, "tfjob-provider", provider_wheel)
    _venv_with(uv, installed.sandbox_venv, "tfjob-sandbox", sandbox_wheel)
    return installed


@pytest.fixture
def sandbox_from_wheel(installed: Installed, tmp_path: Path) -> Iterator[Path]:
    """``tfjob-sandbox serve`` from the sandbox venv; yields the kubeconfig its ready line names.

    The venv's ``bin`` leads the PATH, as after ``activate``: the kubelet runs pod commands such
    as ``python -c …`` as local processes found on that PATH.
    """
    bin_dir = installed.sandbox_venv / "bin"
    env = {**_clean_env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    argv = [str(bin_dir / "tfjob-sandbox"), "serve", "--kubeconfig", str(tmp_path / "sandbox.kubeconfig")]
    argv += ["--workdir", str(tmp_path / "pods"), "--log-level", "WARNING"]
    with ProcessGroupSet(marker=new_run_marker()) as processes:
        process = processes.start("sandbox", argv, env=env, cwd=tmp_path, log_path=tmp_path / "sandbox.log")
        line = wait_for_line(process, lambda text: text.startswith(READY_PREFIX), timeout=60, what="ready")
        yield Path(line.split("kubeconfig=", 1)[1].strip())


def test_installed_provider_wheel_runs_a_dag(
    installed: Installed, sandbox_from_wheel: Path, tmp_path: Path
) -> None:
    bin_dir = installed.provider_venv / "bin"
    home = tmp_path / "airflow-home"
    dags = home / "dags"
    dags.mkdir(parents=True)
    env = {
        **_clean_env(),
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__ALLOWED_DESERIALIZATION_CLASSES_REGEXP": r"(airflow|tfjob_provider)\..*",
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": connection_json(sandbox_from_wheel),
    }
    # `providers list` needs no metadata DB: run it while the DB is migrated.
    providers = subprocess.Popen(
        [str(bin_dir / "airflow"), "providers", "list", "--output", "json"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _run([str(bin_dir / "airflow"), "db", "migrate"], env=env, cwd=tmp_path)
    listed, errors = providers.communicate(timeout=300)
    assert providers.returncode == 0, errors[-3000:]
    by_name = {entry["package_name"]: entry for entry in json.loads(listed)}
    assert by_name["tfjob-provider"]["version"] == "0.1.0"

    probe = _run([str(bin_dir / "python"), "-I", str(PROBE), str(dags)], env=env, cwd=tmp_path)
    result = json.loads(probe.strip().splitlines()[-1])
    print(f"in the provider venv: {result['seconds']}")

    site_packages = installed.provider_venv / "lib"
    assert Path(result["provider_file"]).is_relative_to(site_packages), result["provider_file"]
    assert result["classes"] == ["TFJobOperator", "TFJobSensor", "TFJobTrigger"]
    for module, problem in result["absent"].items():
        assert problem is not None and problem.startswith("ModuleNotFoundError"), (module, problem)
    assert result["dag_run_state"] == "success"
    assert result["task_state"] == "success"
    assert result["returned_state"] == "Succeeded"
    assert result["returned_chief"]["succeeded"] == 1

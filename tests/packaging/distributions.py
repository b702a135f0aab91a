"""What each built distribution must (and must not) hold, checked on the files themselves.

``make dist`` runs this module over ``dist/`` after ``uv build`` and ``twine check``; the
wheel-install test uses the same checks on the wheels it builds.  The point is the issue this
project once had: the provider's wheel shipped the sandbox cluster and the demo to every Airflow
scheduler, worker and triggerer.  A wheel is a zip and an sdist a tarball, so reading their member
lists is enough — nothing is installed or imported here.

Run as ``python -m tests.packaging.distributions DIST_DIR``: it prints one line of figures per
file (members, modules, source lines, size) and exits non-zero naming every problem.
"""

from __future__ import annotations

import configparser
import re
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

PROVIDER = "tfjob_provider"
SANDBOX = "tfjob_sandbox"

# Folders of the repository that belong to neither distribution.
_REPOSITORY_ONLY = ("demo", "tests", "example_dags", "benchmarks", "tfjob-sandbox", ".ci")


@dataclass(frozen=True)
class Figures:
    """Size of one built file, as the report of ``make dist`` prints it."""

    members: int
    modules: int
    source_lines: int
    size_bytes: int

    def line(self, name: str) -> str:
        return (
            f"{name}: {self.size_bytes / 1024:.1f} KiB, {self.members} files, "
            f"{self.modules} Python modules, {self.source_lines} lines of Python"
        )


def wheel_figures(wheel: Path) -> Figures:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        modules = [n for n in names if n.endswith(".py")]
        lines = sum(archive.read(n).count(b"\n") for n in modules)
    return Figures(len(names), len(modules), lines, wheel.stat().st_size)


def sdist_figures(sdist: Path) -> Figures:
    with tarfile.open(sdist) as archive:
        files = [m for m in archive.getmembers() if m.isfile()]
        modules = [m for m in files if m.name.endswith(".py")]
        lines = 0
        for member in modules:
            handle = archive.extractfile(member)
            assert handle is not None  # a regular file always has a body
            lines += handle.read().count(b"\n")
    return Figures(len(files), len(modules), lines, sdist.stat().st_size)


def _entry_points(wheel: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    with zipfile.ZipFile(wheel) as archive:
        name = next((n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")), None)
        if name is not None:
            parser.read_string(archive.read(name).decode())
    return parser


def wheel_problems(wheel: Path, package: str) -> list[str]:
    """Everything wrong with ``wheel`` as the distribution of import package ``package``.

    Only ``package/`` and the wheel's own ``.dist-info/`` may be in it (so no sandbox, demo, test
    or example module, whatever its name), the license travels with it, and the entry points a
    user relies on are declared.
    """
    problems: list[str] = []
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    for name in names:
        top = PurePosixPath(name).parts[0]
        if top != package and not top.endswith(".dist-info"):
            problems.append(f"{wheel.name}: {name} is outside the {package} package")
    if not any(re.fullmatch(r"[^/]+\.dist-info/licenses/LICENSE", n) for n in names):
        problems.append(f"{wheel.name}: no LICENSE under .dist-info/licenses/")
    entry_points = _entry_points(wheel)
    if package == PROVIDER:
        if entry_points.get("apache_airflow_provider", "provider_info", fallback=None) != (
            "tfjob_provider:get_provider_info"
        ):
            problems.append(f"{wheel.name}: apache_airflow_provider entry point missing")
        if entry_points.has_section("console_scripts"):
            problems.append(f"{wheel.name}: the provider declares console scripts")
        for name in names:
            if any(part in ("sandbox", "demo", "tests") for part in PurePosixPath(name).parts[1:]):
                problems.append(f"{wheel.name}: {name} is a sandbox/demo/test module")
        if entry_points.get("airflow.plugins", "tfjob_provider", fallback=None) != (
            "tfjob_provider.ui.plugin:TFJobPlugin"
        ):
            problems.append(f"{wheel.name}: airflow.plugins entry point (the TFJob tab) missing")
        for asset in ("tfjob.html", "tfjob.js", "tfjob.css"):
            if f"tfjob_provider/ui/static/{asset}" not in names:
                problems.append(f"{wheel.name}: tfjob_provider/ui/static/{asset} (the tab's page) missing")
    if package == SANDBOX:
        if entry_points.get("console_scripts", "tfjob-sandbox", fallback=None) != (
            "tfjob_sandbox.__main__:main"
        ):
            problems.append(f"{wheel.name}: console script tfjob-sandbox missing")
        if entry_points.get("pytest11", "tfjob_sandbox", fallback=None) != "tfjob_sandbox.pytest_plugin":
            problems.append(f"{wheel.name}: pytest11 entry point missing")
        if any(PurePosixPath(n).parts[0] == PROVIDER for n in names):
            problems.append(f"{wheel.name}: holds provider modules")
        # Package data, easily lost by a build configuration: the CRD the sandbox installs at start.
        if "tfjob_sandbox/admission/crds/tfjobs.yaml" not in names:
            problems.append(
                f"{wheel.name}: tfjob_sandbox/admission/crds/tfjobs.yaml (the sandbox's TFJob CRD) missing"
            )
    return problems


def sdist_problems(sdist: Path, package: str, required: tuple[str, ...]) -> list[str]:
    """Everything wrong with ``sdist``: the files a rebuild needs are there, the repository's are not."""
    with tarfile.open(sdist) as archive:
        names = [m.name for m in archive.getmembers() if m.isfile()]
    relative = {str(PurePosixPath(*PurePosixPath(n).parts[1:])) for n in names}
    problems = [f"{sdist.name}: {need} missing" for need in required if need not in relative]
    if not any(r.startswith(f"{package}/") for r in relative):
        problems.append(f"{sdist.name}: no {package}/ sources")
    for name in sorted(relative):
        top = PurePosixPath(name).parts[0]
        if top in _REPOSITORY_ONLY:
            problems.append(f"{sdist.name}: {name} belongs to the repository, not the distribution")
    return problems


def check_dist(dist: Path) -> tuple[list[str], list[str]]:
    """Figures and problems for the two wheels and two sdists ``make dist`` leaves in ``dist``."""
    figures: list[str] = []
    problems: list[str] = []
    common = ("pyproject.toml", "PKG-INFO", "README.md", "LICENSE")
    for package, sdist_needs in (
        (PROVIDER, (*common, "CHANGELOG.md")),
        (SANDBOX, common),
    ):
        wheels = sorted(dist.glob(f"{package}-*.whl"))
        sdists = sorted(dist.glob(f"{package}-*.tar.gz"))
        if len(wheels) != 1 or len(sdists) != 1:
            problems.append(f"{dist}: expected one wheel and one sdist of {package}, found {wheels + sdists}")
            continue
        figures.append(wheel_figures(wheels[0]).line(wheels[0].name))
        figures.append(sdist_figures(sdists[0]).line(sdists[0].name))
        problems += wheel_problems(wheels[0], package)
        problems += sdist_problems(sdists[0], package, sdist_needs)
    return figures, problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.packaging.distributions DIST_DIR", file=sys.stderr)
        return 2
    figures, problems = check_dist(Path(argv[0]))
    for line in figures:
        print(line)
    for problem in problems:
        print(f"PROBLEM {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Test tiers: every test is marked with the tier its folder belongs to, and the run ends with
the time spent per tier.

Select tiers with ``-m``: ``pytest -m unit``, ``pytest -m "not e2e and not realtf"``. The fast
loop is ``make test-unit``; ``make test`` runs every tier (DEVELOPMENT.md).
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# (path prefix relative to the repository root, tier); the first match wins.
TIERS: tuple[tuple[str, str], ...] = (
    ("tests/unit/", "unit"),
    ("tfjob-sandbox/tests/", "sandbox"),
    ("tests/integration/realtf/", "realtf"),
    ("tests/integration/test_ui_browser", "browser"),
    ("tests/integration/", "airflow"),
    ("tests/examples/", "examples"),
    ("tests/e2e/", "e2e"),
    ("tests/packaging/", "packaging"),
    ("tests/", "docs"),
)
TIER_NAMES = tuple(dict.fromkeys(name for _, name in TIERS))

_ROOT = Path(__file__).parent
_seconds_per_tier: defaultdict[str, float] = defaultdict(float)
_started = time.monotonic()

# "full" for make test; "fast" for the fast tier (a tenth of the examples).
settings.register_profile(
    "full", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fast", max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("full")


def tier_of(path: Path) -> str:
    """The tier of a test file, from its folder."""
    try:
        relative = path.resolve().relative_to(_ROOT).as_posix()
    except ValueError:
        return "docs"
    return next((name for prefix, name in TIERS if relative.startswith(prefix)), "docs")


def pytest_configure(config: pytest.Config) -> None:
    for name in TIER_NAMES:
        config.addinivalue_line("markers", f"{name}: the {name} tier (set from the test's folder)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not any(item.get_closest_marker(name) for name in TIER_NAMES):
            item.add_marker(tier_of(item.path))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    tier = next((name for name in TIER_NAMES if name in report.keywords), "docs")
    _seconds_per_tier[tier] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _seconds_per_tier:
        return
    total = time.monotonic() - _started
    parts = ", ".join(
        f"{tier} {_seconds_per_tier[tier]:.0f} s" for tier in TIER_NAMES if tier in _seconds_per_tier
    )
    terminalreporter.write_line(f"time per tier: {parts}; wall {total:.0f} s")

"""The TFJob tab in headless Chromium against hand-made views: every cluster-written string hostile
markup and ANSI escapes (shown as text, nothing runs); a 100-replica TFJob (collapsed groups, "and
N more"); a running task (the page refreshes, then stops); the log panel's line count and download."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.browser.chromium import chromium, require_browser, wait_until
from tests.browser.local_server import serve
from tests.browser.tab_reader import read_tab
from tests.integration.test_ui_endpoints import QUERY, auth  # noqa: F401  (the auth fixture)
from tests.ui_views import HOSTILE, StaticSource, at, hostile_view, recovered_view

#: How the page shows HOSTILE: the markup as written, the escape character as its visible symbol.
SHOWN = HOSTILE.replace("\x1b", "\u241b")


class ChangingSource(StaticSource):
    """Answers with each of ``views`` in turn, then with the last one for ever."""

    def __init__(self, views: list[dict[str, Any]]) -> None:
        super().__init__(views[0])
        self.views = views

    def build_view(self, **ids: Any) -> dict[str, Any]:
        answered = sum(1 for name, _ in self.calls if name == "build_view")
        self.view = self.views[min(answered, len(self.views) - 1)]
        return super().build_view(**ids)


@pytest.fixture
def open_tab(auth: Any, tmp_path: Path) -> Iterator[Any]:  # noqa: F811
    """Opens the page on a view source as an admin would see it; returns what the page shows.
    Downloads go to ``tmp_path``."""
    from tfjob_provider.ui.app import create_app

    require_browser()
    token = auth("admin", "admin")
    with chromium(downloads=tmp_path) as driver, ExitStack() as servers:

        def open_with(source: StaticSource) -> Any:
            base = servers.enter_context(serve(create_app(source)))  # served until the test ends
            driver.get(f"{base}/static/tfjob.css")
            driver.add_cookie({"name": "_token", "value": token, "path": "/"})
            query = "&".join(f"{name}={value}" for name, value in QUERY.items())
            driver.get(f"{base}/page?{query}")
            return read_tab(driver, in_iframe=False), driver

        yield open_with


def test_hostile_text_from_the_cluster_is_shown_literally_and_runs_nothing(open_tab: Any) -> None:
    source = StaticSource(hostile_view(), log_text=f"before\n{HOSTILE}\nafter")
    tab, driver = open_tab(source)
    assert tab.status == "record"
    assert tab.pwned is None and tab.images == 0
    assert tab.notice == SHOWN
    assert tab.verdict_message == SHOWN and tab.verdict_reason == SHOWN
    assert all(SHOWN in row["text"] for row in tab.rows)
    assert all(SHOWN in event for event in tab.events)
    assert tab.log == f"before\n{SHOWN}\nafter"
    # The javascript: dashboard URL is not made a link.
    assert driver.execute_script("return document.querySelectorAll('a[href^=\"javascript\"]').length") == 0
    hover = driver.execute_script(
        "return Array.from(document.querySelectorAll('g.bar title')).map(t => t.textContent)"
    )
    assert any(SHOWN in title for title in hover)


def test_a_large_tfjob_starts_with_its_big_group_collapsed(open_tab: Any) -> None:
    view = recovered_view()
    rows = [dict(view["replicas"]["groups"][1]["rows"][0], index=i, pod=f"w-{i}") for i in range(100)]
    rows[42] = dict(rows[42], culprit=True, phase="Failed", exit_code=1)
    view["replicas"]["groups"][1] = {"type": "Worker", "count": 100, "rows": rows}
    view["replicas"]["more"] = 7
    view["timeline"]["lanes"] = [view["timeline"]["lanes"][0]] + [
        {"type": "Worker", "index": i, "bars": [{**view["timeline"]["lanes"][1]["bars"][0], "pod": f"w-{i}"}]}
        for i in range(100)
    ]
    view["events"]["more"] = 93
    view["events"]["items"].append(
        {"time": at(30), "type": "Normal", "reason": "Middle", "object": "x", "message": "m"}
    )
    tab, driver = open_tab(StaticSource(view))
    open_groups = driver.execute_script(
        "return Array.from(document.querySelectorAll('details.group')).map(d => [d.dataset.type, d.open])"
    )
    assert open_groups == [["Chief", True], ["Worker", False], ["PS", True]]
    summary = driver.execute_script(
        "return document.querySelector('details.group[data-type=Worker] summary').textContent"
    )
    assert "100 replicas" in summary and "Worker 42 (culprit)" in summary
    # One lane stands for the 100 collapsed workers, with all their bars; one click opens them.
    assert sorted(tab.lanes) == ["Chief-0", "Worker-all"] and len(tab.lanes["Worker-all"]) == 100
    driver.find_element("css selector", "g.lane-group[data-type=Worker]").click()
    lanes = driver.execute_script("return document.querySelectorAll('g.lane').length")
    assert lanes == 101
    assert tab.events_more == "and 93 more (older) events"
    assert driver.execute_script("return document.getElementById('replicas-more').textContent") == (
        "and 7 more replica slots not shown"
    )
    # Newest first, whatever order they came in.
    assert [event.split("Z")[0][:19] for event in tab.events][:2] == [
        "2026-01-05 10:00:30",
        "2026-01-05 10:00:21",
    ]


def test_while_the_task_runs_the_page_refreshes_and_stops_when_it_ended(open_tab: Any) -> None:
    waiting = {
        **recovered_view(),
        "status": "not_submitted",
        "running": True,
        "message": "Not yet submitted.",
    }
    running = {**recovered_view(), "status": "live", "running": True, "message": None}
    source = ChangingSource([waiting, running, recovered_view()])
    tab, driver = open_tab(source)
    assert (tab.status, tab.notice) == ("not_submitted", "Not yet submitted.")

    def status() -> str:
        return str(driver.execute_script("return document.getElementById('tfjob').dataset.status"))

    wait_until(lambda: status() == "record", timeout=30, what="the refreshed view (ended)")
    views = sum(1 for name, _ in source.calls if name == "build_view")
    assert views == 3
    time.sleep(12)  # two refresh periods: an ended task is not read again
    assert sum(1 for name, _ in source.calls if name == "build_view") == views


def test_the_log_panel_reads_the_chosen_number_of_lines_and_downloads_them(
    open_tab: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.support.ui import Select

    source = StaticSource(recovered_view(), log_text="step 10 loss 0.12\ntraining done")
    tab, driver = open_tab(source)
    assert tab.log == "step 10 loss 0.12\ntraining done"
    assert source.calls[-1] == ("read_log", {"pod": "train-abc-chief-0", "lines": 200, "map_index": -1})
    Select(driver.find_element("id", "log-lines")).select_by_value("50")
    wait_until(lambda: source.calls[-1][1]["lines"] == 50, timeout=15, what="a read of 50 lines")
    Select(driver.find_element("id", "log-pod")).select_by_value("train-abc-worker-1")
    wait_until(
        lambda: source.calls[-1] == ("read_log", {"pod": "train-abc-worker-1", "lines": 50, "map_index": -1}),
        timeout=15,
        what="a read of worker 1's log",
    )
    driver.find_element("id", "log-download").click()
    saved = wait_until(
        lambda: [path for path in tmp_path.glob("*.log") if path.stat().st_size > 0],
        timeout=30,
        what="the downloaded log",
    )
    assert [path.name for path in saved] == ["train-abc-worker-1.log"]
    assert saved[0].read_text() == "step 10 loss 0.12\ntraining done"

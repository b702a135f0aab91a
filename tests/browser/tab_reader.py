"""What a person sees on the TFJob tab, read from the page's DOM (the tab's own document)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.browser.chromium import wait_until

#: Collected in one round trip: the visible text of each part of the page.
_READ = """
const doc = arguments[0] || document;
const text = (sel) => {
  const n = doc.querySelector(sel);
  return n && !n.closest('[hidden]') ? n.textContent : null;
};
const all = (sel) => Array.from(doc.querySelectorAll(sel));
return {
  status: doc.getElementById('tfjob').dataset.status,
  running: doc.getElementById('tfjob').dataset.running,
  notice: text('#notice'),
  verdict_state: text('#verdict-state'),
  verdict_reason: text('#verdict-reason'),
  verdict_message: text('#verdict-message'),
  job_name: text('#job-name'),
  rows: all('tr.replica').map(r => ({key: r.dataset.replica, culprit: r.classList.contains('culprit'),
                                      deciding: r.classList.contains('deciding'), text: r.textContent})),
  lanes: Object.fromEntries(all('g.lane').map(g => [g.dataset.lane,
      Array.from(g.querySelectorAll('g.bar')).map(b => b.dataset.outcome)])),
  verdict_line: all('g.verdict-line').length,
  log: text('#log-text'),
  log_status: text('#log-status'),
  events: all('#events-table tbody tr').map(r => r.textContent),
  events_more: text('#events-more'),
  images: all('img').length,
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
};
"""


@dataclass(frozen=True)
class TabContent:
    raw: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.raw[name]
        except KeyError:
            raise AttributeError(name) from None


def read_tab(driver: Any, *, in_iframe: bool) -> TabContent:
    """The tab's content once it has loaded (and, when it shows a TFJob, once its log is there)."""
    if in_iframe:
        frame = wait_until(
            lambda: driver.find_element("css selector", "iframe[title='TFJob']"),
            timeout=60,
            what="the TFJob iframe",
        )
        driver.switch_to.frame(frame)

    seen: list[str] = []

    def loaded() -> bool:
        state = driver.execute_script(
            "const m = document.getElementById('tfjob'); if (!m || m.dataset.loaded !== 'true') return null;"
            "const n = document.getElementById('notice'); const s = document.getElementById('log-status');"
            "return [m.dataset.status, s ? s.textContent : '', n ? n.textContent : ''];"
        )
        if not state:
            return False
        status, log_status, notice = state
        seen[:] = [f"status {status!r}, log {log_status!r}, notice {notice!r}"]
        if status in ("live", "record"):
            # The log panel has its answer: lines, a refusal, nothing to show, or an error.
            return any(mark in log_status for mark in (" line", "may not", "No replica", "Could not"))
        return True

    try:
        wait_until(loaded, timeout=60, what="the TFJob tab's content")
    except AssertionError as error:
        raise AssertionError(f"{error}; the page showed: {seen}") from None
    return TabContent(driver.execute_script(_READ, None))

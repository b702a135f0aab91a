"""The TFJob tab as a person sees it: a real ``airflow api-server`` (all users admins), DAG runs on
the sandbox, and headless Chromium opening each task instance's tab in Airflow's own UI.

The DAG's tasks: ``recovered`` (Chief + 2 Workers + PS, worker 1 killed once with 137 and recreated
under ExitCode; the TFJob kept), ``failed`` (worker 0 exits 1 under ExitCode: a permanent failure),
``succeeded`` (worker 0 still running when the chief succeeds, so the training operator deletes
it; the TFJob deleted when it ended: shown from the record), ``plain`` (no TFJob at all) and, after
all of them, ``running`` (Chief + 2 Workers training until the test, having read the running
task's tab while the DAG runs, lets them finish).
With ``TFJOB_TAB_SCREENSHOTS=<dir>`` the test also saves the tab's pictures there (`make screenshots`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from demo.processes import ProcessGroupSet, new_run_marker, tail
from tests.browser.chromium import chromium, require_browser, wait_until
from tests.browser.tab_reader import TabContent, read_tab
from tests.conftest import DAGS_FOLDER
from tests.integration.airflow_harness import RunOutcome, load_dag, run_dag, write_dag_file
from tests.ui_views import HOSTILE

pytestmark = pytest.mark.slow

DAG_ID = "tfjob_tab_browser"
SHOWN = HOSTILE.replace("\x1b", "\u241b")

CHIEF = f"""
import time
print("chief says hello", flush=True)
print({HOSTILE!r}, flush=True)
time.sleep(14)
print("chief done", flush=True)
"""

#: Worker 1's first pod dies as if OOM-killed, 4 s into the wait; every other worker pod succeeds.
WORKER = """
import json, os, sys, time
index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
marker = os.path.join(sys.argv[1], "worker-1-killed")
if index == 1 and not os.path.exists(marker):
    open(marker, "w").close()
    time.sleep(4)
    sys.exit(137)
time.sleep(6)
print(f"worker {index} done", flush=True)
"""

#: The failed task's worker, after 3 s: the wait has seen the chief, which the operator then deletes.
FAILING = "import sys, time; print('worker 0 fails', flush=True); time.sleep(3); sys.exit(1)"

#: The succeeded task: the chief finishes after worker 1, while worker 0 still runs.
SUCCEEDING = """
import json, os, time
role = json.loads(os.environ["TF_CONFIG"])["task"]
kind, index = role["type"], role["index"]
print(f"{kind} {index} trains", flush=True)
time.sleep(60 if kind == "worker" and index == 0 else 3 if kind == "chief" else 1)
print(f"{kind} {index} trained", flush=True)
"""

#: Every replica of the running task trains until the test creates the file ``release``.
TRAINING = """
import os, sys, time
for step in range(3):
    print(f"step {step}: loss {1 / (step + 1):.3f}", flush=True)
print("training until released", flush=True)
release, deadline = os.path.join(sys.argv[1], "release"), time.monotonic() + 240
while not os.path.exists(release) and time.monotonic() < deadline:
    time.sleep(0.2)
print("released", flush=True)
"""

DAG_SOURCE = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG, task
from tfjob_provider.operators.tfjob import TFJobOperator

PY = ["python", "-c"]

with DAG({dag_id!r}, schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    recovered = TFJobOperator(
        task_id="recovered",
        image="python:3.11",
        command=PY + ["import time; time.sleep(60)"],
        chief={{"replicas": 1, "command": PY + [{chief!r}]}},
        worker={{"replicas": 2, "command": PY + [{worker!r}, {workdir!r}], "restart_policy": "ExitCode"}},
        ps=1,
        restart_policy="ExitCode",
        on_finish_action="keep",
        deferrable=False,
        poll_interval=1,
    )
    failed = TFJobOperator(
        task_id="failed",
        image="python:3.11",
        command=PY + ["import time; time.sleep(30)"],
        chief=1,
        worker={{"replicas": 1, "command": PY + [{failing!r}]}},
        restart_policy="ExitCode",
        deferrable=True,
        poll_interval=1,
    )
    succeeded = TFJobOperator(
        task_id="succeeded",
        image="python:3.11",
        command=PY + [{succeeding!r}],
        chief=1,
        worker=2,
        restart_policy="ExitCode",
        poll_interval=1,
    )

    @task
    def plain() -> int:
        return 1

    # Last: its tab is read while it runs, once the api-server is up.
    [recovered, failed, succeeded, plain()] >> TFJobOperator(
        task_id="running",
        image="python:3.11",
        command=PY + [{training!r}, {workdir!r}],
        chief=1,
        worker=2,
        poll_interval=1,
        trigger_rule="all_done",
    )
"""


@dataclass
class TabSite:
    base_url: str
    run: RunOutcome
    sandbox: Any
    driver: Any
    screenshots: Path | None
    while_running: dict[str, Any]  # the tab of the task ``running`` read while it ran, or the error

    def open(self, task_id: str) -> TabContent:
        return _open_tab(self.driver, self.base_url, self.run.run_id, task_id)

    def open_live(self, task_id: str, *, attempts: int = 4) -> TabContent:
        """The tab read live; on a loaded machine a live read may miss its deadline (the tab then
        says so and shows the record), so the tab is opened again a few times."""
        for _ in range(attempts - 1):
            tab = self.open(task_id)
            if tab.status != "record" or "could not be read" not in (tab.notice or ""):
                return tab
        return self.open(task_id)

    def screenshot(self, name: str) -> None:
        _screenshot(self.driver, self.screenshots, name)


def _open_tab(driver: Any, base_url: str, run_id: str, task_id: str) -> TabContent:
    driver.switch_to.default_content()
    driver.get(f"{base_url}/dags/{DAG_ID}/runs/{quote(run_id, safe='')}/tasks/{task_id}/plugin/tfjob")
    return read_tab(driver, in_iframe=True)


def _screenshot(driver: Any, directory: Path | None, name: str) -> None:
    """The Airflow page with the tab, tall enough for the whole tab (only when asked for)."""
    if directory is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.switch_to.default_content()
    driver.set_window_size(1400, max(900, height + 420))
    time.sleep(1.5)  # the timeline redraws for the new width
    driver.save_screenshot(str(directory / f"tfjob-tab-{name}.png"))
    driver.set_window_size(1400, 1100)


def _running_task_run_id() -> str | None:
    """The run id of the task instance ``running`` once it runs."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        found = (
            session.query(TaskInstance.run_id)
            .filter(
                TaskInstance.dag_id == DAG_ID,
                TaskInstance.task_id == "running",
                TaskInstance.state == "running",
            )
            .first()
        )
    return None if found is None else str(found[0])


def _replicas_running(base_url: str, run_id: str) -> bool:
    query = urlencode({"dag_id": DAG_ID, "run_id": run_id, "task_id": "running", "map_index": -1})
    with urllib.request.urlopen(f"{base_url}/tfjob/api/view?{query}", timeout=10) as answer:
        view = json.loads(answer.read())
    rows = [row for group in view["replicas"]["groups"] for row in group["rows"]]
    return bool(
        view["status"] == "live"
        and view["running"]
        and len(rows) == 3
        and all(row["phase"] == "Running" and row["start"] for row in rows)
    )


def _read_while_running(
    driver: Any, base_url: str, api_server: Any, workdir: Path, shots: Path | None, run_ended: threading.Event
) -> dict[str, Any]:
    """The tab of the task ``running`` once its replicas run (and its picture); then, whatever
    happened, the file that lets them finish."""
    try:
        _wait_for_api_server(base_url, api_server)
        run_id = _running_task_run_id()
        while run_id is None:
            assert not run_ended.is_set(), "the DAG run ended before the task 'running' ran"
            time.sleep(0.5)
            run_id = _running_task_run_id()
        wait_until(lambda: _replicas_running(base_url, run_id), timeout=120, what="the replicas running")
        tab = _open_tab(driver, base_url, run_id, "running")
        _screenshot(driver, shots, "running")
        return {"tab": tab}
    except BaseException as error:  # reported by the test
        return {"error": error}
    finally:
        (workdir / "release").touch()


def _api_server_env(port: int, conn_uri: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
            "AIRFLOW__API__EXPOSE_STACKTRACE": "True",
            "AIRFLOW__API_AUTH__JWT_SECRET": "tfjob-tab-browser-" + "0123456789abcdef" * 4,
            "AIRFLOW_CONN_KUBERNETES_DEFAULT": conn_uri,
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _wait_for_api_server(base_url: str, process: Any, timeout: float = 240.0) -> None:
    def answers() -> bool:
        if not process.alive():
            raise AssertionError(f"api-server exited:\n{tail(process, 40)}")
        with urllib.request.urlopen(f"{base_url}/api/v2/monitor/health", timeout=5) as answer:
            return bool(answer.status == 200)

    wait_until(answers, timeout=timeout, what="the api-server")


@pytest.fixture(scope="module")
def site(airflow_db: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TabSite]:
    from tfjob_sandbox.testing import running_sandbox

    from tests.e2e.airflow_stack import free_port
    from tests.integration.conftest import FAST_SANDBOX_OPTIONS

    require_browser()
    root = tmp_path_factory.mktemp("tfjob-tab")
    shots = os.environ.get("TFJOB_TAB_SCREENSHOTS")
    with (
        running_sandbox(workdir=root / "pods", **FAST_SANDBOX_OPTIONS) as sandbox,
        ProcessGroupSet(marker=new_run_marker()) as processes,
    ):
        before = os.environ.get("AIRFLOW_CONN_KUBERNETES_DEFAULT")
        os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = sandbox.airflow_conn_uri
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        api_server = processes.start(
            "api-server",
            [sys.executable, "-m", "airflow", "api-server"],
            env=_api_server_env(port, sandbox.airflow_conn_uri),
            cwd=root,
            log_path=root / "api-server.log",
        )
        source = DAG_SOURCE.format(
            dag_id=DAG_ID,
            chief=CHIEF,
            worker=WORKER,
            workdir=str(root),
            succeeding=SUCCEEDING,
            failing=FAILING,
            training=TRAINING,
        )
        path = write_dag_file(DAGS_FOLDER, DAG_ID, source)
        screenshots = Path(shots) if shots else None
        try:
            # All users are admins: the api-server adds an admin's token to every request.
            with chromium() as driver:
                run_ended = threading.Event()
                while_running: dict[str, Any] = {}
                reader = threading.Thread(
                    target=lambda: while_running.update(
                        _read_while_running(driver, base_url, api_server, root, screenshots, run_ended)
                    ),
                    name="tfjob-tab-running",
                    daemon=True,
                )
                reader.start()
                try:
                    run = run_dag(load_dag(path, DAG_ID))
                finally:
                    run_ended.set()
                    reader.join(timeout=300)
                _wait_for_api_server(base_url, api_server)
                yield TabSite(base_url, run, sandbox, driver, screenshots, while_running)
        finally:
            path.unlink(missing_ok=True)
            if before is None:
                os.environ.pop("AIRFLOW_CONN_KUBERNETES_DEFAULT", None)
            else:
                os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = before


def _slots(tab: TabContent) -> list[str]:
    return sorted(row["key"] for row in tab.rows)


def _row_text(tab: TabContent, key: str) -> str:
    (text,) = [row["text"] for row in tab.rows if row["key"] == key]
    return str(text)


def _delete_tfjob(sandbox: Any, name: str) -> None:
    from kubernetes import client
    from tfjob_sandbox.testing import sync_api_client

    api = sync_api_client(sandbox)
    try:
        jobs = client.CustomObjectsApi(api)
        jobs.delete_namespaced_custom_object("kubeflow.org", "v1", "default", "tfjobs", name)

        def gone() -> bool:
            try:
                jobs.get_namespaced_custom_object("kubeflow.org", "v1", "default", "tfjobs", name)
            except client.ApiException as error:
                return error.status == 404
            return False

        wait_until(gone, timeout=60, what=f"TFJob {name} deleted")
    finally:
        api.close()


def test_a_recovered_tfjob_live_and_then_from_the_record(site: TabSite) -> None:
    assert site.run.task("recovered").state == "success"
    live = site.open_live("recovered")
    assert live.status == "live", live.notice
    assert live.verdict_state == "Succeeded"
    assert _slots(live) == ["Chief-0", "PS-0", "Worker-0", "Worker-1"]
    assert live.lanes["Worker-1"][0] == "failed_retryable" and len(live.lanes["Worker-1"]) == 2
    assert [len(live.lanes[key]) for key in ("Chief-0", "Worker-0", "PS-0")] == [1, 1, 1]
    assert live.verdict_line == 1
    # The PS ran until the training operator deleted it when the job ended: its row says so.
    assert live.lanes["PS-0"] == ["deleted"]
    assert "Deleted after the job ended" in _row_text(live, "PS-0")
    # The chief's log (the default pick) is there, its hostile line as text, nothing run.
    assert "chief says hello" in live.log and SHOWN in live.log
    assert live.pwned is None and live.images == 0
    site.screenshot("recovered")

    name = live.job_name.split("/", 1)[1]
    _delete_tfjob(site.sandbox, name)
    recorded = site.open("recovered")
    assert recorded.status == "record"
    assert "no longer exists" in recorded.notice
    assert recorded.verdict_state == live.verdict_state and recorded.verdict_reason == live.verdict_reason
    assert _slots(recorded) == _slots(live)
    assert recorded.lanes == live.lanes
    assert recorded.verdict_line == 1
    assert "Deleted after the job ended" in _row_text(recorded, "PS-0")


def test_a_permanently_failed_tfjob_marks_its_culprit(site: TabSite) -> None:
    assert site.run.task("failed").state == "failed"
    # Whether the provider deleted the failed TFJob depends on whether its chief was still running
    # when the task concluded (a race with the training operator's clean-up): live or recorded,
    # the tab shows the same culprit.
    tab = site.open_live("failed")
    assert tab.status == "live" or "no longer exists" in tab.notice, tab.notice
    assert tab.verdict_state == "Failed"
    culprits = [row["key"] for row in tab.rows if row["culprit"]]
    assert culprits == ["Worker-0"]
    assert "failed_permanent" in tab.lanes["Worker-0"]
    # The culprit's log is the one shown first: the lines the failure report kept.
    assert "worker 0 fails" in tab.log
    site.screenshot("failed")


def test_a_succeeded_tfjob_deleted_at_the_end_is_shown_from_the_record(site: TabSite) -> None:
    assert site.run.task("succeeded").state == "success"
    tab = site.open("succeeded")
    assert tab.status == "record", tab.notice
    assert tab.verdict_state == "Succeeded"
    assert _slots(tab) == ["Chief-0", "Worker-0", "Worker-1"]
    assert tab.lanes == {"Chief-0": ["succeeded"], "Worker-0": ["deleted"], "Worker-1": ["succeeded"]}
    # Worker 0 still ran when the chief succeeded: the training operator deleted it.
    assert "Deleted after the job ended" in _row_text(tab, "Worker-0")
    assert "Running" not in _row_text(tab, "Worker-0")
    # The chief decided the verdict: its last lines, which the task printed, are in the record.
    assert tab.log.splitlines() == ["chief 0 trains", "chief 0 trained"]
    assert "kept in the record" in tab.log_status and "older lines cut" not in tab.log_status
    site.screenshot("succeeded")


def test_a_task_without_a_tfjob_says_so_in_one_sentence(site: TabSite) -> None:
    from tfjob_provider.ui.data import NO_TFJOB

    tab = site.open("plain")
    assert tab.status == "no_tfjob"
    assert tab.notice == NO_TFJOB
    assert tab.rows == [] and tab.verdict_state is None
    site.screenshot("no-tfjob")


def test_a_running_task_is_read_live_and_kept_up_to_date(site: TabSite) -> None:
    if "error" in site.while_running:
        raise site.while_running["error"]
    tab = site.while_running["tab"]
    assert (tab.status, tab.running) == ("live", "true"), tab.notice
    assert _slots(tab) == ["Chief-0", "Worker-0", "Worker-1"]
    assert all("Running" in row["text"] for row in tab.rows)
    assert tab.lanes == {key: ["running"] for key in ("Chief-0", "Worker-0", "Worker-1")}
    assert tab.verdict_line == 0
    assert "training until released" in tab.log and "live" in tab.log_status
    assert site.run.task("running").state == "success"

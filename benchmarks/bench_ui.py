"""The TFJob tab's data endpoint on a 100-replica TFJob with 20 recreations: time and requests per view.

Runs a real DAG (``dag.test()``, deferrable, on a temporary ``AIRFLOW_HOME``) whose TFJob has
1 Chief and 99 Workers of scripted sandbox pods; 20 workers are ended with 137 while the trigger
watches (the training operator recreates them under ``ExitCode``), then the chief with 0; with
``cleanPodPolicy: None`` the other 99 pods stay, so a live view lists 100 pods. It then
times :func:`tfjob_provider.ui.data.build_view` — the function behind ``/api/view`` — read live
(the TFJob kept) and from the ``tfjob_record`` (the TFJob deleted), and counts the API requests
of each view in the sandbox's request log. Target (issue 18): < 200 ms, 1 GET + 2 LISTs.

Views are spaced by ``--pause`` seconds: the connection's token bucket (5 requests/s by default)
is shared with everything else of the process, as in the api-server.
Run: ``.venv/bin/python benchmarks/bench_ui.py`` (``uptime`` beside it: figures taken on a busy
machine are noisy). Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HOME = Path(tempfile.mkdtemp(prefix="bench-ui-airflow-"))
os.environ["AIRFLOW_HOME"] = str(HOME)
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(HOME / "dags")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{HOME / 'airflow.db'}"
os.environ["AIRFLOW__CORE__ALLOWED_DESERIALIZATION_CLASSES_REGEXP"] = r"(airflow|tfjob_provider)\..*"
(HOME / "dags").mkdir()
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test harness

from tests.integration.airflow_harness import load_dag, run_dag, write_dag_file, xcom_value  # noqa: E402
from tfjob_provider.ui.record import size_of  # noqa: E402

RUN_FOREVER = json.dumps({"steps": [{"run": None}]})

DAG = """
from __future__ import annotations
import datetime
from airflow.sdk import DAG
from tfjob_provider.operators.tfjob import TFJobOperator

with DAG("bench_ui", schedule=None, start_date=datetime.datetime(2024, 1, 1)) as dag:
    TFJobOperator(
        task_id="train",
        image="tf:2.15",
        command=["train"],
        chief=1,
        worker={workers},
        restart_policy="ExitCode",
        clean_pod_policy="None",
        pod_annotations={{"tfjob-sandbox/script": {script!r}}},
        deferrable=True,
        on_finish_action="keep",
        poll_interval=1,
    )
"""


def _pods(sandbox: Any) -> list[dict[str, Any]]:
    from tfjob_sandbox.api.resource_types import PODS

    found: list[dict[str, Any]] = sandbox.call(sandbox.store.list, PODS, namespace="default")["items"]
    return found


def _running(pod: dict[str, Any]) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return any("running" in (status.get("state") or {}) for status in statuses)


def _wait(condition: Any, what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def _drive(sandbox: Any, workers: int, recreations: int, errors: list[BaseException]) -> None:
    """End ``recreations`` workers with 137 once all replicas run, then the chief with 0."""
    try:
        _wait(lambda: sum(map(_running, _pods(sandbox))) == workers + 1, "every replica running")
        time.sleep(2)  # the trigger is subscribed by now
        for index in range(recreations):
            pod = next(p for p in _pods(sandbox) if p["metadata"]["name"].endswith(f"-worker-{index}"))
            sandbox.call(sandbox.kubelet.end_scripted, "default", pod["metadata"]["name"], exit_code=137)
        _wait(
            lambda: (
                sum(map(_running, _pods(sandbox))) == workers + 1
                and sum(p["metadata"]["name"].endswith("-chief-0") for p in _pods(sandbox)) == 1
            ),
            "the recreated workers running",
        )
        time.sleep(2)
        chief = next(p for p in _pods(sandbox) if p["metadata"]["name"].endswith("-chief-0"))
        sandbox.call(sandbox.kubelet.end_scripted, "default", chief["metadata"]["name"], exit_code=0)
    except BaseException as error:  # reported by the main thread
        errors.append(error)


def _time_views(
    sandbox: Any, run: Any, repeats: int, pause: float
) -> tuple[list[float], list[int], dict[str, Any]]:
    from tfjob_provider.ui.data import build_view

    milliseconds, requests = [], []
    view: dict[str, Any] = {}
    for _ in range(repeats):
        time.sleep(pause)
        before = sandbox.request_total()
        started = time.perf_counter()
        view = build_view(dag_id="bench_ui", run_id=run.run_id, task_id="train", map_index=-1)
        milliseconds.append((time.perf_counter() - started) * 1000)
        requests.append(sandbox.request_total() - before)
    return milliseconds, requests, view


def _report(label: str, milliseconds: list[float], requests: list[int], view: dict[str, Any]) -> None:
    ordered = sorted(milliseconds)
    bars = sum(len(lane["bars"]) for lane in view["timeline"]["lanes"])
    rows = sum(len(group["rows"]) for group in view["replicas"]["groups"])
    lanes = len(view["timeline"]["lanes"])
    print(
        f"{label:<28} status {view['status']:<7} p50 {statistics.median(ordered):6.1f} ms  "
        f"p95 {ordered[int(len(ordered) * 0.95) - 1]:6.1f} ms  max {ordered[-1]:6.1f} ms  "
        f"requests/view {sorted(set(requests))}  rows {rows}  lanes {lanes}  bars {bars}"
    )


def _breakdown(name: str, repeats: int, pause: float) -> None:
    """Median milliseconds of each request of a live read, on the tab's own client."""
    from tfjob_provider.ui import data, reads

    client = data._client("kubernetes_default")
    steps = {
        "GET tfjob": lambda: client.get_tfjob(name, namespace="default"),
        "LIST pods": lambda: client.run(reads.list_pods(client.session, name, "default")),
        "LIST events": lambda: client.run(reads.list_namespace_events(client.session, "default")),
    }
    figures = {label: [] for label in steps}
    for _ in range(repeats):
        time.sleep(pause)
        for label, step in steps.items():
            started = time.perf_counter()
            step()
            figures[label].append((time.perf_counter() - started) * 1000)
    print(
        "  of which: " + ", ".join(f"{label} {statistics.median(ms):.1f} ms" for label, ms in figures.items())
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=99)
    parser.add_argument("--recreations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--pause", type=float, default=0.7)
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)
    from tfjob_sandbox.testing import running_sandbox

    from tfjob_provider.hooks.tfjob import TFJobHook

    with running_sandbox(workdir=HOME / "pods") as sandbox:
        os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"] = sandbox.airflow_conn_uri
        source = DAG.format(workers=args.workers, script=RUN_FOREVER)
        dag = load_dag(write_dag_file(HOME / "dags", "bench_ui", source), "bench_ui")
        errors: list[BaseException] = []
        driver = threading.Thread(
            target=_drive, args=(sandbox, args.workers, args.recreations, errors), daemon=True
        )
        driver.start()
        run = run_dag(dag)
        driver.join(timeout=5)
        if errors or run.task("train").state != "success":
            raise SystemExit(f"the run did not succeed: {run.task('train')} {errors}")
        record = xcom_value(run, "train", "tfjob_record")
        gone = sum(1 for row in record["pods"] if row[-1])
        print(
            f"TFJob of {args.workers + 1} replicas, {args.recreations} recreations: tfjob_record "
            f"{size_of(record)} bytes ({len(record['pods'])} pod rows, {gone} of them gone, "
            f"{len(record['events'])} events, {record['events_more']} more not kept)"
        )
        _report("live (TFJob kept)", *_time_views(sandbox, run, args.repeats, args.pause))
        name = xcom_value(run, "train", "tfjob_name")
        _breakdown(name, 5, args.pause)
        hook = TFJobHook()
        hook.client.delete_tfjob(name, namespace="default")
        _wait(
            lambda: not any(p["metadata"]["name"].startswith(name) for p in _pods(sandbox)), "the pods gone"
        )
        _report("record (TFJob deleted)", *_time_views(sandbox, run, args.repeats, args.pause))


if __name__ == "__main__":
    main()

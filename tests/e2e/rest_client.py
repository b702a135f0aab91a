"""A small client for Airflow 3's public REST API (``/api/v2``) with the simple auth manager's tokens.

Why our own and not the generated ``apache-airflow-client``: it is not a dependency of the project,
and the full-stack test needs only a handful of calls.  Authentication is what the simple auth
manager implements (``airflow/api_fastapi/auth/managers/simple``): ``POST /auth/token`` with a
configured user's name and password answers ``{"access_token": <JWT>}``, sent as a bearer token.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any


class RestError(Exception):
    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path} -> HTTP {status}: {body[:3000]}")
        self.status = status
        self.body = body


class AirflowRestClient:
    """Calls ``/api/v2`` of one api-server as one user of the simple auth manager."""

    def __init__(self, base_url: str, *, username: str, password: str, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self.timeout = timeout
        self._token: str | None = None

    # --- plumbing ---------------------------------------------------------------------------------

    def _send(self, method: str, path: str, body: Any = None, *, auth: bool = True) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self.token()}"
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise RestError(method, path, error.code, error.read().decode(errors="replace")) from None
        return json.loads(raw) if raw else None

    def token(self) -> str:
        if self._token is None:
            answer = self._send(
                "POST", "/auth/token", {"username": self.username, "password": self.password}, auth=False
            )
            self._token = str(answer["access_token"])
        return self._token

    def get(self, path: str) -> Any:
        return self._send("GET", path)

    # --- calls ------------------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return dict(self._send("GET", "/api/v2/monitor/health", auth=False))

    def dag(self, dag_id: str) -> dict[str, Any]:
        return dict(self.get(f"/api/v2/dags/{dag_id}"))

    def import_errors(self) -> list[dict[str, Any]]:
        return list(self.get("/api/v2/importErrors")["import_errors"])

    def trigger(self, dag_id: str, *, logical_date: str, conf: dict[str, Any] | None = None) -> str:
        """Create a DAG run; its run id."""
        run = self._send(
            "POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": logical_date, "conf": conf or {}}
        )
        return str(run["dag_run_id"])

    def dag_run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return dict(self.get(f"/api/v2/dags/{dag_id}/dagRuns/{_quote(run_id)}"))

    def task_instance(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        return dict(self.get(f"/api/v2/dags/{dag_id}/dagRuns/{_quote(run_id)}/taskInstances/{task_id}"))

    def task_instances(self, dag_id: str, run_id: str) -> dict[str, dict[str, Any]]:
        listing = self.get(f"/api/v2/dags/{dag_id}/dagRuns/{_quote(run_id)}/taskInstances")
        return {ti["task_id"]: ti for ti in listing["task_instances"]}

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        """The XCom's value, or None when there is none."""
        try:
            entry = self.get(
                f"/api/v2/dags/{dag_id}/dagRuns/{_quote(run_id)}/taskInstances/{task_id}/xcomEntries/{key}"
            )
        except RestError as error:
            if error.status == 404:
                return None
            raise
        value = entry.get("value")
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int) -> str:
        """The task log of one try as text, one line per entry, exceptions as ``Type: message`` lines
        (Airflow 3 stores structured entries; ``error_detail`` carries a raised exception)."""
        answer = self.get(
            f"/api/v2/dags/{dag_id}/dagRuns/{_quote(run_id)}/taskInstances/{task_id}/logs/{try_number}"
            "?full_content=true"
        )
        lines: list[str] = []
        for entry in answer.get("content") or []:
            if not isinstance(entry, dict):
                lines.append(str(entry))
                continue
            lines.append(str(entry.get("event", "")))
            for error in entry.get("error_detail") or []:
                if isinstance(error, dict):
                    lines.append(f"{error.get('exc_type')}: {error.get('exc_value')}")
        return "\n".join(lines)

    def set_task_state(self, dag_id: str, run_id: str, task_id: str, state: str) -> Any:
        """Mark a task instance (``failed``, ``success``, ``skipped``) as a user does in the UI."""
        return self._send(
            "PATCH",
            f"/api/v2/dags/{dag_id}/dagRuns/{_quote(run_id)}/taskInstances/{task_id}",
            {"new_state": state},
        )

    # --- waiting ----------------------------------------------------------------------------------

    def wait_for_task(
        self,
        dag_id: str,
        run_id: str,
        task_id: str,
        *,
        until: Callable[[dict[str, Any]], bool],
        timeout: float,
        what: str,
    ) -> dict[str, Any]:
        """Poll the task instance until ``until(ti)``; AssertionError naming ``what`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        ti: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                ti = self.task_instance(dag_id, run_id, task_id)
            except RestError as error:
                if error.status != 404:
                    raise
            else:
                if until(ti):
                    return ti
            time.sleep(0.5)
        raise AssertionError(
            f"{dag_id}.{task_id} did not reach {what} within {timeout:.0f}s "
            f"(last: state={ti.get('state')}, try={ti.get('try_number')})"
        )

    def wait_for_run(
        self, dag_id: str, run_id: str, *, timeout: float, states: Iterable[str] = ("success", "failed")
    ) -> dict[str, Any]:
        wanted = set(states)
        deadline = time.monotonic() + timeout
        run: dict[str, Any] = {}
        while time.monotonic() < deadline:
            run = self.dag_run(dag_id, run_id)
            if run.get("state") in wanted:
                return run
            time.sleep(1)
        raise AssertionError(
            f"DAG run {dag_id} {run_id} did not end within {timeout:.0f}s: {run.get('state')}"
        )


def _quote(value: str) -> str:
    return urllib.parse.quote(value, safe="")

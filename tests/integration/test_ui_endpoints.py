"""The TFJob tab's endpoints with Airflow's real authorization: who gets data, what is capped, how
cluster-written text leaves the server.  The data comes from a hand-made view (tests/ui_views.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.integration.ui_auth import NO_LOGS_USER
from tests.ui_views import HOSTILE, StaticSource, recovered_view

QUERY = {"dag_id": "d", "run_id": "manual__1", "task_id": "train", "map_index": "{MAP_INDEX}"}
POD = "train-abc-chief-0"


@pytest.fixture
def auth(airflow_db: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Airflow's global auth manager set up as the api-server sets it up (a test subclass of the
    simple auth manager); yields a function making a user's token."""
    from airflow.api_fastapi.app import create_auth_manager, purge_cached_app
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    monkeypatch.setenv("AIRFLOW__CORE__AUTH_MANAGER", "tests.integration.ui_auth.LogsDeniedAuthManager")
    monkeypatch.setenv("AIRFLOW__API_AUTH__JWT_SECRET", "tfjob-tab-test-secret-" + "0123456789abcdef" * 4)
    purge_cached_app()
    manager = create_auth_manager()

    def token(username: str, role: str | None) -> str:
        return str(manager.generate_jwt(SimpleAuthManagerUser(username=username, role=role)))

    yield token
    purge_cached_app()


@pytest.fixture
def source() -> StaticSource:
    return StaticSource(recovered_view())


@pytest.fixture
def client(source: StaticSource) -> TestClient:
    from tfjob_provider.ui.app import create_app

    return TestClient(create_app(source))


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


ENDPOINTS = [
    ("/page", QUERY),
    ("/api/view", QUERY),
    ("/api/logs", {**QUERY, "pod": POD}),
    ("/api/logs", {**QUERY, "pod": POD, "download": "1"}),
]


@pytest.mark.parametrize(("path", "params"), ENDPOINTS)
def test_no_credentials_get_401_and_no_data(
    auth: Any, client: TestClient, source: StaticSource, path: str, params: dict[str, str]
) -> None:
    answer = client.get(path, params=params)
    assert answer.status_code == 401
    assert answer.json() == {"detail": "Not authenticated"}
    assert source.calls == []


@pytest.mark.parametrize(("path", "params"), ENDPOINTS)
def test_a_forged_token_or_a_user_without_a_role_gets_403_and_no_data(
    auth: Any, client: TestClient, source: StaticSource, path: str, params: dict[str, str]
) -> None:
    client.cookies.set("_token", "not-a-jwt")
    forged = client.get(path, params=params)
    client.cookies.clear()
    no_role = client.get(path, params=params, headers=bearer(auth("nobody", None)))
    assert (forged.status_code, no_role.status_code) == (403, 403)
    assert POD not in forged.text + no_role.text
    assert source.calls == []


def test_a_viewer_reads_the_view_by_bearer_header_or_cookie(
    auth: Any, client: TestClient, source: StaticSource
) -> None:
    token = auth("alice", "viewer")
    by_header = client.get("/api/view", params=QUERY, headers=bearer(token))
    client.cookies.set("_token", token)
    by_cookie = client.get("/api/view", params=QUERY)
    assert by_header.status_code == by_cookie.status_code == 200
    view = by_header.json()
    assert view["verdict"]["state"] == "Succeeded"
    assert view["logs"]["allowed"] is True
    assert view["logs"]["kept"] == {POD: ["step 10 loss 0.12", "training done"]}
    assert by_header.headers["cache-control"] == "no-store"
    # An unmapped task's literal {MAP_INDEX} placeholder reads as -1.
    assert source.calls[0] == (
        "build_view",
        {"dag_id": "d", "run_id": "manual__1", "task_id": "train", "map_index": -1},
    )


def test_without_the_task_logs_permission_no_log_line_leaves_the_server(
    auth: Any, client: TestClient, source: StaticSource
) -> None:
    token = auth(NO_LOGS_USER, "viewer")
    view = client.get("/api/view", params=QUERY, headers=bearer(token))
    logs = client.get("/api/logs", params={**QUERY, "pod": POD}, headers=bearer(token))
    assert view.status_code == 200
    assert (view.json()["logs"]["allowed"], view.json()["logs"]["kept"]) == (False, {})
    assert "training done" not in view.text
    assert logs.status_code == 403
    assert [name for name, _ in source.calls] == ["build_view"]


def test_the_line_count_is_capped_and_the_text_clipped_to_the_caps(
    auth: Any, client: TestClient, source: StaticSource
) -> None:
    source.MAX_LOG_LINES = 50
    source.MAX_LOG_BYTES = 1000
    source.log_text = "\n".join(f"line {number:04d}" for number in range(5000))
    answer = client.get(
        "/api/logs", params={**QUERY, "pod": POD, "lines": 10**9}, headers=bearer(auth("a", "viewer"))
    )
    assert answer.status_code == 200
    assert source.calls[-1] == ("read_log", {"pod": POD, "lines": 50, "map_index": -1})
    lines = answer.text.splitlines()
    assert len(lines) == 50 and lines[-1] == "line 4999"
    assert answer.headers["x-tfjob-log-truncated"] == "true"
    source.MAX_LOG_BYTES = 100
    clipped = client.get("/api/logs", params={**QUERY, "pod": POD}, headers=bearer(auth("a", "viewer")))
    assert len(clipped.content) <= 100 and clipped.text.splitlines()[-1] == "line 4999"
    assert clipped.text.splitlines()[0].startswith("line ")  # no half line at the top
    assert (
        client.get(
            "/api/logs", params={**QUERY, "pod": POD, "lines": 0}, headers=bearer(auth("a", "viewer"))
        ).status_code
        == 422
    )


def test_a_log_is_plain_text_and_its_download_a_safe_attachment(
    auth: Any, client: TestClient, source: StaticSource
) -> None:
    source.log_text = HOSTILE
    token = auth("a", "viewer")
    shown = client.get("/api/logs", params={**QUERY, "pod": POD}, headers=bearer(token))
    saved = client.get("/api/logs", params={**QUERY, "pod": POD, "download": "1"}, headers=bearer(token))
    assert shown.headers["content-type"] == "text/plain; charset=utf-8"
    assert shown.headers["x-content-type-options"] == "nosniff"
    assert shown.text == HOSTILE == saved.text
    assert "content-disposition" not in shown.headers
    assert saved.headers["content-disposition"] == f'attachment; filename="{POD}.log"'


def test_a_pod_that_is_not_the_tasks_is_404(auth: Any, client: TestClient) -> None:
    answer = client.get("/api/logs", params={**QUERY, "pod": '../x"; y'}, headers=bearer(auth("a", "viewer")))
    assert answer.status_code == 404
    assert answer.json() == {"detail": "This task instance's TFJob has no such pod."}


def test_download_names_keep_only_safe_characters() -> None:
    from tfjob_provider.ui.app import download_name

    assert download_name('../../etc/passwd"; rm -rf') == "etc_passwd_rm_-rf.log"
    assert download_name("...") == "pod.log"


def test_the_page_carries_no_data_and_forbids_inline_script(auth: Any, client: TestClient) -> None:
    answer = client.get("/page", params=QUERY, headers=bearer(auth("a", "viewer")))
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'self'" in policy
    assert POD not in answer.text
    assert '<script src="static/tfjob.js" defer></script>' in answer.text


def test_the_script_and_style_are_served_and_nothing_else(client: TestClient) -> None:
    script = client.get("/static/tfjob.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" not in script.text and "insertAdjacentHTML" not in script.text
    assert client.get("/static/tfjob.css").status_code == 200
    assert client.get("/static/app.py").status_code == 404
    assert client.get("/static/..%2Fapp.py").status_code == 404


def test_the_view_json_keeps_hostile_text_as_json_strings(auth: Any, source: StaticSource) -> None:
    from tfjob_provider.ui.app import create_app

    source.view["verdict"]["message"] = HOSTILE
    answer = TestClient(create_app(source)).get(
        "/api/view", params=QUERY, headers=bearer(auth("a", "viewer"))
    )
    assert answer.headers["content-type"] == "application/json"
    assert json.loads(answer.text)["verdict"]["message"] == HOSTILE


def test_the_plugin_registers_the_tab_and_its_app_through_the_entry_point(airflow_db: None) -> None:
    from airflow import plugins_manager

    plugin = next(p for p in plugins_manager._get_plugins()[0] if p.name == "tfjob_provider")
    assert plugin.external_views == [
        {
            "name": "TFJob",
            "href": "/tfjob/page?dag_id={DAG_ID}&run_id={RUN_ID}&task_id={TASK_ID}&map_index={MAP_INDEX}",
            "destination": "task_instance",
            "url_route": "tfjob",
        }
    ]
    apps, _ = plugins_manager.get_fastapi_plugins()
    ours = [entry for entry in apps if entry["url_prefix"] == "/tfjob"]
    assert len(ours) == 1
    routes = {route.path for route in ours[0]["app"].routes}
    assert {"/page", "/api/view", "/api/logs", "/static/{name}"} <= routes


def test_importing_the_plugin_builds_no_app() -> None:
    probe = (
        "import sys, tfjob_provider.ui.plugin as p\n"
        "assert p.TFJobPlugin.external_views[0]['url_route'] == 'tfjob'\n"
        "print(sorted(m for m in ('fastapi', 'starlette', 'tfjob_provider.ui.app') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"

"""The TFJob tab's FastAPI app: the page, its script and style, the view JSON and the log tail.

Mounted by the plugin under ``/tfjob`` in the api-server. Every endpoint that returns data asks
Airflow's auth manager: task instances for the page and the view, task logs for the logs (and for
the log lines the view carries).
"""

from __future__ import annotations

import importlib
import re
import threading
from importlib import resources
from typing import Annotated, Any, Final, Protocol

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
from airflow.models.dag import DagModel
from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

#: The page may load its own script, style and data, and be framed by Airflow's UI only.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'self'; base-uri 'none'; form-action 'none'"
)
NO_STORE: Final = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
DEFAULT_LOG_LINES: Final = 200
_STATIC: Final = {"tfjob.js": "text/javascript", "tfjob.css": "text/css"}
_UNSAFE_FILENAME: Final = re.compile(r"[^A-Za-z0-9._-]+")


class LogTailLike(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def truncated(self) -> bool: ...


class ViewSource(Protocol):
    """What the endpoints read from: :mod:`tfjob_provider.ui.data` (tests give their own)."""

    @property
    def MAX_LOG_LINES(self) -> int: ...
    @property
    def MAX_LOG_BYTES(self) -> int: ...
    @property
    def UnknownPod(self) -> type[Exception]: ...

    def build_view(
        self, *, dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int | None = None
    ) -> dict[str, Any]: ...

    def read_log(
        self, *, dag_id: str, run_id: str, task_id: str, map_index: int, pod: str, lines: int
    ) -> LogTailLike: ...


def map_index_of(text: str) -> int:
    """The map index from the tab's URL; ``-1`` for an unmapped task, whose placeholder may stay literal."""
    try:
        return int(text)
    except ValueError:
        return -1


def download_name(pod: str) -> str:
    """A file name for a pod's log that no browser or shell reads as anything but a name."""
    return (_UNSAFE_FILENAME.sub("_", pod).strip("._") or "pod")[:200] + ".log"


def clip_log(text: str, *, max_lines: int, max_bytes: int) -> tuple[str, bool]:
    """The last ``max_lines`` lines of ``text`` within ``max_bytes`` (UTF-8); whether anything was cut."""
    lines = text.splitlines()
    clipped = len(lines) > max_lines
    lines = lines[-max_lines:] if max_lines > 0 else []
    kept = "\n".join(lines)
    encoded = kept.encode("utf-8")
    if len(encoded) > max_bytes:
        kept = encoded[-max_bytes:].decode("utf-8", errors="ignore")
        kept = kept.split("\n", 1)[1] if "\n" in kept else kept
        clipped = True
    return kept, clipped


def _read_static(name: str) -> str:
    return resources.files("tfjob_provider.ui").joinpath("static", name).read_text(encoding="utf-8")


def static_asset(name: str) -> Response:
    """The page's script or style (no data: served without a login)."""
    if name not in _STATIC:
        raise HTTPException(404, "Not found")
    return Response(
        _read_static(name), media_type=_STATIC[name], headers={"X-Content-Type-Options": "nosniff"}
    )


def may_read_logs(user: BaseUser, dag_id: str) -> bool:
    """Whether ``user`` may read this DAG's task logs (the log lines the view carries)."""
    return bool(
        get_auth_manager().is_authorized_dag(
            method="GET",
            access_entity=DagAccessEntity.TASK_LOGS,
            details=DagDetails(id=dag_id, team_name=DagModel.get_team_name(dag_id)),
            user=user,
        )
    )


def _import_kubernetes_side() -> None:
    for module in ("tfjob_provider.hooks.tfjob", "tfjob_provider.kube.sync_client"):
        importlib.import_module(module)


def create_app(source: ViewSource | None = None) -> FastAPI:
    """The app the plugin mounts; ``source`` defaults to :mod:`tfjob_provider.ui.data`.

    With the default source, the Kubernetes client is imported in the background as the app is
    built, so the first live read does not spend its few seconds on imports.
    """
    if source is None:
        from tfjob_provider.ui import data

        threading.Thread(target=_import_kubernetes_side, name="tfjob-tab-imports", daemon=True).start()
        view_source: ViewSource = data
    else:
        view_source = source

    read_ti = [Depends(requires_access_dag("GET", DagAccessEntity.TASK_INSTANCE))]
    read_logs = [Depends(requires_access_dag("GET", DagAccessEntity.TASK_LOGS))]
    app = FastAPI(title="TFJob tab", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/page", dependencies=read_ti, response_class=HTMLResponse)
    def page(dag_id: str) -> HTMLResponse:
        return HTMLResponse(
            _read_static("tfjob.html"),
            headers={**NO_STORE, "Content-Security-Policy": CONTENT_SECURITY_POLICY},
        )

    app.get("/static/{name}")(static_asset)

    @app.get("/api/view", dependencies=read_ti)
    def view(
        user: GetUserDep,
        dag_id: str,
        run_id: str,
        task_id: str,
        map_index: str = "-1",
        try_number: Annotated[int | None, Query(ge=1)] = None,
    ) -> JSONResponse:
        answer = view_source.build_view(
            dag_id=dag_id,
            run_id=run_id,
            task_id=task_id,
            map_index=map_index_of(map_index),
            try_number=try_number,
        )
        logs = answer.get("logs")
        if isinstance(logs, dict):
            allowed = may_read_logs(user, dag_id)
            logs["allowed"] = allowed
            if not allowed:
                logs["kept"] = {}
        return JSONResponse(answer, headers=NO_STORE)

    @app.get("/api/logs", dependencies=read_logs)
    def logs(
        dag_id: str,
        run_id: str,
        task_id: str,
        pod: str,
        map_index: str = "-1",
        lines: Annotated[int, Query(ge=1)] = DEFAULT_LOG_LINES,
        download: bool = False,
    ) -> PlainTextResponse:
        wanted = min(lines, view_source.MAX_LOG_LINES)
        try:
            tail = view_source.read_log(
                dag_id=dag_id,
                run_id=run_id,
                task_id=task_id,
                map_index=map_index_of(map_index),
                pod=pod,
                lines=wanted,
            )
        except view_source.UnknownPod:
            raise HTTPException(404, "This task instance's TFJob has no such pod.") from None
        text, clipped = clip_log(tail.text, max_lines=wanted, max_bytes=view_source.MAX_LOG_BYTES)
        headers = {
            **NO_STORE,
            "X-TFJob-Log-Source": tail.source,
            "X-TFJob-Log-Truncated": "true" if (tail.truncated or clipped) else "false",
        }
        if download:
            headers["Content-Disposition"] = f'attachment; filename="{download_name(pod)}"'
        return PlainTextResponse(text, headers=headers)

    return app

"""The Airflow plugin that adds the "TFJob" tab to every task instance (Airflow 3.1+).

Registered through the ``airflow.plugins`` entry point. Importing it is cheap: the FastAPI app is
built only when ``fastapi_apps`` is read, which only the api-server does.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlparse

from airflow.providers.common.compat.sdk import AirflowPlugin, conf

PLUGIN_NAME: Final = "tfjob_provider"
URL_PREFIX: Final = "/tfjob"
URL_ROUTE: Final = "tfjob"
PAGE_QUERY: Final = "dag_id={DAG_ID}&run_id={RUN_ID}&task_id={TASK_ID}&map_index={MAP_INDEX}"


def base_path() -> str:
    """The path part of ``[api] base_url`` without its trailing slash (``""`` when served at ``/``)."""
    base_url = str(conf.get("api", "base_url", fallback="") or "")
    path = urlparse(base_url).path if "://" in base_url else base_url
    return path.rstrip("/")


def tab_view() -> dict[str, Any]:
    """The ``external_views`` entry: a task-instance tab whose iframe opens the page."""
    return {
        "name": "TFJob",
        "href": f"{base_path()}{URL_PREFIX}/page?{PAGE_QUERY}",
        "destination": "task_instance",
        "url_route": URL_ROUTE,
    }


class _AppsOnRead:
    """A class attribute whose value, the plugin's FastAPI app entry, is built on first read."""

    def __init__(self) -> None:
        self._apps: list[dict[str, Any]] | None = None

    def __get__(self, instance: object, owner: type | None = None) -> list[dict[str, Any]]:
        if self._apps is None:
            from tfjob_provider.ui.app import create_app

            self._apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "TFJob tab"}]
        return self._apps


class TFJobPlugin(AirflowPlugin):
    """Adds the TFJob tab; on Airflow 3.0, which has no ``external_views``, only the endpoints."""

    name = PLUGIN_NAME
    fastapi_apps = _AppsOnRead()
    external_views = [tab_view()]

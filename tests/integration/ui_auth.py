"""An auth manager for the TFJob tab's endpoint tests: Airflow's simple auth manager with one user
(``no-logs``) that may read task instances but not task logs."""

from __future__ import annotations

from typing import Any

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

NO_LOGS_USER = "no-logs"


class LogsDeniedAuthManager(SimpleAuthManager):
    def is_authorized_dag(
        self, *, method: Any, user: Any, access_entity: Any = None, details: Any = None
    ) -> bool:
        if user.username == NO_LOGS_USER and access_entity == DagAccessEntity.TASK_LOGS:
            return False
        return bool(
            super().is_authorized_dag(method=method, user=user, access_entity=access_entity, details=details)
        )

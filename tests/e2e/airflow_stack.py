"""The full Airflow stack as separate processes: api-server, scheduler, dag-processor, triggerer.

Why a harness of its own: the full-stack test must exercise what ``dag.test()`` cannot — tasks run
by the LocalExecutor in their own supervised processes, deferral to a real triggerer process, the
REST API as users and the UI use it — and then kill and restart pieces of it.  Every component is
started in its own process group (:mod:`demo.processes`), can be stopped and
started again by name, and everything is stopped by PID when the test ends, passing or failing.

Configuration is environment only (see :mod:`demo.airflow_setup`): SQLite,
LocalExecutor with parallelism 4, the simple auth manager with one admin user whose password
file we write, a JWT secret shared by all processes, free ports for the api-server and both log
servers (other engineers' Airflow processes may run on this machine), and short intervals so the
test does not wait on defaults meant for production (retry delay 300 s, DAG folder rescans 300 s).
"""

from __future__ import annotations

import json
import secrets
import socket
import time
from collections.abc import Mapping
from pathlib import Path

from demo.airflow_setup import airflow_cli, airflow_environment, migrate_database
from demo.processes import ManagedProcess, ProcessGroupSet, tail
from tests.e2e.rest_client import AirflowRestClient, RestError

COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
USERNAME = "e2e"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class AirflowStack:
    """One Airflow installation under ``home`` and its four long-running components.

    :param processes: where the components are started (and stopped on the way out).
    :param connection_uri: ``AIRFLOW_CONN_KUBERNETES_DEFAULT`` (the sandbox's kubeconfig).
    :param extra_env: more environment (the example DAGs' Variables, ...).
    """

    def __init__(
        self,
        home: Path,
        *,
        processes: ProcessGroupSet,
        dags_folder: Path,
        connection_uri: str,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        self.home = home
        self.processes = processes
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.password = secrets.token_urlsafe(12)
        home.mkdir(parents=True, exist_ok=True)
        (home / "logs").mkdir(exist_ok=True)
        passwords = home / "simple_auth_manager_passwords.json"
        passwords.write_text(json.dumps({USERNAME: self.password}))
        self.env = airflow_environment(
            home,
            dags_folder=dags_folder,
            connection_uri=connection_uri,
            extra={
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__PARALLELISM": "4",
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "2",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USERNAME}:admin",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base_url}/execution/",
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__PORT": str(self.port),
                "AIRFLOW__API__WORKERS": "1",
                # A database error's cause (the statement and the driver's message) in the HTTP
                # answer, so a failing test says why and not only "look for ID ... in the logs".
                "AIRFLOW__API__EXPOSE_STACKTRACE": "True",
                "AIRFLOW__API__BASE_URL": self.base_url,
                "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(16),
                "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
                "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
                "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.5",
                # A crashed triggerer's triggers move to a live one once its heartbeat is this old.
                "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "2",
                "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "10",
                **(extra_env or {}),
            },
        )
        self.components: dict[str, ManagedProcess] = {}
        self.rest = AirflowRestClient(self.base_url, username=USERNAME, password=self.password)

    def migrate(self) -> None:
        migrate_database(self.env, log_path=self.home / "logs" / "db-migrate.log")

    def start(self, component: str) -> ManagedProcess:
        """Start one component (``airflow <component>``), logging to ``home/logs/<component>.log``."""
        if component in self.components and self.components[component].alive():
            raise RuntimeError(f"{component} is already running")
        process = self.processes.start(
            component,
            [*airflow_cli(), component],
            env=self.env,
            cwd=self.home,
            log_path=self.home / "logs" / f"{component}.log",
        )
        self.components[component] = process
        return process

    def stop(self, component: str, *, grace: float = 30.0) -> int | None:
        """Stop one component by PID (SIGTERM, then SIGKILL to its group); its exit status."""
        return self.components[component].stop(grace=grace)

    def crash(self, component: str) -> int | None:
        """Kill one component and all its descendants with SIGKILL, as a lost machine would."""
        return self.components[component].crash()

    def start_all(self) -> None:
        for component in COMPONENTS:
            self.start(component)

    def health(self) -> dict[str, str]:
        """Component → ``healthy``/``unhealthy`` as ``/api/v2/monitor/health`` reports them."""
        answer = self.rest.health()
        return {name: str((answer.get(name) or {}).get("status")) for name in answer}

    def wait_until_healthy(
        self, *, timeout: float = 180.0, components: tuple[str, ...] | None = None
    ) -> None:
        """Wait for the api-server to answer and the scheduler, triggerer and dag-processor to
        heartbeat; RuntimeError with the logs' ends if one dies or it takes too long."""
        wanted = components or ("scheduler", "triggerer", "dag_processor")
        deadline = time.monotonic() + timeout
        last: dict[str, str] = {}
        while time.monotonic() < deadline:
            for name, process in self.components.items():
                if not process.alive():
                    raise RuntimeError(f"{name} exited ({process.popen.returncode}):\n{tail(process)}")
            try:
                last = self.health()
            except (OSError, RestError):
                last = {}
            if all(last.get(name) == "healthy" for name in wanted):
                return
            time.sleep(1)
        logs = "\n".join(f"--- {name}\n{tail(process, 15)}" for name, process in self.components.items())
        raise RuntimeError(f"Airflow not healthy within {timeout:.0f}s: {last}\n{logs}")

    def wait_for_dags(self, dag_ids: tuple[str, ...], *, timeout: float = 180.0) -> None:
        """Wait until the dag-processor has serialized every DAG; AssertionError naming import errors."""
        deadline = time.monotonic() + timeout
        missing = list(dag_ids)
        while time.monotonic() < deadline:
            missing = []
            for dag_id in dag_ids:
                try:
                    self.rest.dag(dag_id)
                except RestError as error:
                    if error.status != 404:
                        raise
                    missing.append(dag_id)
            if not missing:
                return
            errors = self.rest.import_errors()
            if errors:
                raise AssertionError(f"DAG import errors: {errors}")
            time.sleep(1)
        raise AssertionError(f"DAGs not parsed within {timeout:.0f}s: {missing}")

"""A client for the ``/sandbox/v1`` admin endpoints of a sandbox in another process.

``SandboxAdminClient.from_kubeconfig(path)`` takes the URL, token and CA from the sandbox's kubeconfig.
"""

from __future__ import annotations

import base64
import json
import signal
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml


class SandboxAdminError(Exception):
    """An admin call failed; ``status`` is the HTTP code, ``body`` the decoded response."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"sandbox admin call failed with HTTP {status}: {body}")
        self.status = status
        self.body = body


class SandboxAdminClient:
    """Drive a running sandbox's fault controls.

    :param url: the API server URL (``https://127.0.0.1:PORT``).
    :param token: the admin token.
    :param ca_pem: the CA certificate for HTTPS (``None`` for plain HTTP).
    :param timeout: seconds per call.
    """

    def __init__(self, url: str, *, token: str, ca_pem: bytes | None = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._context = ssl.create_default_context(cadata=ca_pem.decode()) if ca_pem else None

    @classmethod
    def from_kubeconfig(cls, path: str | Path, *, timeout: float = 30.0) -> SandboxAdminClient:
        """Build a client from the kubeconfig the sandbox wrote (its current context)."""
        with open(path, encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        ca_data = cluster.get("certificate-authority-data")
        ca_pem = base64.b64decode(ca_data) if ca_data else None
        return cls(cluster["server"], token=user["token"], ca_pem=ca_pem, timeout=timeout)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}/sandbox/v1{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._context) as response:
                result: dict[str, Any] = json.loads(response.read() or b"{}")
                return result
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                decoded: Any = json.loads(raw)
            except ValueError:
                decoded = raw.decode(errors="replace")
            raise SandboxAdminError(error.code, decoded) from None

    # --- status and API faults -------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return self._call("GET", "/status")

    def api_fault(
        self,
        action: str,
        *,
        status: int = 500,
        count: int | None = None,
        rate: float | None = None,
        verbs: Iterable[str] | None = None,
        resources: Iterable[str] | None = None,
        retry_after: int = 1,
        latency: float = 0.0,
        duration: float | None = None,
    ) -> int:
        """Activate an API fault (``status``, ``reset`` or ``latency``); returns its id.
        ``duration``: seconds after which it ends by itself."""
        rule = self._call(
            "POST",
            "/faults/api",
            {
                "action": action,
                "status": status,
                "count": count,
                "rate": rate,
                "verbs": list(verbs) if verbs is not None else None,
                "resources": list(resources) if resources is not None else None,
                "retryAfter": retry_after,
                "latency": latency,
                "duration": duration,
            },
        )
        return int(rule["id"])

    def request_counts(self) -> list[dict[str, Any]]:
        """Served API requests as ``{"user", "verb", "resource", "count"}`` rows (admin calls excluded)."""
        return list(self._call("GET", "/requests")["requests"])

    def scripted_exits(self) -> dict[str, float]:
        """When each scripted container last ended (Unix time), by "namespace/pod/container"."""
        return {key: float(value) for key, value in self._call("GET", "/scripted-exits")["exits"].items()}

    def end_scripted(self, pods: list[tuple[str, str]], *, exit_code: int = 0) -> int:
        """End the running scripted containers of these (namespace, pod) pairs now; how many ended."""
        body = {"pods": [list(pair) for pair in pods], "exitCode": exit_code}
        return int(self._call("POST", "/scripted/end", body)["ended"])

    def reset_request_counts(self) -> None:
        self._call("DELETE", "/requests")

    def api_faults(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/faults/api")["rules"])

    def clear_api_faults(self, fault_id: int | None = None) -> None:
        self._call("DELETE", "/faults/api" + (f"?id={fault_id}" if fault_id is not None else ""))

    def drop_watches(self, *, abort: bool = False) -> int:
        return int(self._call("POST", "/faults/drop-watches", {"abort": abort})["dropped"])

    def expire_watch_history(self) -> None:
        self._call("POST", "/faults/expire-watch-history", {})

    # --- workload faults ----------------------------------------------------------------------------

    def evict(self, namespace: str, pod: str, *, message: str | None = None) -> None:
        body: dict[str, Any] = {"namespace": namespace, "pod": pod}
        if message is not None:
            body["message"] = message
        self._call("POST", "/faults/evict", body)

    def lose_node(self) -> None:
        self._call("POST", "/faults/lose-node", {})

    def restore_node(self) -> None:
        self._call("POST", "/faults/restore-node", {})

    def set_image_unpullable(
        self, image: str, unpullable: bool = True, *, cause: str = "not-found", failures: int | None = None
    ) -> None:
        body = {"image": image, "unpullable": unpullable, "cause": cause, "failures": failures}
        self._call("POST", "/faults/image-unpullable", body)

    def set_unschedulable(self, unschedulable: bool = True) -> None:
        self._call("POST", "/faults/unschedulable", {"unschedulable": unschedulable})

    def oom_kill(self, namespace: str, pod: str, container: str = "tensorflow") -> None:
        self._call("POST", "/faults/oom-kill", {"namespace": namespace, "pod": pod, "container": container})

    def kill_process(
        self, namespace: str, pod: str, container: str = "tensorflow", sig: int = signal.SIGKILL
    ) -> None:
        self._call(
            "POST",
            "/faults/kill",
            {"namespace": namespace, "pod": pod, "container": container, "signal": sig},
        )

    def stop_operator(self) -> None:
        self._call("POST", "/operator/stop", {})

    def start_operator(self) -> None:
        self._call("POST", "/operator/start", {})

"""``/sandbox/v1/...``: the fault controls and a status over HTTP, for a sandbox in another process."""

from __future__ import annotations

import json
import signal
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.apiserver.http_common import json_response, status_response

if TYPE_CHECKING:
    from tfjob_sandbox.launch.assembly import SandboxRuntime

Action = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
PREFIX = "/sandbox/v1"


def _required(params: dict[str, Any], key: str) -> Any:
    if key not in params:
        raise ApiError(400, "BadRequest", f"missing parameter {key!r}")
    return params[key]


class AdminApi:
    """Routes ``(method, path)`` under :data:`PREFIX` to actions on a :class:`SandboxRuntime`."""

    def __init__(self, runtime: SandboxRuntime) -> None:
        self.runtime = runtime
        self.routes: dict[tuple[str, str], Action] = {
            ("GET", "/status"): self._status,
            ("GET", "/requests"): self._request_counts,
            ("GET", "/scripted-exits"): self._scripted_exits,
            ("POST", "/scripted/end"): self._end_scripted,
            ("DELETE", "/requests"): self._reset_request_counts,
            ("GET", "/faults/api"): self._list_api_faults,
            ("POST", "/faults/api"): self._add_api_fault,
            ("DELETE", "/faults/api"): self._clear_api_faults,
            ("POST", "/faults/drop-watches"): self._drop_watches,
            ("POST", "/faults/expire-watch-history"): self._expire_history,
            ("POST", "/faults/evict"): self._evict,
            ("POST", "/faults/lose-node"): self._lose_node,
            ("POST", "/faults/restore-node"): self._restore_node,
            ("POST", "/faults/image-unpullable"): self._image_unpullable,
            ("POST", "/faults/unschedulable"): self._unschedulable,
            ("POST", "/faults/oom-kill"): self._oom_kill,
            ("POST", "/faults/kill"): self._kill_process,
            ("POST", "/operator/stop"): self._stop_operator,
            ("POST", "/operator/start"): self._start_operator,
        }

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            path = request.path[len(PREFIX) :] if request.path.startswith(PREFIX) else ""
            action = self.routes.get((request.method, path.rstrip("/")))
            if action is None:
                raise ApiError(404, "NotFound", f"no sandbox admin endpoint {request.method} {request.path}")
            params: dict[str, Any] = dict(request.query)
            if request.can_read_body:
                raw = await request.read()
                if raw.strip():
                    body = json.loads(raw)
                    if not isinstance(body, dict):
                        raise ApiError(400, "BadRequest", "admin request bodies must be JSON objects")
                    params.update(body)
            return json_response(await action(params))
        except ApiError as error:
            return status_response(error)
        except (ValueError, TypeError, KeyError) as error:
            return status_response(ApiError(400, "BadRequest", f"invalid admin request: {error}"))

    # --- actions ------------------------------------------------------------------------------

    async def _status(self, params: dict[str, Any]) -> dict[str, Any]:
        return self.runtime.status()

    async def _request_counts(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"requests": self.runtime.server.requests.snapshot()}

    async def _scripted_exits(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"exits": dict(self.runtime.kubelet.scripted_exit_times)}

    async def _end_scripted(self, params: dict[str, Any]) -> dict[str, Any]:
        pods = _required(params, "pods")
        if not isinstance(pods, list):
            raise ApiError(400, "BadRequest", "pods must be a list of [namespace, name] pairs")
        code = int(params.get("exitCode", 0))
        ended = sum(
            self.runtime.kubelet.end_scripted(str(ns), str(name), exit_code=code) for ns, name in pods
        )
        return {"ended": ended}

    async def _reset_request_counts(self, params: dict[str, Any]) -> dict[str, Any]:
        self.runtime.server.requests.reset()
        return {"reset": True}

    async def _list_api_faults(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"rules": self.runtime.faults.rules()}

    async def _add_api_fault(self, params: dict[str, Any]) -> dict[str, Any]:
        rule = self.runtime.faults.add(
            str(_required(params, "action")),
            status=int(params.get("status", 500)),
            count=int(params["count"]) if params.get("count") is not None else None,
            rate=float(params["rate"]) if params.get("rate") is not None else None,
            verbs=params.get("verbs"),
            resources=params.get("resources"),
            retry_after=int(params.get("retryAfter", 1)),
            latency=float(params.get("latency", 0.0)),
            duration=float(params["duration"]) if params.get("duration") is not None else None,
        )
        return rule.to_dict()

    async def _clear_api_faults(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("id") is not None:
            return {"removed": self.runtime.faults.remove(int(params["id"]))}
        self.runtime.faults.clear()
        return {"removed": True}

    async def _drop_watches(self, params: dict[str, Any]) -> dict[str, Any]:
        abort = bool(params.get("abort", False)) and str(params.get("abort")).lower() not in ("false", "0")
        return {"dropped": self.runtime.server.drop_watches(abort=abort)}

    async def _expire_history(self, params: dict[str, Any]) -> dict[str, Any]:
        self.runtime.store.expire_history()
        return {"resourceVersion": self.runtime.store.resource_version}

    async def _evict(self, params: dict[str, Any]) -> dict[str, Any]:
        extra = {"message": str(params["message"])} if params.get("message") else {}
        self.runtime.kubelet.evict(
            str(params.get("namespace", "default")), str(_required(params, "pod")), **extra
        )
        return {}

    async def _lose_node(self, params: dict[str, Any]) -> dict[str, Any]:
        self.runtime.kubelet.lose_node()
        return {}

    async def _restore_node(self, params: dict[str, Any]) -> dict[str, Any]:
        self.runtime.kubelet.restore_node()
        return {}

    async def _image_unpullable(self, params: dict[str, Any]) -> dict[str, Any]:
        failures = params.get("failures")
        try:
            self.runtime.kubelet.set_image_unpullable(
                str(_required(params, "image")),
                bool(params.get("unpullable", True)),
                cause=str(params.get("cause", "not-found")),
                failures=None if failures is None else int(failures),
            )
        except (TypeError, ValueError) as error:
            raise ApiError(400, "BadRequest", str(error)) from error
        return {}

    async def _unschedulable(self, params: dict[str, Any]) -> dict[str, Any]:
        self.runtime.kubelet.set_unschedulable(bool(params.get("unschedulable", True)))
        return {}

    async def _oom_kill(self, params: dict[str, Any]) -> dict[str, Any]:
        self.runtime.kubelet.oom_kill(
            str(params.get("namespace", "default")),
            str(_required(params, "pod")),
            str(params.get("container", "tensorflow")),
        )
        return {}

    async def _kill_process(self, params: dict[str, Any]) -> dict[str, Any]:
        self.runtime.kubelet.kill_process(
            str(params.get("namespace", "default")),
            str(_required(params, "pod")),
            str(params.get("container", "tensorflow")),
            int(params.get("signal", signal.SIGKILL)),
        )
        return {}

    async def _stop_operator(self, params: dict[str, Any]) -> dict[str, Any]:
        await self.runtime.operator.stop()
        return {"running": self.runtime.operator.running}

    async def _start_operator(self, params: dict[str, Any]) -> dict[str, Any]:
        if not self.runtime.operator.running:
            self.runtime.operator.start()
        return {"running": self.runtime.operator.running}

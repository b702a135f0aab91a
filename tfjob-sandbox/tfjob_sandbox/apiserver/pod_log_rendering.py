"""Pod log options (``tailLines``, ``sinceSeconds``, ``limitBytes``, ...) applied to a log file."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.apiserver.http_common import query_flag, query_int

_CRI_LINE = re.compile(rb"^(\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)) (stdout|stderr) ([PF]) ?(.*)$")


@dataclass(frozen=True)
class LogOptions:
    container: str | None
    follow: bool
    previous: bool
    timestamps: bool
    tail_lines: int | None
    since_seconds: int | None
    since_time: datetime | None
    limit_bytes: int | None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> LogOptions:
        since_seconds = query_int(query, "sinceSeconds", minimum=1)
        since_time = _parse_time(query["sinceTime"]) if query.get("sinceTime") else None
        if since_seconds is not None and since_time is not None:
            raise ApiError(400, "BadRequest", "at most one of sinceTime or sinceSeconds may be specified")
        return cls(
            container=query.get("container") or None,
            follow=query_flag(query, "follow"),
            previous=query_flag(query, "previous"),
            timestamps=query_flag(query, "timestamps"),
            tail_lines=query_int(query, "tailLines", minimum=0),
            since_seconds=since_seconds,
            since_time=since_time,
            limit_bytes=query_int(query, "limitBytes", minimum=1),
        )

    def since(self, now: datetime) -> datetime | None:
        if self.since_time is not None:
            return self.since_time
        if self.since_seconds is not None:
            return datetime.fromtimestamp(now.timestamp() - self.since_seconds, timezone.utc)
        return None


def _parse_time(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(400, "BadRequest", f'invalid sinceTime "{value}"') from None


def rfc3339_nano(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def choose_container(pod: dict[str, Any], requested: str | None) -> str:
    """The container to read: the requested one, or the only one; 400 like kube-apiserver otherwise."""
    name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    containers = [str(c.get("name", "")) for c in spec.get("containers") or []]
    init = [str(c.get("name", "")) for c in spec.get("initContainers") or []]
    if requested:
        if requested not in containers and requested not in init:
            raise ApiError(400, "BadRequest", f"container {requested} is not valid for pod {name}")
        return requested
    if len(containers) == 1:
        return containers[0]
    choices = " ".join(containers)
    raise ApiError(
        400, "BadRequest", f"a container name must be specified for pod {name}, choose one of: [{choices}]"
    )


def container_status(pod: dict[str, Any], container: str) -> dict[str, Any] | None:
    status = pod.get("status") or {}
    for entry in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        if entry.get("name") == container:
            return dict(entry)
    return None


def not_started_error(pod: dict[str, Any], container: str) -> ApiError:
    name = pod["metadata"]["name"]
    status = container_status(pod, container) or {}
    waiting = (status.get("state") or {}).get("waiting") or {}
    reason = waiting.get("reason") or "ContainerCreating"
    return ApiError(
        400, "BadRequest", f'container "{container}" in pod "{name}" is waiting to start: {reason}'
    )


def previous_missing_error(pod: dict[str, Any], container: str) -> ApiError:
    name = pod["metadata"]["name"]
    return ApiError(
        400, "BadRequest", f'previous terminated container "{container}" in pod "{name}" not found'
    )


def container_finished(pod: dict[str, Any] | None, container: str, *, started_run: tuple[Any, Any]) -> bool:
    """Whether a followed container instance is over (terminated, restarted, or its pod gone)."""
    if pod is None:
        return True
    status = container_status(pod, container)
    if status is None:
        return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
    if "terminated" in (status.get("state") or {}):
        return True
    return (status.get("restartCount"), status.get("containerID")) != started_run


def run_identity(pod: dict[str, Any], container: str) -> tuple[Any, Any]:
    status = container_status(pod, container) or {}
    return status.get("restartCount"), status.get("containerID")


@dataclass
class LogLine:
    timestamp: datetime
    text: bytes  # including its trailing newline when it has one


def parse_lines(content: bytes, *, fallback_time: datetime) -> list[LogLine]:
    """Split file content into lines, with CRI timestamps when the file has them."""
    lines: list[LogLine] = []
    for raw in content.splitlines(keepends=True):
        match = _CRI_LINE.match(raw.rstrip(b"\n"))
        if match:
            stamp = datetime.fromisoformat(_trim_nanos(match.group(1).decode()))
            body = match.group(4) + (b"\n" if match.group(3) == b"F" else b"")
            lines.append(LogLine(stamp, body))
        else:
            lines.append(LogLine(fallback_time, raw))
    return lines


def _trim_nanos(value: str) -> str:
    value = value.replace("Z", "+00:00")
    return re.sub(r"(\.\d{6})\d+", r"\1", value)


def render(lines: list[LogLine], options: LogOptions, *, now: datetime) -> bytes:
    """Apply sinceSeconds/sinceTime, tailLines, timestamps and limitBytes to ``lines``."""
    since = options.since(now)
    if since is not None:
        lines = [line for line in lines if line.timestamp >= since]
    if options.tail_lines is not None:
        lines = lines[-options.tail_lines :] if options.tail_lines else []
    output = b"".join(_format(line, options) for line in lines)
    if options.limit_bytes is not None:
        output = output[: options.limit_bytes]
    return output


def _format(line: LogLine, options: LogOptions) -> bytes:
    if options.timestamps:
        return rfc3339_nano(line.timestamp).encode() + b" " + line.text
    return line.text


def file_time(path: Path) -> datetime:
    try:
        return datetime.fromtimestamp(os.stat(path).st_mtime, timezone.utc)
    except OSError:
        return datetime.now(timezone.utc)

"""A container's argv, environment and working directory, as the kubelet would build them from its spec.

Pure functions; Secret and ConfigMap references cannot be resolved (``CreateContainerConfigError`` unless
optional).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

LOOPBACK_IP = "127.0.0.1"
#: Environment variable holding the absolute local path of the container's termination message
#: file.  A real container writes ``/dev/termination-log`` (its ``terminationMessagePath``), which
#: the kubelet bind-mounts; a sandbox process runs on the host, where that path is the host's own
#: ``/dev``, so it must be told where its file is.  Programs that want to run on both write to
#: ``os.environ.get(TERMINATION_MESSAGE_PATH_ENV, "/dev/termination-log")``.
TERMINATION_MESSAGE_PATH_ENV = "TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH"
#: The default ``terminationMessagePath`` of a Kubernetes container.
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"
_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_KEYED_FIELD = re.compile(r"^metadata\.(labels|annotations)\['([^']*)'\]$")


class ContainerConfigError(Exception):
    """The container's configuration cannot be satisfied (kubelet reason ``CreateContainerConfigError``)."""


class NoCommandError(Exception):
    """Neither ``command`` nor ``args``: there is no image entrypoint to fall back on."""


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: defined names are replaced, ``$$`` escapes, others stay."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _REFERENCE.sub(replace, value)


def container_argv(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """``command`` + ``args`` with ``$(VAR)`` expanded; :class:`NoCommandError` when both are empty."""
    command = [str(part) for part in container.get("command") or []]
    args = [str(part) for part in container.get("args") or []]
    argv = command + args
    if not argv:
        raise NoCommandError(
            f"container {container.get('name')!r} has neither command nor args; the sandbox ignores "
            "images, so it cannot run the image's entrypoint"
        )
    return [expand(part, env) for part in argv]


def container_environment(
    container: Mapping[str, Any], pod: Mapping[str, Any], *, home: str, base_path: str | None = None
) -> dict[str, str]:
    """``PATH``, ``HOME``, ``HOSTNAME``, the termination message path, then the container's ``env``."""
    metadata = pod.get("metadata") or {}
    env: dict[str, str] = {
        "PATH": base_path if base_path is not None else os.environ.get("PATH", _DEFAULT_PATH),
        "HOME": home,
        "HOSTNAME": str(metadata.get("name", "")),
        TERMINATION_MESSAGE_PATH_ENV: termination_message_file(home, container),
    }
    for source in container.get("envFrom") or []:
        for kind in ("secretRef", "configMapRef"):
            ref = source.get(kind)
            if ref is not None and not ref.get("optional"):
                raise ContainerConfigError(_missing(kind, ref))
    for entry in container.get("env") or []:
        name = str(entry.get("name", ""))
        if "value" in entry or "valueFrom" not in entry:
            env[name] = expand(str(entry.get("value", "")), env)
            continue
        resolved = _value_from(entry.get("valueFrom") or {}, pod)
        if resolved is not None:
            env[name] = resolved
    return env


def _value_from(value_from: Mapping[str, Any], pod: Mapping[str, Any]) -> str | None:
    field_ref = value_from.get("fieldRef")
    if field_ref is not None:
        return field_value(pod, str(field_ref.get("fieldPath", "")))
    if value_from.get("resourceFieldRef") is not None:
        return "0"
    for kind in ("secretKeyRef", "configMapKeyRef"):
        ref = value_from.get(kind)
        if ref is not None:
            if ref.get("optional"):
                return None
            raise ContainerConfigError(_missing(kind, ref))
    return None


def field_value(pod: Mapping[str, Any], path: str) -> str:
    """The downward-API value of ``path`` for ``pod``; unknown paths are a config error."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": metadata.get("name", ""),
        "metadata.namespace": metadata.get("namespace", ""),
        "metadata.uid": metadata.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": LOOPBACK_IP,
        "status.podIPs": LOOPBACK_IP,
        "status.hostIP": LOOPBACK_IP,
        "status.hostIPs": LOOPBACK_IP,
    }
    if path in simple:
        return str(simple[path])
    keyed = _KEYED_FIELD.match(path)
    if keyed:
        return str((metadata.get(keyed.group(1)) or {}).get(keyed.group(2), ""))
    raise ContainerConfigError(f"unsupported fieldRef fieldPath {path!r}")


def _missing(kind: str, ref: Mapping[str, Any]) -> str:
    noun = "secret" if kind.startswith("secret") else "configmap"
    return f'{noun} "{ref.get("name", "")}" not found'


def termination_message_file(pod_directory: str, container: Mapping[str, Any]) -> str:
    """Where a container's ``terminationMessagePath`` lands: the same path under the pod directory."""
    path = str(container.get("terminationMessagePath") or DEFAULT_TERMINATION_MESSAGE_PATH)
    return os.path.join(pod_directory, path.lstrip("/"))


def working_directory(pod_directory: str, container: Mapping[str, Any]) -> str:
    """``workingDir`` resolved under the pod directory (the pod directory itself when unset)."""
    relative = str(container.get("workingDir") or "").lstrip("/")
    return os.path.join(pod_directory, relative) if relative else pod_directory


__all__: Sequence[str] = (
    "DEFAULT_TERMINATION_MESSAGE_PATH",
    "TERMINATION_MESSAGE_PATH_ENV",
    "ContainerConfigError",
    "NoCommandError",
    "container_argv",
    "container_environment",
    "expand",
    "field_value",
    "termination_message_file",
    "working_directory",
)

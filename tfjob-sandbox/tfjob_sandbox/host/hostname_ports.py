"""``HostnamePorts``: a local port per pod DNS name (``<hostname>.<subdomain>``) for loopback mode.

In loopback mode pods run as local processes, so a peer address such as
``mnist-worker-0-1.mnist:2222`` (a pod's ``spec.hostname`` under its ``spec.subdomain``, the
headless-service name) cannot resolve.  The kubelet rewrites such addresses in a container's
environment to ``127.0.0.1:<port>``, one stable port per (namespace, hostname, subdomain), and
lets the pod that owns the name listen on it.  A port is reserved when first referred to (the
pod may not exist yet) and given back when no pod refers to it any more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from tfjob_sandbox.host.loopback_ports import PortReservations

LOOPBACK_IP = "127.0.0.1"
#: The cluster's DNS domain (the optional last part of ``<host>.<sub>.<ns>.svc.<domain>``).
CLUSTER_DOMAIN = "cluster.local"
_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
_ADDRESS = re.compile(
    rf"(?<![A-Za-z0-9.-])(?P<host>{_LABEL})\.(?P<sub>{_LABEL})"
    rf"(?:\.(?P<ns>{_LABEL})(?:\.svc(?:\.{re.escape(CLUSTER_DOMAIN)})?)?)?:(?P<port>\d{{1,5}})(?![0-9])"
)

Name = tuple[str, str, str]  # namespace, hostname, subdomain


class HostnamePorts:
    """Stable local ports for pod DNS names, and who refers to each (pods by uid)."""

    def __init__(self, reservations: PortReservations) -> None:
        self._reservations = reservations
        self._ports: dict[Name, int] = {}
        self._referrers: dict[Name, set[str]] = {}

    def port_of(self, namespace: str, hostname: str, subdomain: str) -> int | None:
        """The port assigned to the name, if any pod referred to it."""
        return self._ports.get((namespace, hostname, subdomain))

    def _port_for(self, name: Name, referrer: str) -> int:
        port = self._ports.get(name)
        if port is None:
            port = self._ports[name] = self._reservations.reserve()
        self._referrers.setdefault(name, set()).add(referrer)
        return port

    def rewrite(
        self, env: Mapping[str, str], *, namespace: str, subdomains: Iterable[str], referrer: str
    ) -> dict[str, str]:
        """``env`` with every address of a pod name under one of ``subdomains`` made local."""
        known = set(subdomains)

        def local(match: re.Match[str]) -> str:
            if match.group("sub") not in known or match.group("ns") not in (None, namespace):
                return match.group(0)
            port = self._port_for((namespace, match.group("host"), match.group("sub")), referrer)
            return f"{LOOPBACK_IP}:{port}"

        return {key: _ADDRESS.sub(local, value) for key, value in env.items()}

    def claim_own(self, namespace: str, hostname: str, subdomain: str, referrer: str) -> int:
        """The pod's own name's port, un-held so the pod's process can listen on it."""
        port = self._port_for((namespace, hostname, subdomain), referrer)
        self._reservations.release(port)
        return port

    def forget(self, referrer: str) -> None:
        """The pod is gone: names no pod refers to any more give their ports back."""
        for name in [name for name, pods in self._referrers.items() if referrer in pods]:
            pods = self._referrers[name]
            pods.discard(referrer)
            if not pods:
                del self._referrers[name]
                self._reservations.release(self._ports.pop(name))

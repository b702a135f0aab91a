"""Embedded sandbox Kubernetes cluster: an API server, a training-operator emulation and a process kubelet.

There is no cluster where this project is developed and tested, and many users have none on a
laptop, so the sandbox is the default cluster for integration tests, the demo, benchmarks and
offline DAG development.  Use :class:`Sandbox` in process (``with Sandbox() as sb:``) or run
``python -m tfjob_sandbox serve``; clients connect through the kubeconfig it writes.
``Sandbox`` is imported lazily so the emulation's modules (store, controller, kubelet) can be
imported on their own without aiohttp or cryptography.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfjob_sandbox.launch.assembly import SandboxOptions
    from tfjob_sandbox.launch.in_thread import Sandbox

__all__ = ["Sandbox", "SandboxOptions"]


def __getattr__(name: str) -> Any:
    if name == "Sandbox":
        from tfjob_sandbox.launch.in_thread import Sandbox

        return Sandbox
    if name == "SandboxOptions":
        from tfjob_sandbox.launch.assembly import SandboxOptions

        return SandboxOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""An offline Kubernetes cluster for TFJob tests: API server, training-operator emulation, process kubelet.

``with Sandbox() as sb:`` runs one in process; ``tfjob-sandbox serve`` runs one in the foreground.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfjob_sandbox.launch.assembly import SandboxOptions
    from tfjob_sandbox.launch.in_thread import Sandbox

__all__ = ["Sandbox", "SandboxOptions"]


# Loaded on first use: the store, operator and kubelet modules then import without aiohttp or cryptography.
def __getattr__(name: str) -> Any:
    if name == "Sandbox":
        from tfjob_sandbox.launch.in_thread import Sandbox

        return Sandbox
    if name == "SandboxOptions":
        from tfjob_sandbox.launch.assembly import SandboxOptions

        return SandboxOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

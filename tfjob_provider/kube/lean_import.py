""":func:`load_transport`: ``kubernetes_asyncio``'s transport and config loaders without its generated
API and models (docs/adr/0018-lean-kubernetes-asyncio-import.md).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any, Final

_PACKAGES: Final = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")
_LOCK = threading.RLock()


class _LazyPackage(ModuleType):
    """A package whose ``__init__`` runs on the first access to an attribute it lacks."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        with _LOCK:
            namespace = self.__dict__
            if not namespace.get("_tfjob_completed", False):
                namespace["_tfjob_completed"] = True
                spec = self.__spec__
                assert spec is not None and spec.loader is not None
                self.__class__ = ModuleType  # from now on an ordinary module
                spec.loader.exec_module(self)
        return object.__getattribute__(self, name)


def _lazy_package(name: str) -> ModuleType:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an importable package")
    module = _LazyPackage(name)
    module.__spec__ = spec
    module.__path__ = list(spec.submodule_search_locations)
    module.__file__ = spec.origin
    module.__package__ = name
    module.__loader__ = spec.loader
    return module


def load_transport() -> None:
    """Import ``kubernetes_asyncio``'s client transport and ``config`` without the generated code."""
    with _LOCK:
        if "kubernetes_asyncio.client" in sys.modules:
            importlib.import_module("kubernetes_asyncio.config")
            return
        for name in _PACKAGES:
            module = _lazy_package(name)
            sys.modules[name] = module
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, module)
        client = sys.modules["kubernetes_asyncio.client"]
        # Order matters: each is imported before a ``from kubernetes_asyncio.client import x`` asks
        # the lazy package for it (a missing name would run the whole __init__).
        for submodule in ("exceptions", "configuration", "rest", "api_client"):
            importlib.import_module(f"kubernetes_asyncio.client.{submodule}")
        configuration = sys.modules["kubernetes_asyncio.client.configuration"]
        api_client = sys.modules["kubernetes_asyncio.client.api_client"]
        client.__dict__["Configuration"] = configuration.Configuration
        client.__dict__["ApiClient"] = api_client.ApiClient
        importlib.import_module("kubernetes_asyncio.config")


__all__ = ["load_transport"]

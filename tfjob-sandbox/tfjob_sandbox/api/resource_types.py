"""The resource types the sandbox serves: ``ResourceType``, the built-in constants, the ``Registry``.

The registry changes at run time: applying a CRD adds (or, for TFJobs, re-describes) a type.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tfjob_sandbox.api import job_wire, jobset_wire, wire


@dataclass(frozen=True)
class ResourceType:
    """One served resource: API group/version, URL plural, kind, scope and subresources."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    subresources: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, else ``<group>/<version>``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def qualified_plural(self) -> str:
        """The name kube-apiserver uses in messages: ``pods``, ``tfjobs.kubeflow.org``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        """``Pod``, ``TFJob.kubeflow.org`` — the prefix of 422 Invalid messages."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def has_status_subresource(self) -> bool:
        return "status" in self.subresources


@dataclass(frozen=True)
class DiscoveryInfo:
    """What ``/api/v1`` or ``/apis/<g>/<v>`` says about a resource beyond its ResourceType."""

    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = (
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    )


NAMESPACES = ResourceType(
    "", "v1", "namespaces", "Namespace", namespaced=False, subresources=frozenset({"status"})
)
PODS = ResourceType("", "v1", "pods", "Pod", subresources=frozenset({"log", "status"}))
SERVICES = ResourceType("", "v1", "services", "Service", subresources=frozenset({"status"}))
EVENTS = ResourceType("", "v1", "events", "Event")
#: events.k8s.io/v1 view of the same storage as :data:`EVENTS` (kube-apiserver serves both).
EVENTS_V1 = ResourceType("events.k8s.io", "v1", "events", "Event")
JOBS = ResourceType(
    job_wire.GROUP, job_wire.VERSION, "jobs", job_wire.KIND, subresources=frozenset({"status"})
)
TFJOBS = ResourceType(wire.GROUP, wire.VERSION, wire.PLURAL, wire.KIND, subresources=frozenset({"status"}))
#: Served once the JobSet CRD is stored (the sandbox installs its own at start).
JOBSETS = ResourceType(
    jobset_wire.GROUP,
    jobset_wire.VERSION,
    jobset_wire.PLURAL,
    jobset_wire.KIND,
    subresources=frozenset({"status"}),
)
CRDS = ResourceType(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
    subresources=frozenset({"status"}),
)

BUILTIN_TYPES: tuple[ResourceType, ...] = (NAMESPACES, PODS, SERVICES, EVENTS, EVENTS_V1, CRDS, JOBS)

_BUILTIN_DISCOVERY: dict[ResourceType, DiscoveryInfo] = {
    NAMESPACES: DiscoveryInfo(
        "namespace", ("ns",), verbs=("create", "delete", "get", "list", "patch", "update", "watch")
    ),
    PODS: DiscoveryInfo("pod", ("po",), ("all",)),
    SERVICES: DiscoveryInfo(
        "service",
        ("svc",),
        ("all",),
        verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
    ),
    EVENTS: DiscoveryInfo("event", ("ev",)),
    EVENTS_V1: DiscoveryInfo("event", ("ev",)),
    CRDS: DiscoveryInfo("customresourcedefinition", ("crd", "crds"), ("api-extensions",)),
    JOBS: DiscoveryInfo("job", categories=("all",)),
    TFJOBS: DiscoveryInfo(wire.SINGULAR, ("tfjob",), ("all", "kubeflow")),
}

#: Storage shared between views: events.k8s.io/v1 events live in the core/v1 events table.
_STORAGE_ALIASES: dict[ResourceType, ResourceType] = {EVENTS_V1: EVENTS}

StorageKey = tuple[str, str]


def storage_type(rt: ResourceType) -> ResourceType:
    """The type whose table holds ``rt``'s objects (itself, except for view types like EVENTS_V1)."""
    return _STORAGE_ALIASES.get(rt, rt)


def storage_key(rt: ResourceType) -> StorageKey:
    """``(group, plural)`` of the storage table — versions of one resource share storage."""
    base = storage_type(rt)
    return (base.group, base.plural)


@dataclass
class Registry:
    """The resource types served right now, with their discovery details.

    Lookups are by ``(group, version, plural)`` for URLs and by ``(group, kind)`` for
    ownerReferences and events.  Built-ins are always present; custom resources come and go
    with their CRDs.
    """

    _types: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)
    _discovery: dict[ResourceType, DiscoveryInfo] = field(default_factory=dict)

    @classmethod
    def with_builtins(cls, *, serve_tfjobs: bool = True) -> Registry:
        registry = cls()
        for rt in BUILTIN_TYPES:
            registry.register(rt, _BUILTIN_DISCOVERY[rt])
        if serve_tfjobs:
            registry.register(TFJOBS, _BUILTIN_DISCOVERY[TFJOBS])
        return registry

    def register(self, rt: ResourceType, info: DiscoveryInfo | None = None) -> None:
        self._types[(rt.group, rt.version, rt.plural)] = rt
        self._discovery[rt] = info or _BUILTIN_DISCOVERY.get(rt) or DiscoveryInfo(rt.kind.lower())

    def unregister(self, rt: ResourceType) -> None:
        self._types.pop((rt.group, rt.version, rt.plural), None)
        self._discovery.pop(rt, None)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def by_kind(self, group: str, kind: str) -> ResourceType | None:
        """The served type of ``kind`` in ``group`` (any version; first registered wins)."""
        for rt in self._types.values():
            if rt.group == group and rt.kind == kind and storage_type(rt) is rt:
                return rt
        return None

    def is_served(self, rt: ResourceType) -> bool:
        return self._types.get((rt.group, rt.version, rt.plural)) == rt

    def discovery(self, rt: ResourceType) -> DiscoveryInfo:
        return self._discovery.get(rt) or DiscoveryInfo(rt.kind.lower())

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._types.values()))

    def group_versions(self) -> dict[str, list[str]]:
        """Served versions per API group (core group excluded), in registration order."""
        groups: dict[str, list[str]] = {}
        for rt in self._types.values():
            if rt.group and rt.version not in groups.setdefault(rt.group, []):
                groups[rt.group].append(rt.version)
        return groups

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._types.values() if rt.group == group and rt.version == version]

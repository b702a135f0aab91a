"""CustomResourceDefinitions: applying one serves its resource and validates it by its schema.

``install_crd_support(store)`` wires it into a store; TFJobs are served (schemaless) without a CRD.
"""

from __future__ import annotations

from typing import Any

from tfjob_sandbox.admission.structural_schema import StructuralSchema
from tfjob_sandbox.api.errors import ApiError, invalid
from tfjob_sandbox.api.resource_types import CRDS, TFJOBS, DiscoveryInfo, ResourceType
from tfjob_sandbox.store.store import Store, format_time


class CrdValidator:
    """The :class:`~tfjob_sandbox.store.store.ObjectValidator` for one CRD-backed resource."""

    def __init__(self, schema: StructuralSchema) -> None:
        self.schema = schema

    def admit(
        self,
        obj: dict[str, Any],
        *,
        rt: ResourceType,
        field_validation: str,
        warnings: list[str],
        status_only: bool = False,
    ) -> dict[str, Any]:
        pruned, unknown = self.schema.prune(obj)
        if unknown and field_validation != "Ignore":
            messages = [f'unknown field "{path}"' for path in unknown]
            if field_validation == "Strict":
                # kube-apiserver reports strict decoding failures as 400 BadRequest.
                raise ApiError(400, "BadRequest", "strict decoding error: " + ", ".join(messages))
            warnings.extend(messages)
        self.schema.apply_defaults(pruned)
        causes = self.schema.validate(pruned)
        if causes:
            name = (pruned.get("metadata") or {}).get("name") or (pruned.get("metadata") or {}).get(
                "generateName", ""
            )
            raise invalid(kind=rt.kind, group=rt.group, name=str(name), causes=causes)
        return pruned


class CrdController:
    """Keeps the store's registry and validators in step with the stored CRDs."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._types_by_crd: dict[str, list[ResourceType]] = {}
        self._tfjobs_builtin = store.registry.is_served(TFJOBS)

    def install(self) -> None:
        self.store.add_admission(CRDS, self._admit)
        self.store.add_listener(self._on_change, copies=False)
        for crd in self.store.list_view(CRDS)["items"]:
            self._sync(crd)

    # --- admission ----------------------------------------------------------------------------

    def _admit(self, operation: str, crd: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        causes: list[dict[str, Any]] = []

        def require(field: str, value: Any) -> None:
            if not value:
                causes.append({"reason": "FieldValueRequired", "message": "Required value", "field": field})

        require("spec.group", spec.get("group"))
        require("spec.names.plural", names.get("plural"))
        require("spec.names.kind", names.get("kind"))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            causes.append(
                {
                    "reason": "FieldValueNotSupported",
                    "field": "spec.scope",
                    "message": f'Unsupported value: "{spec.get("scope", "")}": supported values: '
                    '"Cluster", "Namespaced"',
                }
            )
        versions = spec.get("versions") or []
        require("spec.versions", versions)
        if versions and sum(1 for v in versions if v.get("storage")) != 1:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "field": "spec.versions",
                    "message": "Invalid value: must have exactly one version marked as storage version",
                }
            )
        expected_name = f"{names.get('plural', '')}.{spec.get('group', '')}"
        name = (crd.get("metadata") or {}).get("name")
        if names.get("plural") and spec.get("group") and name != expected_name:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "field": "metadata.name",
                    "message": f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
                }
            )
        if old is not None and (old.get("spec") or {}).get("group") != spec.get("group"):
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "field": "spec.group",
                    "message": "Invalid value: field is immutable",
                }
            )
        return causes

    # --- reacting to changes ------------------------------------------------------------------

    def _on_change(
        self, event_type: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt != CRDS:
            return
        if event_type == "DELETED":
            self._remove(obj)
        else:
            self._sync(obj)

    def _types_of(
        self, crd: dict[str, Any]
    ) -> tuple[list[ResourceType], ResourceType | None, dict[str, Any]]:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, plural, kind = spec["group"], names["plural"], names["kind"]
        served: list[ResourceType] = []
        storage: ResourceType | None = None
        storage_schema: dict[str, Any] = {}
        for version in spec.get("versions") or []:
            if (group, plural, version.get("name")) == (TFJOBS.group, TFJOBS.plural, TFJOBS.version):
                rt = TFJOBS  # the constant in-process code uses; it always has the status subresource
            else:
                rt = ResourceType(
                    group,
                    version["name"],
                    plural,
                    kind,
                    namespaced=spec.get("scope") == "Namespaced",
                    subresources=frozenset((version.get("subresources") or {}).keys()),
                )
            if version.get("served", True):
                served.append(rt)
            if version.get("storage"):
                storage = rt
                storage_schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        return served, storage, storage_schema

    def _sync(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        served, storage, schema = self._types_of(crd)
        names = (crd.get("spec") or {}).get("names") or {}
        info = DiscoveryInfo(
            singular=names.get("singular") or names.get("kind", "").lower(),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
        )
        for stale in self._types_by_crd.get(name, []):
            if stale not in served and not (stale == TFJOBS and self._tfjobs_builtin):
                self.store.registry.unregister(stale)
        for rt in served:
            self.store.registry.register(rt, info)
        self._types_by_crd[name] = served
        if storage is not None:
            self.store.set_validator(storage, CrdValidator(StructuralSchema(schema)) if schema else None)
        if not _is_established(crd):
            now = format_time(self.store.clock())
            self.store.mutate(CRDS, name, lambda obj: _establish(obj, storage, now=now))

    def _remove(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        served, storage, _ = self._types_of(crd)
        if storage is not None:
            self.store.set_validator(storage, None)
            doomed = (
                [
                    (obj["metadata"]["name"], obj["metadata"].get("namespace"))
                    for obj in self.store.list_view(storage)["items"]
                ]
                if self.store.registry.is_served(storage)
                else []
            )
            for obj_name, namespace in doomed:
                try:
                    self.store.delete(storage, obj_name, namespace=namespace)
                except ApiError:
                    continue
        for rt in self._types_by_crd.pop(name, served):
            if not (rt == TFJOBS and self._tfjobs_builtin):
                self.store.registry.unregister(rt)


def _is_established(crd: dict[str, Any]) -> bool:
    for condition in (crd.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Established" and condition.get("status") == "True":
            return True
    return False


def _establish(crd: dict[str, Any], storage: ResourceType | None, *, now: str) -> None:
    names = (crd.get("spec") or {}).get("names") or {}
    crd["status"] = {
        "acceptedNames": dict(names),
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": now,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": now,
            },
        ],
        "storedVersions": [storage.version] if storage is not None else [],
    }


def install_crd_support(store: Store) -> CrdController:
    """Make ``store`` serve and validate resources defined by CRDs stored in it (now and later)."""
    controller = CrdController(store)
    controller.install()
    return controller

"""``OwnerIndex``: owner uid to dependents, for garbage collection and foreground deletion."""

from __future__ import annotations

from typing import Any

from tfjob_sandbox.api.resource_types import StorageKey

#: Where an object lives in the store: its table, namespace ("" if cluster-scoped) and name.
Location = tuple[StorageKey, str, str]


def _owner_uids(obj: dict[str, Any] | None) -> set[str]:
    if not obj:
        return set()
    references = (obj.get("metadata") or {}).get("ownerReferences") or []
    return {str(reference.get("uid")) for reference in references if reference.get("uid")}


class OwnerIndex:
    """uid → location of every stored object, and owner uid → locations of its dependents."""

    def __init__(self) -> None:
        self._locations: dict[str, Location] = {}
        self._dependents: dict[str, set[Location]] = {}

    def clear(self) -> None:
        self._locations.clear()
        self._dependents.clear()

    def update(self, location: Location, *, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        """Record a write at ``location``: ``new`` is ``None`` when the object was removed."""
        uid = str(((new or old or {}).get("metadata") or {}).get("uid", ""))
        if new is None:
            self._locations.pop(uid, None)
        elif uid:
            self._locations[uid] = location
        before, after = _owner_uids(old), _owner_uids(new)
        for owner in before - after:
            dependents = self._dependents.get(owner)
            if dependents is not None:
                dependents.discard(location)
                if not dependents:
                    del self._dependents[owner]
        for owner in after - before:
            self._dependents.setdefault(owner, set()).add(location)

    def locate(self, uid: str) -> Location | None:
        return self._locations.get(uid)

    def exists(self, uid: str) -> bool:
        return uid in self._locations

    def dependents_of(self, uid: str) -> list[Location]:
        """The dependents of ``uid`` in a stable order."""
        return sorted(self._dependents.get(uid, ()))

    def has_dependents(self, uid: str) -> bool:
        return bool(self._dependents.get(uid))

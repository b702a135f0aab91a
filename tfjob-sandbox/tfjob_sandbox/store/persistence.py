"""``StatePersister`` (``--state-dir``): store snapshots written behind and flushed on stop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from tfjob_sandbox.api.resource_types import ResourceType
from tfjob_sandbox.store.store import Store

log = logging.getLogger(__name__)

STATE_FILE = "objects.json"
FORMAT_VERSION = 1


class StatePersister:
    """Loads the store from ``state_dir`` and keeps the snapshot there up to date."""

    def __init__(self, store: Store, state_dir: Path, *, interval: float = 1.0) -> None:
        self.store = store
        self.state_dir = state_dir
        self.interval = interval
        self._dirty = False
        self._task: asyncio.Task[None] | None = None

    @property
    def path(self) -> Path:
        return self.state_dir / STATE_FILE

    def load(self) -> bool:
        """Restore the saved objects into the store (before anything else uses it); False if none."""
        if not self.path.exists():
            return False
        with open(self.path, encoding="utf-8") as handle:
            state = json.load(handle)
        if state.get("format") != FORMAT_VERSION:
            raise ValueError(f"{self.path}: unsupported sandbox state format {state.get('format')!r}")
        self.store.restore(state, resolve=self._resolve)
        return True

    def _resolve(self, key: str) -> ResourceType | None:
        group, version, plural = key.split("/", 2)
        return self.store.registry.lookup(group, version, plural)

    def start(self) -> None:
        """On the loop: track changes and snapshot them periodically."""
        self.store.add_listener(self._mark_dirty, copies=False)
        self._task = asyncio.get_running_loop().create_task(self._flush_periodically())

    def _mark_dirty(self, *_: Any) -> None:
        self._dirty = True

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            if self._dirty:
                self._dirty = False
                snapshot = self._snapshot()
                try:
                    await asyncio.to_thread(self._write, snapshot)
                except OSError:
                    log.exception("sandbox: could not write state to %s", self.path)
                    self._dirty = True

    async def stop(self) -> None:
        """Stop the periodic task and write the final state synchronously."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.flush()

    def flush(self) -> None:
        self._dirty = False
        self._write(self._snapshot())

    def _snapshot(self) -> dict[str, Any]:
        return {"format": FORMAT_VERSION, **self.store.snapshot()}

    def _write(self, snapshot: dict[str, Any]) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{STATE_FILE}.tmp")
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(snapshot, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)

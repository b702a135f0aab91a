"""Gathering the ``tfjob_record`` where a task concludes (operator and sensor, both wait paths).

Best effort: what the waiter observed is used as given; a read that fails leaves its part out
and never changes how the task ends.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tfjob_provider._outcome.wait import WaitOutcome, WaitTarget, uid_of
from tfjob_provider.kube.errors import KubeApiError
from tfjob_provider.kube.kinds import kind_of_engine
from tfjob_provider.ui.reads import list_namespace_events
from tfjob_provider.ui.record import build_record, now_iso, owned_by, refreshed

if TYPE_CHECKING:
    from tfjob_provider.kube.sync_client import SyncTFJobClient


def gather_record(
    client: SyncTFJobClient,
    target: WaitTarget,
    outcome: WaitOutcome,
    *,
    observed: Mapping[str, Any] | None,
    logs: Mapping[str, str],
    try_number: int | None,
    cluster_readable: bool = True,
) -> dict[str, Any]:
    """The record of ``outcome``: what the waiter ``observed`` brought up to date by one more read
    of the TFJob and its pods, the events about them, and ``logs`` (the failure report's tails)."""
    events: list[dict[str, Any]] = []
    if cluster_readable:
        try:
            read = kind_of_engine(target.engine).read
            tfjob, pods = client.run(read(client.session, outcome.name, namespace=outcome.namespace))
            if outcome.uid is not None and uid_of(tfjob) not in (None, outcome.uid):
                tfjob, pods = None, []  # another TFJob under the name: nothing of it is ours
            observed = refreshed(observed, tfjob, owned_by(pods, outcome.uid), now=int(time.time()))
        except KubeApiError:
            pass
        try:
            events, _ = client.run(list_namespace_events(client.session, outcome.namespace))
        except KubeApiError:
            events = []
    if isinstance(observed, Mapping) and not observed.get("decided_at"):
        observed = {**observed, "decided_at": now_iso()}
    return build_record(
        name=outcome.name,
        namespace=outcome.namespace,
        uid=outcome.uid,
        status=outcome.status,
        message=outcome.message,
        verdict=None if outcome.verdict is None else outcome.verdict.to_dict(),
        observed=observed if isinstance(observed, Mapping) else None,
        events=events,
        logs=logs,
        try_number=try_number,
        rules=target.effective_rules().to_dict(),
        written_at=now_iso(),
    )


__all__ = ["gather_record"]

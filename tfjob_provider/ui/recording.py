"""Gathering the ``tfjob_record`` where a task concludes (operator and sensor, both wait paths).

Best effort: what the waiter observed is used as given; a read that fails leaves its part out
and never changes how the task ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tfjob_provider.kube import operations as ops
from tfjob_provider.kube.errors import KubeApiError
from tfjob_provider.ui.reads import list_namespace_events
from tfjob_provider.ui.record import build_record, now_iso, observe
from tfjob_provider.wait_outcome import WaitOutcome, WaitTarget

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
    """The record of ``outcome``: ``observed`` (or a fresh read when the waiter saw nothing), the
    namespace's events about the job, and ``logs`` (the failure report's culprit tails)."""
    events: list[dict[str, Any]] = []
    if cluster_readable:
        if not isinstance(observed, Mapping):
            try:
                tfjob, pods = client.run(
                    ops.read_job(client.session, outcome.name, namespace=outcome.namespace)
                )
                observed = observe(tfjob, pods, decided_at=now_iso())
            except KubeApiError:
                observed = None
        try:
            events, _ = client.run(list_namespace_events(client.session, outcome.namespace))
        except KubeApiError:
            events = []
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

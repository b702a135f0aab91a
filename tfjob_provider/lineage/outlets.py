"""Fill the asset events of a succeeded TFJob task (Airflow 3's ``outlet_events`` accessor).

Every ``Asset`` outlet's event gets :func:`~tfjob_provider.lineage.extra.asset_extra`; every
``AssetAlias`` outlet gets one asset event per output URI named by ``output_asset_keys``.  Airflow
records these only when the task succeeds, so a failed or retried try leaves none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.providers.common.compat.sdk import Asset, AssetAlias

from tfjob_provider.lineage.extra import OUTPUT_KEY, asset_extra, output_uris


def fill_outlet_events(
    context: Mapping[str, Any],
    outlets: Sequence[Any],
    result: Mapping[str, Any],
    *,
    output_asset_keys: Sequence[str],
    log: Any,
) -> None:
    """Write ``extra`` into the outlet events of ``context``; a URI Airflow refuses as an asset
    (reserved scheme, too long...) and a missing output key are logged and skipped."""
    events = context.get("outlet_events")
    if events is None or not outlets:
        return
    extra = asset_extra(result)
    aliases = [outlet for outlet in outlets if isinstance(outlet, AssetAlias)]
    for outlet in outlets:
        if isinstance(outlet, AssetAlias):
            continue
        if isinstance(outlet, Asset):
            events[outlet].extra.update(extra)
        elif type(outlet).__name__ in ("AssetNameRef", "AssetUriRef"):
            # Airflow resolves a reference through the API server (3.1+; 3.0 refuses it): an event
            # that cannot be filled is Airflow's to record as it is, never a reason to fail the task.
            try:
                events[outlet].extra.update(extra)
            except Exception as error:
                log.warning("Asset event of %r left without the TFJob's extra: %s", outlet, error)
    if not aliases:
        return
    found, problems = output_uris(result.get("outputs"), output_asset_keys)
    for problem in problems:
        log.warning("No asset event for it: %s (output_asset_keys=%s)", problem, list(output_asset_keys))
    for item in found:
        try:
            asset = Asset(uri=item.uri)
        except (TypeError, ValueError) as error:
            log.warning("Output %r is not a URI Airflow accepts as an asset (%s): skipped", item.key, error)
            continue
        for alias in aliases:
            events[alias].add(asset, extra={**extra, OUTPUT_KEY: item.key})
            log.info("Asset event for %s (output %r) through alias %r", asset.uri, item.key, alias.name)


__all__ = ["fill_outlet_events"]

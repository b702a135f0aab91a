"""``TFJobLineage``: what TFJobOperator, ``@task.tfjob`` and TFJobSensor add for assets and OpenLineage.

The task records how it ended (:meth:`TFJobLineage._record_ending`), fills its outlet events on
success (:meth:`TFJobLineage._with_outlet_events`), and answers the OpenLineage provider's
``get_openlineage_facets_on_start/complete/failure``.  Those import OpenLineage lazily: without
the ``openlineage`` extra nothing here touches it.  The OpenLineage listener calls them in a
forked process, so they read only what the task recorded and never the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tfjob_provider.lineage.facets import TrainingEnd, datasets, error_message, job_facet, run_facet
from tfjob_provider.lineage.outlets import fill_outlet_events

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage

    from tfjob_provider._outcome.task_ending import Ending
    from tfjob_provider._outcome.wait import WaitOutcome


def openlineage_active() -> bool:
    """Whether the OpenLineage provider is installed and configured to emit."""
    try:
        from airflow.providers.openlineage import conf
    except ImportError:
        return False
    return not conf.is_disabled()


def _uris(items: Any) -> list[str]:
    """The URIs of the ``Asset`` items among a task's inlets or outlets (aliases have none)."""
    return [str(item.uri) for item in items or () if isinstance(getattr(item, "uri", None), str)]


class TFJobLineage:
    """Mixin of the TFJob tasks; the task sets ``output_asset_keys`` and ``input_asset_keys``."""

    output_asset_keys: tuple[str, ...] = ()
    input_asset_keys: tuple[str, ...] = ()
    _lineage_end: TrainingEnd | None = None
    _lineage_manifest: Mapping[str, Any] | None = None

    if TYPE_CHECKING:
        inlets: list[Any]
        outlets: list[Any]
        log: Any

    def _lineage_spec(self) -> Mapping[str, Any] | None:
        """The TFJob (manifest or object) whose shape the job facet shows; None when unknown."""
        return self._lineage_manifest

    def _record_ending(self, outcome: WaitOutcome, ending: Ending) -> None:
        outputs = (ending.result or {}).get("outputs")
        self._lineage_end = TrainingEnd.from_outcome(outcome.to_event(), ending=ending.kind, outputs=outputs)

    def _with_outlet_events(
        self, context: Mapping[str, Any], result: dict[str, Any], *, submitted: bool = False
    ) -> dict[str, Any]:
        """Fill the outlet events from a success's result dict, and return it."""
        if submitted:
            self._lineage_end = TrainingEnd.from_result(result, ending="submitted")
        fill_outlet_events(
            context, self.outlets, result, output_asset_keys=self.output_asset_keys, log=self.log
        )
        return result

    def _lineage(self, *, ended: bool) -> OperatorLineage[Any, Any]:
        from tfjob_provider.lineage.openlineage_objects import operator_lineage

        end = self._lineage_end if ended else None
        outputs = end.outputs if end is not None else None
        return operator_lineage(
            job=job_facet(self._lineage_spec()),
            run=run_facet(end) if end is not None else None,
            error=error_message(end) if end is not None else None,
            inputs=datasets(_uris(self.inlets), outputs, self.input_asset_keys),
            outputs=datasets(_uris(self.outlets), outputs, self.output_asset_keys),
        )

    def get_openlineage_facets_on_start(self) -> OperatorLineage[Any, Any]:
        return self._lineage(ended=False)

    def get_openlineage_facets_on_complete(self, _task_instance: Any) -> OperatorLineage[Any, Any]:
        return self._lineage(ended=True)

    def get_openlineage_facets_on_failure(self, _task_instance: Any) -> OperatorLineage[Any, Any]:
        return self._lineage(ended=True)


__all__ = ["TFJobLineage", "openlineage_active"]

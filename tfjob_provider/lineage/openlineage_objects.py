"""The facets of :mod:`tfjob_provider.lineage.facets` as OpenLineage objects.

Imports the OpenLineage provider and client at module level: import this module only inside the
``get_openlineage_facets_*`` methods (:mod:`tfjob_provider.lineage.task_lineage`), where they are installed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from airflow.providers.openlineage.extractors import OperatorLineage
from attrs import define, field
from openlineage.client.event_v2 import Dataset
from openlineage.client.facet_v2 import JobFacet, RunFacet, error_message_run

from tfjob_provider.lineage.naming import DatasetName

#: Key of the TFJob job facet and of the TFJob run facet in an event.
FACET_KEY: Final = "tfjob"
_SCHEMA: Final = (
    "https://github.com/tfjob-provider/tfjob-provider/blob/main/docs/guides/assets-and-lineage.md"
)


@define
class TFJobJobFacet(JobFacet):
    """The TFJob's shape (:func:`tfjob_provider.lineage.facets.job_facet`)."""

    replicaSpecs: dict[str, Any] = field(factory=dict)
    runPolicy: dict[str, Any] = field(factory=dict)
    successPolicy: str = "Default"
    enableDynamicWorker: bool = False

    @staticmethod
    def _get_schema() -> str:
        return f"{_SCHEMA}#tfjob-job-facet"


@define
class TFJobRunFacet(RunFacet):
    """How the TFJob ended (:func:`tfjob_provider.lineage.facets.run_facet`)."""

    ending: str
    namespace: str
    name: str
    uid: str | None = None
    state: str | None = None
    reason: str | None = None
    retryable: bool | None = None
    message: str = ""
    decidingPods: list[dict[str, Any]] = field(factory=list)
    replicas: dict[str, Any] = field(factory=dict)
    recreations: dict[str, int] = field(factory=dict)
    recreationCount: int = 0
    startTime: str | None = None
    completionTime: str | None = None
    durationSeconds: float | None = None
    outputKeys: list[str] = field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return f"{_SCHEMA}#tfjob-run-facet"


def operator_lineage(
    *,
    job: Mapping[str, Any] | None,
    run: Mapping[str, Any] | None = None,
    error: str | None = None,
    inputs: Sequence[DatasetName] = (),
    outputs: Sequence[DatasetName] = (),
) -> OperatorLineage[Dataset, Any]:
    """An :class:`OperatorLineage` of the given facet contents and datasets."""
    run_facets: dict[str, Any] = {}
    if run is not None:
        run_facets[FACET_KEY] = TFJobRunFacet(**run)
    if error is not None:
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=error, programmingLanguage="python"
        )
    return OperatorLineage(
        inputs=[Dataset(namespace=item.namespace, name=item.name) for item in inputs],
        outputs=[Dataset(namespace=item.namespace, name=item.name) for item in outputs],
        run_facets=run_facets,
        job_facets={FACET_KEY: TFJobJobFacet(**job)} if job is not None else {},
    )


__all__ = ["FACET_KEY", "TFJobJobFacet", "TFJobRunFacet", "operator_lineage"]

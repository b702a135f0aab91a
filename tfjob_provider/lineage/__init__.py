"""A TFJob task's asset events and OpenLineage facets (docs/guides/assets-and-lineage.md).

Pure builders (``extra``, ``naming``, ``facets``) and the Airflow-side adapters (``outlets``,
``task_lineage``; ``openlineage_objects`` is imported only where the OpenLineage provider is installed).
"""

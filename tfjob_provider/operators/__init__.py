"""Airflow-facing operators of tfjob_provider."""

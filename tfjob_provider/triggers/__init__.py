"""Airflow-facing triggers of tfjob_provider."""

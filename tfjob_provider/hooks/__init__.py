"""Airflow-facing hooks of tfjob_provider."""

"""Airflow-facing sensors of tfjob_provider."""

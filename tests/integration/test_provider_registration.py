"""Airflow discovers the provider's operator, sensor, trigger, hook, extra link and config option."""

from __future__ import annotations

import importlib

from tfjob_provider import get_provider_info


def test_every_registered_module_and_class_imports() -> None:
    info = get_provider_info()
    for section in ("hooks", "operators", "sensors", "triggers"):
        (entry,) = info[section]
        for module in entry["python-modules"]:
            assert importlib.import_module(module).__name__ == module
    module_name, _, class_name = info["extra-links"][0].rpartition(".")
    link = getattr(importlib.import_module(module_name), class_name)()
    assert link.name == "TFJob"


def test_providers_manager_sees_the_link_and_the_config_option() -> None:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    assert "tfjob-provider" in manager.providers
    assert "tfjob_provider.links.TFJobLink" in manager.extra_links_class_names
    options = get_provider_info()["config"]["tfjob_provider"]["options"]
    assert options["dashboard_url_template"]["default"] == ""


def test_task_tfjob_is_a_registered_taskflow_decorator() -> None:
    from airflow.sdk import task

    from tfjob_provider.decorators.tfjob import tfjob_task

    try:  # where Airflow 3.2+ keeps the decorators a task sees; the core manager's copy is deprecated
        from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime as Manager
    except ImportError:  # Airflow 3.0-3.1
        from airflow.providers_manager import ProvidersManager as Manager  # type: ignore[assignment]

    assert "tfjob" in Manager().taskflow_decorators
    assert task.tfjob is tfjob_task

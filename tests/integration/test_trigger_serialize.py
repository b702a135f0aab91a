"""``TFJobTrigger.serialize()``: a hard-coded classpath and JSON primitives only, exactly."""

from __future__ import annotations

import json

from tfjob_provider.policy import Rules
from tfjob_provider.triggers.tfjob import TFJobTrigger


def test_serialize_returns_the_exact_classpath_and_kwargs() -> None:
    trigger = TFJobTrigger(
        name="mnist-train-abc",
        namespace="ml",
        uid="6f1c2d3e-0000-4000-8000-00000000a001",
        kubernetes_conn_id="k8s_training",
        deadline="2026-01-02T03:04:05+00:00",
        deadline_name="execution_timeout",
        startup_timeout=600,
        rules=Rules(fail_on_worker_failure=True, retryable_exit_codes=frozenset({3, 1})).to_dict(),
        poll_interval=5,
        cancel_on_kill=False,
        wait_for_existence=True,
    )
    assert trigger.serialize() == (
        "tfjob_provider.triggers.tfjob.TFJobTrigger",
        {
            "name": "mnist-train-abc",
            "namespace": "ml",
            "uid": "6f1c2d3e-0000-4000-8000-00000000a001",
            "kubernetes_conn_id": "k8s_training",
            "deadline": "2026-01-02T03:04:05+00:00",
            "deadline_name": "execution_timeout",
            "startup_timeout": 600.0,
            "rules": {
                "success_policy": None,
                "fail_on_worker_failure": True,
                "retryable_exit_codes": [1, 3],
                "permanent_exit_codes": [],
                "oom_is_retryable": True,
                "pending_timeout": None,
                "image_pull_fail_fast": True,
                "image_pull_timeout": 300.0,
            },
            "poll_interval": 5.0,
            "cancel_on_kill": False,
            "wait_for_existence": True,
        },
    )


def test_serialize_defaults_and_round_trip_through_json() -> None:
    trigger = TFJobTrigger(name="job", namespace="default")
    classpath, kwargs = trigger.serialize()
    assert kwargs == {
        "name": "job",
        "namespace": "default",
        "uid": None,
        "kubernetes_conn_id": "kubernetes_default",
        "deadline": None,
        "deadline_name": "timeout",
        "startup_timeout": None,
        "rules": None,
        "poll_interval": None,  # no safety re-check: timers from the verdict engine
        "cancel_on_kill": True,
        "wait_for_existence": False,
    }
    restored = TFJobTrigger(**json.loads(json.dumps(kwargs)))
    assert restored.serialize() == (classpath, kwargs)

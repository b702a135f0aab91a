"""Sizes and costs of the results channel and of ``@task.tfjob``: what they add to a manifest, to
a trigger event, and to the wait.

Prints:

* the pod runner's source (every replica's ``-c`` argument) and the payload of a typical function
  with arguments, and what both add to a Chief + Worker + PS TFJob (one copy per replica type)
  — against Linux's 128 KiB per environment string and etcd's 1.5 MiB per object;
* the largest trigger event a success can produce (a 4,096-byte termination message, 20 culprits,
  four replica types with recreations) — Airflow stores events in its database;
* the time of the checks ``@task.tfjob`` makes when a DAG is parsed, of packing the payload, and
  of recreation counting in the job tracker (2,000 pods, each recreated once).

``.venv/bin/python benchmarks/bench_results.py``.  Not a timed test.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the unit-test factories

from tests.unit.factories import JOB_NAME, NAMESPACE, NOW, make_pod, make_tfjob
from tfjob_provider._outcome.outputs import TERMINATION_MESSAGE_LIMIT
from tfjob_provider._outcome.wait import WaitTarget
from tfjob_provider.decorators.packing import check_source, pack, runner_source
from tfjob_provider.kube.tracking import JobTracker
from tfjob_provider.manifest import build_tfjob

FUNCTION = """
def train(data_uri, steps=1000, learning_rate=0.01, layers=(128, 64)):
    import json, os
    import tensorflow as tf

    role = json.loads(os.environ["TF_CONFIG"])["task"]
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.TFConfigClusterResolver()
    )
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(n, activation="relu") for n in layers])
    history = model.fit(tf.data.Dataset.load(data_uri), epochs=1, steps_per_epoch=steps)
    loss = float(history.history["loss"][-1])
    return {"role": role["type"], "loss": loss, "model_uri": data_uri + "/model"}
"""


def timed(action: Callable[[], Any], runs: int) -> float:
    """Median milliseconds of ``action`` over ``runs`` runs."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    runner = runner_source()
    args = ["gs://bucket/mnist/2026-12-01"]
    kwargs = {"steps": 5000, "learning_rate": 0.001, "layers": [256, 128, 64]}
    payload = pack(FUNCTION, "train", args, kwargs)
    plain = build_tfjob(
        name="bench",
        namespace="ml",
        image="tf:2.21",
        command=["python", "/opt/train.py"],
        chief=1,
        worker=4,
        ps=2,
    )
    decorated = build_tfjob(
        name="bench",
        namespace="ml",
        image="tf:2.21",
        command=["python3", "-c", runner],
        env=[{"name": "TFJOB_TASK_PAYLOAD", "value": payload}],
        chief=1,
        worker=4,
        ps=2,
    )
    added = len(json.dumps(decorated)) - len(json.dumps(plain))
    print(
        f"pod runner source: {len(runner.encode())} bytes; "
        f"payload of a typical function: {len(payload)} bytes"
    )
    print(
        f"added to a Chief + Worker + PS TFJob: {added} bytes "
        f"({added / (1.5 * 1024 * 1024):.2%} of etcd's 1.5 MiB; "
        "payload limit 96 KiB < 128 KiB per env string)"
    )

    pods = [make_pod("Chief", phase="Succeeded", terminated_message="x" * (TERMINATION_MESSAGE_LIMIT - 1))]
    pods += [make_pod("Worker", i, phase="Succeeded") for i in range(20)]
    target = WaitTarget(name="bench", namespace="ml")
    outcome = target.judge(make_tfjob({"Chief": 1, "Worker": 20}), pods, now=NOW)
    assert outcome is not None and outcome.status == "success"
    outcome = outcome.with_recreations({"Chief": 1, "Worker": 20, "PS": 3, "Evaluator": 1})
    print(
        f"largest success trigger event: {len(json.dumps(outcome.to_event()))} bytes "
        f"(termination message {TERMINATION_MESSAGE_LIMIT - 1} of them)"
    )

    print(
        "parse-time checks of the function: "
        f"{timed(lambda: check_source(FUNCTION, 'train'), 200):.3f} ms median"
    )
    print(f"packing the payload: {timed(lambda: pack(FUNCTION, 'train', args, kwargs), 200):.3f} ms median")

    job = make_tfjob({"Worker": 2000})
    first = [make_pod("Worker", i) for i in range(2000)]
    second = [dict(p, metadata={**p["metadata"], "uid": p["metadata"]["uid"] + "-2"}) for p in first]

    def fold() -> None:
        tracker = JobTracker(namespace=NAMESPACE)
        tracker.apply_tfjob_event("ADDED", job)
        for pod in first + second:
            tracker.apply_pod_event("MODIFIED", pod)
        assert tracker.snapshot((NAMESPACE, JOB_NAME)).recreations == {"Worker": 2000}

    per_event = timed(fold, 5) / 4000 * 1000
    print(
        f"tracker with recreation counting: {per_event:.2f} µs per pod event "
        "(4,000 events, 2,000 recreations)"
    )


if __name__ == "__main__":
    main()

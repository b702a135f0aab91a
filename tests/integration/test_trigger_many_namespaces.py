"""Many TFJob waits spread over many namespaces end on the watch alone, without fresh reads.

Why: each namespace has its own pair of streams (TFJobs, pods), so a trigger can wake between the
pods event that shows the worker being deleted under ``cleanPodPolicy`` and the TFJob's
``Succeeded`` condition still in flight on the other connection.  Judged at once, that snapshot
needs a confirmation read (a LIST and a GET through the connection's 5 requests/s bucket); with
1,000 waits over 100 namespaces those reads queued and detection took up to 130 s
(``benchmarks/bench_wait.py --scale 1000 --namespaces 100``).  The trigger now lets the other
stream catch up first (``SETTLE_SECONDS``).  Scripted pods (no processes) keep this fast.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes import client  # type: ignore[import-untyped]
from tfjob_sandbox.testing import sync_api_client, unique_name, wait_for

from tests.integration.async_clients import close_async_clients
from tests.integration.trigger_helpers import submit_tfjob
from tfjob_provider.triggers.tfjob import TFJobTrigger

NAMESPACES = 8
JOBS_PER_NAMESPACE = 2
SCRIPT_ANNOTATION = "tfjob-sandbox/script"


def test_jobs_finishing_in_many_namespaces_need_no_confirmation_reads(own_cluster: Any) -> None:
    sandbox = own_cluster
    api = sync_api_client(sandbox)
    core = client.CoreV1Api(api)
    jobs: list[tuple[str, str, str]] = []
    try:
        for _ in range(NAMESPACES):
            namespace = unique_name("many")
            core.create_namespace({"metadata": {"name": namespace}})
            for _ in range(JOBS_PER_NAMESPACE):
                name = unique_name("job")
                uid = submit_tfjob(
                    name,
                    command=["train"],
                    namespace=namespace,
                    worker=1,
                    pod_annotations={SCRIPT_ANNOTATION: "{}"},  # run until ended below
                )
                jobs.append((namespace, name, uid))

        def all_running() -> bool:
            pods = core.list_pod_for_all_namespaces().items
            ours = [pod for pod in pods if pod.metadata.namespace.startswith("many-")]
            return len(ours) == 2 * len(jobs) and all(pod.status.phase == "Running" for pod in ours)

        wait_for(all_running, timeout=60, interval=0.2, what="every scripted pod running")
    finally:
        api.close()

    def end_chiefs() -> int:  # on the sandbox loop: every chief ends in the same instant
        return sum(sandbox.kubelet.end_scripted(ns, f"{name}-chief-0") for ns, name, _ in jobs)

    async def run() -> list[dict[str, Any]]:
        try:
            triggers = [TFJobTrigger(name=name, namespace=ns, uid=uid) for ns, name, uid in jobs]
            waiting = [asyncio.ensure_future(anext(trigger.run())) for trigger in triggers]
            # Both streams of every namespace open (they open after the lists, behind the bucket).
            deadline = asyncio.get_running_loop().time() + 60
            while sandbox.server.watches.open_count < 2 * NAMESPACES:
                assert asyncio.get_running_loop().time() < deadline, "the shared watches did not open"
                await asyncio.sleep(0.1)
            await asyncio.to_thread(sandbox.reset_request_counts)
            assert await asyncio.to_thread(sandbox.call, end_chiefs) == len(jobs)
            events = await asyncio.wait_for(asyncio.gather(*waiting), timeout=60)
            return [event.payload for event in events]
        finally:
            await close_async_clients()

    payloads = asyncio.run(run())

    assert [payload["status"] for payload in payloads] == ["success"] * len(jobs)
    # The outcome came from the streams: no confirmation read (GET TFJob + LIST pods) for any job.
    assert sandbox.request_total(verb="get", resource="tfjobs") == 0, sandbox.request_counts()
    assert sandbox.request_total(verb="list", resource="pods") == 0, sandbox.request_counts()

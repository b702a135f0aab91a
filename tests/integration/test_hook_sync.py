"""TFJobHook and the sync client against the sandbox: connection, TLS, CRUD, logs, watch, faults."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest
from tfjob_sandbox import Sandbox
from tfjob_sandbox.testing import tfjob_manifest, unique_name, wait_for

from tests.integration.hook_fixtures import list_tfjobs
from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.kube import errors
from tfjob_provider.kube.ratelimit import RateLimit
from tfjob_provider.kube.retry import RetryPolicy

pytest_plugins = ["tests.integration.hook_fixtures"]
pytestmark = pytest.mark.timeout(120)


def fast_retries() -> RetryPolicy:
    return RetryPolicy(budget=2.0, wait_min=0.05, wait_max=0.2)


def explicit_hook(sandbox: Sandbox, **kwargs: Any) -> TFJobHook:
    kwargs.setdefault("retry_policy", fast_retries())
    kwargs.setdefault("rate_limit", RateLimit(rate=1000, burst=1000))
    return TFJobHook(None, config_file=str(sandbox.kubeconfig_path), **kwargs)


def test_default_connection_from_the_environment(hook_sandbox: Sandbox, default_connection: str) -> None:
    hook = TFJobHook()
    assert hook.get_namespace() == "default"
    ok, message = hook.test_connection()
    assert ok, message
    assert hook.client is hook.client is hook.get_conn()


def test_explicit_parameters_and_tls_with_the_sandbox_ca(hook_sandbox: Sandbox, namespace: str) -> None:
    hook = explicit_hook(hook_sandbox, namespace=namespace)
    assert hook.get_namespace() == namespace
    configuration = hook.client.api_client.configuration
    assert configuration.host.startswith("https://") and configuration.verify_ssl
    assert configuration.ssl_ca_cert  # the kubeconfig's CA, written to a file by the loader
    hook.client.check_tfjob_served()


def test_namespace_falls_back_to_the_kubeconfig_context(hook_sandbox: Sandbox) -> None:
    assert explicit_hook(hook_sandbox).get_namespace() == "default"


def test_private_configuration_leaves_the_global_default_alone(hook_sandbox: Sandbox) -> None:
    from kubernetes import client

    before = client.Configuration.get_default_copy().host
    hook = explicit_hook(hook_sandbox, disable_verify_ssl=True)
    assert hook.client.api_client.configuration.verify_ssl is False
    after = client.Configuration.get_default_copy()
    assert after.host == before and after.verify_ssl is True


def test_create_get_list_delete(hook_sandbox: Sandbox, namespace: str) -> None:
    client = explicit_hook(hook_sandbox).client
    name = unique_name("crud")
    manifest = tfjob_manifest(name, command=["sleep", "30"])
    manifest["metadata"]["labels"] = {"suite": "hook"}
    created = client.create_tfjob(manifest, namespace=namespace)
    assert created["metadata"]["uid"]
    assert client.get_tfjob(name, namespace=namespace)["metadata"]["uid"] == created["metadata"]["uid"]
    assert [
        j["metadata"]["name"] for j in list_tfjobs(client, namespace=namespace, label_selector="suite=hook")
    ] == [name]
    with pytest.raises(errors.AlreadyExistsError):
        client.create_tfjob(manifest, namespace=namespace)
    assert client.delete_tfjob(name, namespace=namespace, grace_period_seconds=0) is True
    wait_for(lambda: not list_tfjobs(client, namespace=namespace), what="TFJob gone")
    assert client.delete_tfjob(name, namespace=namespace) is False
    with pytest.raises(errors.NotFoundError):
        client.get_tfjob(name, namespace=namespace)


def test_strict_validation_names_the_misspelt_field(hook_sandbox: Sandbox, namespace: str) -> None:
    client = explicit_hook(hook_sandbox).client
    manifest = tfjob_manifest(unique_name("typo"))
    worker = manifest["spec"]["tfReplicaSpecs"]["Worker"]
    worker["restartPolicyy"] = worker.pop("restartPolicy")
    with pytest.raises(errors.InvalidError) as caught:
        client.create_tfjob(manifest, namespace=namespace)
    assert any("restartPolicyy" in str(cause) for cause in caught.value.causes), caught.value.causes
    assert "restartPolicyy" in str(caught.value)


def test_dry_run_stores_nothing(hook_sandbox: Sandbox, namespace: str) -> None:
    client = explicit_hook(hook_sandbox).client
    name = unique_name("dry")
    client.create_tfjob(tfjob_manifest(name), namespace=namespace, dry_run=True)
    with pytest.raises(errors.NotFoundError):
        client.get_tfjob(name, namespace=namespace)


def test_watch_job_sees_pods_go_pending_running_succeeded(hook_sandbox: Sandbox, namespace: str) -> None:
    client = explicit_hook(hook_sandbox).client
    name = unique_name("watch")
    client.create_tfjob(
        tfjob_manifest(name, command=["sh", "-c", "echo hello; sleep 1"]), namespace=namespace
    )
    phases: list[str] = []
    watch = client.watch_job(name, namespace=namespace)
    try:
        for snapshot in watch:
            for pod in snapshot.pods:
                phase = pod.get("status", {}).get("phase")
                if phase and (not phases or phases[-1] != phase):
                    phases.append(phase)
            if "Succeeded" in phases:
                break
    finally:
        watch.close()
    assert phases[-1] == "Succeeded" and "Running" in phases
    assert phases.index("Running") < phases.index("Succeeded")
    pods = client.list_job_pods(name, namespace=namespace)
    assert pods and all(p["metadata"]["labels"]["training.kubeflow.org/job-name"] == name for p in pods)
    log = client.read_log_tail(pods[0]["metadata"]["name"], namespace=namespace, tail_lines=5)
    assert "hello" in log
    events = client.list_events(namespace=namespace, involved_names=[name, pods[0]["metadata"]["name"]])
    assert events, "the operator and kubelet record events"


def test_watch_relists_after_forced_410(hook_sandbox: Sandbox, namespace: str) -> None:
    client = explicit_hook(hook_sandbox).client
    name = unique_name("gone")
    client.create_tfjob(tfjob_manifest(name, command=["sleep", "2"]), namespace=namespace)
    watch = client.watch_job(name, namespace=namespace)
    try:
        first = next(watch)
        assert first.tfjob is not None
        hook_sandbox.expire_watch_history()
        hook_sandbox.drop_watches()
        for snapshot in watch:
            if any(p.get("status", {}).get("phase") == "Succeeded" for p in snapshot.pods):
                break
    finally:
        watch.close()
    assert snapshot.tfjob is not None and snapshot.tfjob["metadata"]["name"] == name


def test_retries_through_injected_503_429_and_resets(hook_sandbox: Sandbox, namespace: str) -> None:
    client = explicit_hook(
        hook_sandbox, retry_policy=RetryPolicy(budget=5.0, wait_min=0.05, wait_max=0.1)
    ).client
    name = unique_name("retry")
    client.create_tfjob(tfjob_manifest(name, command=["sleep", "5"]), namespace=namespace)
    hook_sandbox.fail_requests(503, count=1, verbs=["get"], resources=["tfjobs"], retry_after=0)
    assert client.get_tfjob(name, namespace=namespace)["metadata"]["name"] == name
    hook_sandbox.reset_connections(count=1, verbs=["get"], resources=["tfjobs"])
    assert client.get_tfjob(name, namespace=namespace)["metadata"]["name"] == name
    hook_sandbox.fail_requests(429, count=1, verbs=["get"], resources=["tfjobs"], retry_after=1)
    started = time.monotonic()
    assert client.get_tfjob(name, namespace=namespace)["metadata"]["name"] == name
    assert time.monotonic() - started >= 0.9, "Retry-After: 1 must be honoured"


def test_422_is_not_retried(hook_sandbox: Sandbox, namespace: str) -> None:
    client = explicit_hook(hook_sandbox).client
    counter = hook_sandbox.add_latency(0.0, verbs=["create"], resources=["tfjobs"])
    try:
        manifest = tfjob_manifest(unique_name("bad"))
        manifest["spec"]["bogus"] = 1
        with pytest.raises(errors.InvalidError):
            client.create_tfjob(manifest, namespace=namespace)
        fired = next(r["fired"] for r in hook_sandbox.faults.rules() if r["id"] == counter)
    finally:
        hook_sandbox.remove_api_fault(counter)
    assert fired == 1


def test_token_bucket_limits_a_burst(hook_sandbox: Sandbox, namespace: str) -> None:
    hook = TFJobHook(
        None,
        config_file=str(hook_sandbox.kubeconfig_path),
        rate_limit=RateLimit(rate=20, burst=5),
        retry_policy=fast_retries(),
        cluster_context=None,
        namespace=namespace,
    )
    client = hook.client
    started = time.monotonic()
    for _ in range(25):
        list_tfjobs(client, namespace=namespace)
    elapsed = time.monotonic() - started
    assert elapsed >= (25 - 5) / 20 * 0.95  # 20 requests beyond the burst at 20/s


def test_one_api_client_and_one_connection_for_many_calls(hook_sandbox: Sandbox, namespace: str) -> None:
    hook = explicit_hook(hook_sandbox)
    client = hook.client
    api_client = client.api_client
    for _ in range(20):
        list_tfjobs(client, namespace=namespace)
    assert hook.client.api_client is api_client
    pools = list(api_client.rest_client.pool_manager.pools._container.values())
    assert len(pools) == 1
    assert pools[0].num_connections == 1, "every call must reuse the same TLS connection"


def test_lists_are_paged_through_the_sandbox_and_joined(hook_sandbox: Sandbox, namespace: str) -> None:
    """``limit``/``continue`` against a real API server: every page is fetched, nothing twice."""
    from tfjob_provider.kube import effects
    from tfjob_provider.kube import operations as ops
    from tfjob_provider.kube import requests as rq

    client = explicit_hook(hook_sandbox, namespace=namespace).client
    batch = unique_name("paged")
    names = sorted(f"{batch}-{index}" for index in range(5))
    for name in names:
        manifest = tfjob_manifest(name, runPolicy={"suspend": True})  # no pods: only the objects
        manifest["metadata"]["labels"] = {"batch": batch}
        client.create_tfjob(manifest, namespace=namespace)

    pages: list[dict[str, str]] = []

    def counting_send(session: ops.Session, request: rq.ApiRequest) -> effects.Operation[effects.Response]:
        pages.append(dict(request.query))
        return ops.call(session, request)

    request = rq.list_tfjobs(namespace=namespace, label_selector=f"batch={batch}")
    body = client.run(ops.call_list(client.session, request, send=counting_send, page_size=2))
    assert sorted(item["metadata"]["name"] for item in body["items"]) == names
    assert [page.get("limit") for page in pages] == ["2", "2", "2"]
    assert pages[0].get("continue") is None and all(page.get("continue") for page in pages[1:])
    assert int(body["metadata"]["resourceVersion"]) > 0


def test_a_paged_list_shrinks_each_page_before_asking_for_the_next(
    hook_sandbox: Sandbox, namespace: str
) -> None:
    """With ``shrink``, the whole objects of a page are cut down as the page arrives: at no point
    does the list hold more than one page of whole objects (the triggerer's peak memory)."""
    from tfjob_provider.kube import effects
    from tfjob_provider.kube import operations as ops
    from tfjob_provider.kube import requests as rq
    from tfjob_provider.kube.tracking import JobTracker

    client = explicit_hook(hook_sandbox, namespace=namespace).client
    batch = unique_name("shrunk")
    for index in range(5):
        manifest = tfjob_manifest(f"{batch}-{index}", runPolicy={"suspend": True})
        manifest["metadata"]["labels"] = {"batch": batch}
        client.create_tfjob(manifest, namespace=namespace)

    events: list[str] = []

    def counting_send(session: ops.Session, request: rq.ApiRequest) -> effects.Operation[effects.Response]:
        events.append("page")
        return ops.call(session, request)

    tracker = JobTracker(namespace=namespace, slim=True)

    def shrink(item: Mapping[str, Any]) -> Mapping[str, Any]:
        events.append("shrink")
        return tracker.shrink_tfjob(item)

    request = rq.list_tfjobs(namespace=namespace, label_selector=f"batch={batch}")
    body = client.run(ops.call_list(client.session, request, send=counting_send, page_size=2, shrink=shrink))
    assert events == ["page", "shrink", "shrink", "page", "shrink", "shrink", "page", "shrink"]
    assert all("managedFields" not in item["metadata"] for item in body["items"])
    templates = [item["spec"]["tfReplicaSpecs"]["Worker"]["template"] for item in body["items"]]
    assert all(set(template) == {"spec"} for template in templates)
    assert all(set(template["spec"]) == {"containers"} for template in templates)
    assert tracker.relist_tfjobs(body["items"], shrunk=True) == {
        (namespace, f"{batch}-{index}") for index in range(5)
    }


def connection_with(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> None:
    import json

    connection = json.loads(sandbox.airflow_conn_uri)
    connection["extra"].update(extra)
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(connection))


def test_the_outage_budget_comes_from_the_connection_else_the_config(
    hook_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection_with(hook_sandbox, monkeypatch)
    assert TFJobHook().client.session.retry.budget == 180.0  # documented default
    monkeypatch.setenv("AIRFLOW__TFJOB_PROVIDER__API_OUTAGE_BUDGET", "30")
    assert TFJobHook().client.session.retry.budget == 30.0
    connection_with(hook_sandbox, monkeypatch, api_outage_budget="7.5")
    assert TFJobHook().client.session.retry.budget == 7.5


@pytest.mark.parametrize("bad", ["soon", -1, True])
def test_a_bad_outage_budget_names_the_field(
    hook_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, bad: Any
) -> None:
    from airflow.providers.common.compat.sdk import AirflowException

    connection_with(hook_sandbox, monkeypatch, api_outage_budget=bad)
    with pytest.raises(AirflowException, match="api_outage_budget"):
        _ = TFJobHook().client


def test_urllib3_retries_nothing_on_its_own(hook_sandbox: Sandbox, namespace: str) -> None:
    client = explicit_hook(hook_sandbox, retry_policy=RetryPolicy(budget=0)).client
    assert client.api_client.configuration.retries is False
    fault = hook_sandbox.fail_requests(503, count=None, verbs=["list"], resources=["tfjobs"], retry_after=0)
    try:
        with pytest.raises(errors.UnavailableError):
            list_tfjobs(client, namespace=namespace)
        fired = next(r["fired"] for r in hook_sandbox.faults.rules() if r["id"] == fault)
    finally:
        hook_sandbox.remove_api_fault(fault)
    assert fired == 1  # one request: no hidden retry below the provider's policy

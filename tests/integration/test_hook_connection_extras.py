"""TFJobHook reads a ``kubernetes`` connection's extras as the cncf-kubernetes ``KubernetesHook`` does.

The hook keeps its own reader of the extras (``_ConnectionSettings``; the hook module's docstring
says why: ``KubernetesHook`` only reads them while loading them, partly into the ``kubernetes``
package's global configuration).  This test holds that reader to ``KubernetesHook``'s: for each
connection in the table, both hooks load it — ``KubernetesHook.get_conn()`` with a private
``client_configuration``, ours through its sync and its async client — and must agree on the API
server, the context's credentials, TLS verification, the namespace, and on which connections are
refused.  No API call is made: the kubeconfig names servers that do not exist.

``KubernetesHook`` replaces the global default configuration for ``disable_verify_ssl`` (and for
in-cluster credentials); the ``kubernetes_global_default`` fixture puts it back after each case and
checks that TFJobHook never touches it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook
from kubernetes.client import Configuration

from tfjob_provider.hooks.tfjob import TFJobHook

CONN_ID = "tfjob_extras_case"

KUBECONFIG: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "alpha",
    "clusters": [
        {"name": "alpha", "cluster": {"server": "https://alpha.invalid:6443"}},
        {"name": "beta", "cluster": {"server": "https://beta.invalid:7443"}},
    ],
    "users": [
        {"name": "alpha-user", "user": {"token": "alpha-token"}},
        {"name": "beta-user", "user": {"token": "beta-token"}},
    ],
    "contexts": [
        {"name": "alpha", "context": {"cluster": "alpha", "user": "alpha-user", "namespace": "team-a"}},
        {"name": "beta", "context": {"cluster": "beta", "user": "beta-user", "namespace": "team-b"}},
    ],
}


@dataclass(frozen=True)
class Loaded:
    """What a hook made of a connection: the client's server, token and TLS check — or a refusal."""

    host: str | None = None
    token: str | None = None
    verify_ssl: bool | None = None
    refused: str | None = None  # "exclusive" (two sources given) or "load" (loading failed)


def _refusal(error: Exception) -> Loaded:
    return Loaded(refused="exclusive" if "mutually exclusive" in str(error) else "load")


def _token(configuration: Any) -> str | None:
    header = configuration.api_key.get("authorization") or configuration.api_key.get("BearerToken")
    return str(header).removeprefix("Bearer ") if header else None


def cncf_loaded() -> Loaded:
    hook = KubernetesHook(conn_id=CONN_ID, client_configuration=Configuration())
    try:
        api_client = hook.get_conn()
    except Exception as error:
        return _refusal(error)
    configuration = api_client.configuration
    api_client.close()
    return Loaded(configuration.host, _token(configuration), configuration.verify_ssl)


def ours_sync_loaded() -> Loaded:
    try:
        configuration = TFJobHook(CONN_ID)._sync_configuration()
    except Exception as error:
        return _refusal(error)
    return Loaded(configuration.host, _token(configuration), configuration.verify_ssl)


def ours_async_loaded() -> Loaded:
    async def load() -> Loaded:
        try:
            async with TFJobHook(CONN_ID).async_client_lease() as client:
                configuration = client.api_client.configuration
                return Loaded(configuration.host, _token(configuration), configuration.verify_ssl)
        except Exception as error:
            return _refusal(error)

    return asyncio.run(load())


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(KUBECONFIG))
    return path


@pytest.fixture(autouse=True)
def kubernetes_global_default() -> Iterator[None]:
    saved = Configuration._default
    yield
    Configuration._default = saved


def connect(monkeypatch: pytest.MonkeyPatch, extras: dict[str, Any]) -> None:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps({"conn_type": "kubernetes", "extra": extras})
    )


ALPHA = Loaded("https://alpha.invalid:6443", "alpha-token", True)
BETA = Loaded("https://beta.invalid:7443", "beta-token", True)
ALPHA_NO_TLS_CHECK = Loaded("https://alpha.invalid:6443", "alpha-token", False)
EXCLUSIVE = Loaded(refused="exclusive")

# (case id, extras — "{path}" / "{text}" / "{dict}" stand for the kubeconfig file, its YAML text
# and its mapping —, what both hooks must make of it, the namespace TFJobHook then uses).
CASES: list[tuple[str, dict[str, Any], Loaded, str]] = [
    ("path", {"kube_config_path": "{path}"}, ALPHA, "team-a"),
    ("path+context", {"kube_config_path": "{path}", "cluster_context": "beta"}, BETA, "team-b"),
    (
        "legacy-prefix",
        {"extra__kubernetes__kube_config_path": "{path}", "extra__kubernetes__cluster_context": "beta"},
        BETA,
        "team-b",
    ),
    (
        "plain-key-wins-over-prefixed",
        {
            "cluster_context": "alpha",
            "extra__kubernetes__cluster_context": "beta",
            "kube_config_path": "{path}",
        },
        ALPHA,
        "team-a",
    ),
    ("yaml-text", {"kube_config": "{text}"}, ALPHA, "team-a"),
    ("mapping+context", {"kube_config": "{dict}", "cluster_context": "beta"}, BETA, "team-b"),
    ("namespace", {"kube_config_path": "{path}", "namespace": "ml"}, ALPHA, "ml"),
    ("legacy-namespace", {"kube_config_path": "{path}", "extra__kubernetes__namespace": "ml"}, ALPHA, "ml"),
    ("empty-namespace", {"kube_config_path": "{path}", "namespace": ""}, ALPHA, "team-a"),
    (
        "no-tls-check",
        {"kube_config_path": "{path}", "disable_verify_ssl": True},
        ALPHA_NO_TLS_CHECK,
        "team-a",
    ),
    (
        "no-tls-check-string",
        {"kube_config_path": "{path}", "disable_verify_ssl": " TRUE "},
        ALPHA_NO_TLS_CHECK,
        "team-a",
    ),
    ("tls-check-string", {"kube_config_path": "{path}", "disable_verify_ssl": "false"}, ALPHA, "team-a"),
    (
        "tls-check-unclear-string",
        {"kube_config_path": "{path}", "disable_verify_ssl": "yes"},
        ALPHA,
        "team-a",
    ),
    ("in-cluster-false", {"kube_config_path": "{path}", "in_cluster": False}, ALPHA, "team-a"),
    ("in-cluster+path", {"in_cluster": True, "kube_config_path": "{path}"}, EXCLUSIVE, ""),
    ("in-cluster+kube-config", {"in_cluster": True, "kube_config": "{text}"}, EXCLUSIVE, ""),
    ("path+kube-config", {"kube_config_path": "{path}", "kube_config": "{text}"}, EXCLUSIVE, ""),
    (
        "legacy-in-cluster+path",
        {"extra__kubernetes__in_cluster": True, "kube_config_path": "{path}"},
        EXCLUSIVE,
        "",
    ),
]


def _fill(extras: dict[str, Any], kubeconfig: Path) -> dict[str, Any]:
    values = {"{path}": str(kubeconfig), "{text}": yaml.safe_dump(KUBECONFIG), "{dict}": KUBECONFIG}
    return {
        key: values.get(value, value) if isinstance(value, str) else value for key, value in extras.items()
    }


@pytest.mark.parametrize(
    ("extras", "expected", "namespace"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_hook_reads_the_extras_as_kubernetes_hook_does(
    extras: dict[str, Any],
    expected: Loaded,
    namespace: str,
    kubeconfig: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    connect(monkeypatch, _fill(extras, kubeconfig))
    global_default = Configuration._default

    ours_sync, ours_async = ours_sync_loaded(), ours_async_loaded()
    assert Configuration._default is global_default, "TFJobHook touched the global kubernetes configuration"
    assert cncf_loaded() == expected
    assert ours_sync == expected
    assert ours_async == expected
    if expected.refused is None:
        cncf_namespace = KubernetesHook(conn_id=CONN_ID).get_namespace()
        # KubernetesHook gives the extra or None; TFJobHook then falls back to the context's namespace.
        assert TFJobHook(CONN_ID).get_namespace() == (cncf_namespace or namespace)


@pytest.mark.parametrize(
    "extras",
    [
        {},
        {"in_cluster": True},
        {"extra__kubernetes__in_cluster": True},
        {"in_cluster": True, "namespace": "x"},
    ],
    ids=["nothing", "in-cluster", "legacy-in-cluster", "in-cluster+namespace"],
)
def test_in_cluster_and_default_sources_give_the_same_outcome(
    extras: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What these load depends on the machine (a pod's service account, ``~/.kube/config``), so the
    two hooks are compared with each other rather than with a fixed answer."""
    connect(monkeypatch, extras)
    assert ours_sync_loaded() == cncf_loaded()


def test_in_cluster_given_as_the_string_false_is_false_here(
    kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one deliberate difference (see the hook module's docstring): KubernetesHook takes any
    non-empty string as true, so a URI-form connection's ``in_cluster=false`` next to a kubeconfig
    is refused there as two sources; TFJobHook reads it as false and uses the kubeconfig."""
    connect(monkeypatch, {"in_cluster": "false", "kube_config_path": str(kubeconfig)})
    assert cncf_loaded() == EXCLUSIVE
    assert ours_sync_loaded() == ALPHA
    assert ours_async_loaded() == ALPHA


def test_a_kube_config_that_is_not_a_mapping_is_refused_by_both(monkeypatch: pytest.MonkeyPatch) -> None:
    connect(monkeypatch, {"kube_config": "just words"})
    assert cncf_loaded().refused == "load"
    assert ours_sync_loaded().refused == "load"
    with pytest.raises(Exception, match="kube_config extra is not a kubeconfig mapping"):
        TFJobHook(CONN_ID)._sync_configuration()

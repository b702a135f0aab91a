"""``TFJobHook``: the ``kubernetes`` connection in, TFJob clients out (:attr:`TFJobHook.client`,
:meth:`TFJobHook.async_client_lease`; docs/adr/0013-the-hook-loads-the-connection-itself.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import time
import weakref
from collections.abc import AsyncIterator, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

import yaml
from airflow.providers.common.compat.sdk import AirflowException, AirflowNotFoundException, BaseHook, conf

from tfjob_provider.kube.operations import Session
from tfjob_provider.kube.ratelimit import DEFAULT_BURST, DEFAULT_RATE, RateLimit, shared_bucket
from tfjob_provider.kube.retry import DEFAULT_OUTAGE_BUDGET, RetryPolicy
from tfjob_provider.kube.watching import WatchSettings

if TYPE_CHECKING:
    from tfjob_provider.kube.async_client import AsyncTFJobClient
    from tfjob_provider.kube.sync_client import SyncTFJobClient

#: Where a pod's service-account namespace is mounted (used for the in-cluster default namespace).
SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
#: Seconds between exec-plugin runs when the plugin reports no expiry (kubernetes_asyncio's own
#: ``refresh_token`` helper polls at this interval too).
EXEC_REFRESH_WITHOUT_EXPIRY = 60.0


def _to_bool(value: Any) -> bool | None:
    """A boolean extra as ``KubernetesHook`` reads one: a bool, or the string true/false (any case,
    surrounding blanks ignored); anything else is "not set", so ``"yes"`` never turns TLS
    verification off."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "false"):
            return text == "true"
    return None


def _coalesce(*values: Any) -> Any:
    return next((value for value in values if value is not None and value != ""), None)


def default_rate_limit() -> RateLimit:
    """The per-connection token bucket from ``[tfjob_provider] api_qps / api_burst`` (client-go's 5 / 10)."""
    return RateLimit(
        rate=conf.getfloat("tfjob_provider", "api_qps", fallback=DEFAULT_RATE),
        burst=conf.getint("tfjob_provider", "api_burst", fallback=DEFAULT_BURST),
    )


#: Connection extra that overrides ``[tfjob_provider] api_outage_budget`` for one connection.
OUTAGE_BUDGET_EXTRA = "api_outage_budget"


def default_retry_policy(extra: Any = None) -> RetryPolicy:
    """The retry policy: the outage budget from the connection's ``api_outage_budget`` extra
    (``extra``), else ``[tfjob_provider] api_outage_budget`` (180 s); AirflowException naming the
    field if it is not a number of seconds."""
    raw = extra
    field = f"the connection extra {OUTAGE_BUDGET_EXTRA!r}"
    if raw is None or raw == "":
        raw = conf.get("tfjob_provider", OUTAGE_BUDGET_EXTRA, fallback=str(DEFAULT_OUTAGE_BUDGET))
        field = f"[tfjob_provider] {OUTAGE_BUDGET_EXTRA}"
    try:
        budget = float(raw)
        if isinstance(raw, bool) or not budget >= 0 or budget == float("inf"):
            raise ValueError
    except (TypeError, ValueError):
        raise AirflowException(
            f"{field} is {raw!r}; give the seconds an API outage is ridden out as a number >= 0 "
            f"(default {DEFAULT_OUTAGE_BUDGET:g})"
        ) from None
    return RetryPolicy(budget=budget)


class _ConnectionSettings:
    """The resolved connection: which kubeconfig source, which context, which namespace."""

    def __init__(self, *, extras: Mapping[str, Any], hook: TFJobHook) -> None:
        def field(name: str) -> Any:
            if name in extras:
                return extras[name]
            return extras.get(f"extra__kubernetes__{name}")

        self.in_cluster: bool | None = _coalesce(hook.in_cluster, _to_bool(field("in_cluster")))
        self.cluster_context: str | None = _coalesce(hook.cluster_context, field("cluster_context"))
        self.config_file: str | None = _coalesce(hook.config_file, field("kube_config_path"))
        raw = field("kube_config")
        self.config_dict: dict[str, Any] | None = hook.config_dict
        if raw and self.config_dict is None:
            parsed = raw if isinstance(raw, Mapping) else yaml.safe_load(str(raw))
            if not isinstance(parsed, Mapping):
                raise AirflowException("the connection's kube_config extra is not a kubeconfig mapping")
            self.config_dict = dict(parsed)
        self.disable_verify_ssl = bool(
            _coalesce(hook.disable_verify_ssl, _to_bool(field("disable_verify_ssl"))) or False
        )
        self.namespace_extra: str | None = _coalesce(field("namespace"))
        self.outage_budget: Any = field(OUTAGE_BUDGET_EXTRA)
        chosen = [bool(self.in_cluster), bool(raw or hook.config_dict), bool(self.config_file)]
        if sum(chosen) > 1:
            raise AirflowException(
                "Invalid connection configuration: in_cluster, kube_config_path and kube_config are "
                "mutually exclusive; set only one of them."
            )

    @property
    def cache_key(self) -> tuple[Any, ...]:
        config = json.dumps(self.config_dict, sort_keys=True) if self.config_dict else None
        return (self.in_cluster, self.cluster_context, self.config_file, config, self.disable_verify_ssl)

    def kubeconfig_namespace(self) -> str | None:
        """The namespace of the active kubeconfig context (or of the service account in-cluster)."""
        if self.in_cluster:
            return _read_file(SERVICE_ACCOUNT_NAMESPACE_FILE)
        data: Any = self.config_dict
        if data is None:
            path = self.config_file or os.path.expanduser(os.environ.get("KUBECONFIG", "~/.kube/config"))
            path = path.split(os.pathsep)[0]
            text = _read_file(path)
            if text is None:
                return _read_file(SERVICE_ACCOUNT_NAMESPACE_FILE)
            data = yaml.safe_load(text)
        if not isinstance(data, Mapping):
            return None
        wanted = self.cluster_context or data.get("current-context")
        for entry in data.get("contexts") or []:
            if isinstance(entry, Mapping) and entry.get("name") == wanted:
                context = entry.get("context")
                if isinstance(context, Mapping) and context.get("namespace"):
                    return str(context["namespace"])
        return None


def _load_kubeconfig_file(config_file: str | None) -> tuple[dict[str, Any], str]:
    """Read and parse a kubeconfig (``config_file`` or the default); return it and its directory."""
    path = config_file or os.path.expanduser(
        os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0]
    )
    text = _read_file(path)
    if text is None:
        raise AirflowException(f"cannot read kubeconfig {path!r}")
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise AirflowException(f"{path!r} is not a kubeconfig")
    return data, os.path.dirname(os.path.abspath(path))


def _read_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


# One AsyncTFJobClient per (connection settings, event loop) per process, and how many leases
# (running triggers) hold each: the client is closed when its last lease ends.
_async_clients: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[Any, ...], AsyncTFJobClient]
] = weakref.WeakKeyDictionary()
_async_leases: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], int]] = (
    weakref.WeakKeyDictionary()
)
_async_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


class TFJobHook(BaseHook):
    """Access Kubeflow TFJobs through a cncf-kubernetes ``kubernetes`` connection.

    :param kubernetes_conn_id: the :ref:`kubernetes connection <howto/connection:kubernetes>` to use;
        ``None`` to configure the hook from its parameters alone.
    :param namespace: namespace for TFJobs; default: the connection's ``namespace`` extra, then the
        kubeconfig context's namespace, then ``"default"``.
    :param cluster_context: kubeconfig context (overrides the connection's).
    :param config_file: kubeconfig path (overrides the connection's ``kube_config_path``).
    :param in_cluster: use the pod's service account (overrides the connection's).
    :param disable_verify_ssl: skip TLS verification — for this hook's clients only.
    :param config_dict: a kubeconfig as a dict (alternative to a file).
    :param rate_limit: client-side rate limit for this connection in this process; default from
        ``[tfjob_provider] api_qps`` and ``api_burst`` (5 requests/s, burst 10, as client-go).
    :param retry_policy: retry policy; default: an outage budget from the connection's
        ``api_outage_budget`` extra, else ``[tfjob_provider] api_outage_budget`` (180 s).
    :param watch_settings: watch timings (inactivity timeout, poll interval of the fallback, …).
    """

    conn_name_attr = "kubernetes_conn_id"
    default_conn_name = "kubernetes_default"
    conn_type = "kubernetes"
    hook_name = "Kubeflow TFJob"

    def __init__(
        self,
        kubernetes_conn_id: str | None = default_conn_name,
        *,
        namespace: str | None = None,
        cluster_context: str | None = None,
        config_file: str | None = None,
        in_cluster: bool | None = None,
        disable_verify_ssl: bool | None = None,
        config_dict: dict[str, Any] | None = None,
        rate_limit: RateLimit | None = None,
        retry_policy: RetryPolicy | None = None,
        watch_settings: WatchSettings | None = None,
    ) -> None:
        super().__init__()
        self.kubernetes_conn_id = kubernetes_conn_id
        self.namespace = namespace
        self.cluster_context = cluster_context
        self.config_file = config_file
        self.in_cluster = in_cluster
        self.disable_verify_ssl = disable_verify_ssl
        self.config_dict = config_dict
        self.rate_limit = rate_limit
        self.retry_policy = retry_policy
        self.watch_settings = watch_settings

    # --- connection -----------------------------------------------------------------------------

    @cached_property
    def _extras(self) -> dict[str, Any]:
        if not self.kubernetes_conn_id:
            return {}  # explicit parameters only
        try:
            connection = self.get_connection(self.kubernetes_conn_id)
        except AirflowNotFoundException:
            if self.kubernetes_conn_id != self.default_conn_name:
                raise
            return {}  # like KubernetesHook: a missing default connection means "in-cluster or ~/.kube"
        return dict(connection.extra_dejson or {})

    @cached_property
    def _settings(self) -> _ConnectionSettings:
        return _ConnectionSettings(extras=self._extras, hook=self)

    def get_namespace(self) -> str:
        """Namespace: parameter > connection extra > kubeconfig context > ``"default"``."""
        return str(
            _coalesce(self.namespace, self._settings.namespace_extra, self._settings.kubeconfig_namespace())
            or "default"
        )

    def _session(self, settings: _ConnectionSettings) -> Session:
        # One bucket per connection per process; an explicit rate limit gets a bucket of its own.
        rate_limit = self.rate_limit or default_rate_limit()
        key = f"{self.kubernetes_conn_id}:{hash(settings.cache_key)}:{rate_limit}"
        return Session(
            retry=self.retry_policy or default_retry_policy(settings.outage_budget),
            bucket=shared_bucket(key, rate_limit),
            watch=self.watch_settings or WatchSettings(),
        )

    # --- sync -----------------------------------------------------------------------------------

    def _sync_configuration(self) -> Any:
        from kubernetes import client, config
        from kubernetes.config import ConfigException

        settings = self._settings
        configuration = client.Configuration()  # a fresh private instance, never the default
        context = settings.cluster_context
        if settings.in_cluster:
            config.load_incluster_config(client_configuration=configuration)
        elif settings.config_dict is not None:
            config.load_kube_config_from_dict(
                settings.config_dict,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        elif settings.config_file is not None:
            config.load_kube_config(
                config_file=settings.config_file,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        else:
            try:
                config.load_incluster_config(client_configuration=configuration)
            except ConfigException:
                config.load_kube_config(
                    context=context, client_configuration=configuration, persist_config=False
                )
        if settings.disable_verify_ssl:
            configuration.verify_ssl = False
        # urllib3 would otherwise retry idempotent requests answered 413/429/503 with Retry-After,
        # unseen and unbudgeted: the provider's retry policy must be the only one.
        configuration.retries = False
        return configuration

    @cached_property
    def client(self) -> SyncTFJobClient:
        """The hook's synchronous client: one ``ApiClient`` for the hook's whole life."""
        from kubernetes.client import ApiClient

        from tfjob_provider.kube.sync_client import SyncTFJobClient

        api_client = ApiClient(configuration=self._sync_configuration())
        return SyncTFJobClient(api_client, session=self._session(self._settings))

    def get_conn(self) -> SyncTFJobClient:
        """Airflow's conventional accessor; the same object as :attr:`client`."""
        return self.client

    # --- async ----------------------------------------------------------------------------------

    async def _async_extras(self) -> dict[str, Any]:
        from airflow.providers.common.compat.connection import get_async_connection

        if not self.kubernetes_conn_id:
            return {}
        try:
            connection = await get_async_connection(self.kubernetes_conn_id)
        except AirflowNotFoundException:
            if self.kubernetes_conn_id != self.default_conn_name:
                raise
            return {}
        return dict(connection.extra_dejson or {})

    async def _async_key(self) -> tuple[Any, ...]:
        if "_settings" not in self.__dict__:
            self.__dict__["_settings"] = _ConnectionSettings(extras=await self._async_extras(), hook=self)
        return (self.kubernetes_conn_id, *self._settings.cache_key)

    @contextlib.asynccontextmanager
    async def async_client_lease(self) -> AsyncIterator[AsyncTFJobClient]:
        """Hold the shared :class:`AsyncTFJobClient` for the duration of a block (a trigger's run).

        The triggerer's triggers share one client per connection; it stays open while any of them
        holds a lease and is closed when the last lease ends — so a triggerer with work keeps its
        connections and TLS session, and an event loop that ends (``airflow dags test`` runs each
        trigger in its own) leaves no unclosed aiohttp session behind.
        """
        loop = asyncio.get_running_loop()
        key = await self._async_key()
        leases = _async_leases.setdefault(loop, {})
        leases[key] = leases.get(key, 0) + 1  # before any await: a concurrent release must see us
        client: AsyncTFJobClient | None = None
        try:
            client = await self.get_async_client()
            yield client
        finally:
            remaining = leases.get(key, 0) - 1
            if remaining > 0:
                leases[key] = remaining
            else:
                leases.pop(key, None)
                clients = _async_clients.get(loop, {})
                # Only the client this lease held: once a test has closed the shared clients
                # (tests/integration/async_clients.py), another may sit there.
                if client is not None and clients.get(key) is client:
                    del clients[key]
                    await client.close()

    async def get_async_client(self) -> AsyncTFJobClient:
        """The process's :class:`AsyncTFJobClient` for this connection on the running event loop.

        Built once (config loaded, TLS context created) and then shared by every hook and trigger
        of the triggerer with the same connection settings; do not close it from a trigger.
        Triggers hold it through :meth:`async_client_lease`, which closes it after the last one.
        """
        loop = asyncio.get_running_loop()
        key = await self._async_key()
        settings = self._settings
        clients = _async_clients.setdefault(loop, {})
        if key in clients:
            return clients[key]
        lock = _async_locks.setdefault(loop, asyncio.Lock())
        async with lock:
            if key not in clients:
                # The first import of kubernetes_asyncio's generated client takes seconds of CPU;
                # do it off the event loop so the triggerer's other triggers keep running.
                await asyncio.to_thread(importlib.import_module, "tfjob_provider.kube.async_client")
                clients[key] = await self._build_async_client(settings)
            return clients[key]

    async def _build_async_client(self, settings: _ConnectionSettings) -> AsyncTFJobClient:
        from kubernetes_asyncio import client, config
        from kubernetes_asyncio.config import ConfigException
        from kubernetes_asyncio.config.kube_config import KubeConfigLoader

        configuration = client.Configuration()
        loader: KubeConfigLoader | None = None
        if settings.in_cluster:
            config.load_incluster_config(client_configuration=configuration)
        else:
            config_dict, base_path = settings.config_dict, None
            if config_dict is None and settings.config_file is None:
                try:
                    config.load_incluster_config(client_configuration=configuration)
                except ConfigException:
                    pass
                else:
                    return self._async_client(configuration, settings)
            if config_dict is None:
                # File I/O off the event loop.
                config_dict, base_path = await asyncio.to_thread(_load_kubeconfig_file, settings.config_file)
            loader = KubeConfigLoader(
                config_dict=config_dict, config_base_path=base_path, active_context=settings.cluster_context
            )
            await loader.load_and_set(configuration)
            if "exec" in (loader._user or {}):
                configuration.refresh_api_key_hook = _exec_refresher(loader)
        return self._async_client(configuration, settings)

    def _async_client(self, configuration: Any, settings: _ConnectionSettings) -> AsyncTFJobClient:
        from kubernetes_asyncio.client import ApiClient

        from tfjob_provider.kube.async_client import AsyncTFJobClient

        if settings.disable_verify_ssl:
            configuration.verify_ssl = False
        # The shared watch holds one connection per open stream (two per namespace) for minutes at
        # a time; under kubernetes_asyncio's default pool of 100 connections, triggers in more than
        # ~50 namespaces would queue behind streams that never give theirs back.  Ordinary requests
        # are bounded by the client-side rate limit, so the pool needs no limit of its own.
        configuration.connection_pool_maxsize = 0  # aiohttp: no limit
        return AsyncTFJobClient(ApiClient(configuration=configuration), session=self._session(settings))

    # --- Airflow UI -----------------------------------------------------------------------------

    def test_connection(self) -> tuple[bool, str]:
        """Check the connection reaches a cluster that serves TFJobs."""
        try:
            self.client.check_tfjob_served()
        except Exception as error:
            return False, str(error)
        return (
            True,
            f"Connection successful: kubeflow.org/v1 TFJobs are served (namespace {self.get_namespace()!r}).",
        )


def _exec_refresher(loader: Any) -> Any:
    """A ``refresh_api_key_hook`` that keeps an exec-plugin token fresh (see the module docstring)."""
    last_run = time.monotonic()

    async def refresh(configuration: Any) -> None:
        nonlocal last_run
        has_expiry = hasattr(loader, "exec_plugin_expiry")
        if not has_expiry and time.monotonic() - last_run < EXEC_REFRESH_WITHOUT_EXPIRY:
            return
        await loader.load_from_exec_plugin()  # a no-op while a known expiry lies in the future
        last_run = time.monotonic()
        if getattr(loader, "token", None):
            configuration.api_key["BearerToken"] = loader.token

    return refresh


__all__ = ["TFJobHook", "default_retry_policy"]

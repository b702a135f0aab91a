"""``SandboxRuntime``: a sandbox's parts built from ``SandboxOptions``, started and stopped on one loop."""

from __future__ import annotations

import ipaddress
import logging
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfjob_sandbox.admission.crds import install_crd_support
from tfjob_sandbox.admission.jobset_crd import install_jobset_crd
from tfjob_sandbox.admission.jobset_webhook import register_jobset_admission
from tfjob_sandbox.admission.tfjob_crd import install_tfjob_crd
from tfjob_sandbox.admission.tfjob_webhook import register_tfjob_admission
from tfjob_sandbox.api.resource_types import Registry
from tfjob_sandbox.apiserver.auth import Authenticator
from tfjob_sandbox.apiserver.faults import ApiFaults
from tfjob_sandbox.apiserver.rbac import RbacPolicy
from tfjob_sandbox.apiserver.server import ApiServer
from tfjob_sandbox.apiserver.tls import generate_credentials
from tfjob_sandbox.host.loopback_ports import PortReservations
from tfjob_sandbox.job_controller.controller import JobController
from tfjob_sandbox.job_controller.sync import Settings as JobSettings
from tfjob_sandbox.jobset_controller.controller import JobSetController
from tfjob_sandbox.kubelet.kubelet import Kubelet
from tfjob_sandbox.launch.admin_api import AdminApi
from tfjob_sandbox.launch.kubeconfig import write_kubeconfig
from tfjob_sandbox.store.persistence import StatePersister
from tfjob_sandbox.store.store import Store
from tfjob_sandbox.training_operator.controller import TrainingOperator

log = logging.getLogger(__name__)


@dataclass
class SandboxOptions:
    """How to run a sandbox.  Every field has the default the CLI uses.

    :param host: address to bind; anything but loopback needs ``allow_remote`` (pods run as you).
    :param port: port to bind, 0 picks a free one.
    :param token: the admin bearer token; random when not given.
    :param state_dir: keep objects (and pod work directories) here across restarts.
    :param http: serve plain HTTP instead of HTTPS with a fresh CA.
    :param rbac_file: YAML tokens/users/rules file restricting non-admin tokens (docs/sandbox.md).
    :param history_limit: watch history kept per resource; older resumes get 410 Expired.
    :param bookmark_interval: seconds between watch bookmarks (kube-apiserver: 60).
    :param backoff_initial: kubelet CrashLoopBackOff first delay, seconds.
    :param backoff_cap: kubelet CrashLoopBackOff ceiling, seconds.
    :param pod_start_delay: seconds a bound pod's containers wait in ContainerCreating (image pull).
    :param loopback_tf_config: TF_CONFIG with 127.0.0.1 endpoints so real TF processes can connect.
    :param workdir: where pod working directories and logs go (default: state_dir or a temp dir).
    :param allow_remote: permit binding a non-loopback address.
    :param kubeconfig_path: where to write the kubeconfig (default: inside the sandbox's directory).
    :param serve_tfjobs: serve ``kubeflow.org/v1 tfjobs`` before any CRD is applied.
    :param tfjob_crd: install the package's TFJob CRD at start, as a cluster with the training
        operator has it, so TFJobs are pruned, defaulted and validated; ``False`` serves them
        schemaless until a CRD is applied (ignored with ``serve_tfjobs=False``).
    :param fault_seed: seed for rate-based API faults.
    :param jobsets: install the JobSet CRD and run the JobSet controller, as a cluster with
        JobSet has them; ``False``: no JobSets until a JobSet CRD is applied (and no controller).
    """

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    state_dir: Path | None = None
    http: bool = False
    rbac_file: Path | None = None
    history_limit: int = 10_000
    bookmark_interval: float = 60.0
    backoff_initial: float = 1.0
    backoff_cap: float = 10.0
    pod_start_delay: float = 0.0
    loopback_tf_config: bool = False
    workdir: Path | None = None
    allow_remote: bool = False
    kubeconfig_path: Path | None = None
    serve_tfjobs: bool = True
    tfjob_crd: bool = True
    fault_seed: int | None = None
    jobsets: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        if not self.allow_remote and not _is_loopback(self.host):
            raise ValueError(
                f"refusing to bind {self.host!r}: the sandbox runs pod commands as local processes of the "
                "current user; pass allow_remote=True (--allow-remote) to expose it beyond this machine"
            )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class SandboxRuntime:
    """The assembled sandbox.  Construct anywhere; :meth:`start`/:meth:`stop` on its event loop."""

    def __init__(self, options: SandboxOptions) -> None:
        options.check()
        self.options = options
        self.token = options.token or secrets.token_urlsafe(24)
        self._private_dir = Path(tempfile.mkdtemp(prefix="tfjob-sandbox-"))
        base = options.state_dir or self._private_dir
        self.workdir = options.workdir or (base / "pods")
        self.kubeconfig_path = options.kubeconfig_path or (self._private_dir / "kubeconfig")
        self.store = Store(
            history_limit=options.history_limit,
            registry=Registry.with_builtins(serve_tfjobs=options.serve_tfjobs),
        )
        self.crds = install_crd_support(self.store)
        self.persister = StatePersister(self.store, options.state_dir) if options.state_dir else None
        if self.persister is not None:
            self.persister.load()
        register_tfjob_admission(self.store)
        if options.serve_tfjobs and options.tfjob_crd:
            install_tfjob_crd(self.store)
        register_jobset_admission(self.store)
        if options.jobsets:
            install_jobset_crd(self.store)
        #: Loopback ports the operator reserves and the kubelet releases to the pods' processes.
        self.ports = PortReservations() if options.loopback_tf_config else None
        self.kubelet = Kubelet(
            self.store,
            workdir=self.workdir,
            backoff_initial=options.backoff_initial,
            backoff_cap=options.backoff_cap,
            pod_start_delay=options.pod_start_delay,
            ports=self.ports,
        )
        self.operator = TrainingOperator(
            self.store, loopback_tf_config=options.loopback_tf_config, ports=self.ports
        )
        #: batch/v1 Jobs; pod-failure back-off shortened like the kubelet's (upstream: 10 s to 10 min).
        self.job_controller = JobController(
            self.store,
            settings=JobSettings(backoff_initial=options.backoff_initial, backoff_cap=options.backoff_cap),
        )
        self.jobset_controller = JobSetController(self.store) if options.jobsets else None
        self.faults = ApiFaults(seed=options.fault_seed)
        policy = RbacPolicy.from_file(options.rbac_file) if options.rbac_file else None
        self.authenticator = Authenticator(admin_token=self.token, policy=policy)
        self.server = ApiServer(
            self.store,
            authenticator=self.authenticator,
            faults=self.faults,
            log_path=self.kubelet.log_path,
            bookmark_interval=options.bookmark_interval,
            admin_handler=AdminApi(self).handle,
        )
        self.url = ""
        self.ca_pem: bytes | None = None
        self._started = False

    async def start(self) -> None:
        """Bind the API server, write the kubeconfig, start the kubelet, operator and persistence."""
        options = self.options
        ssl_context = None
        if not options.http:
            hosts = ["127.0.0.1", "localhost", "::1", options.host]
            credentials = generate_credentials(self._private_dir / "pki", hosts=hosts)
            self.ca_pem = credentials.ca_pem
            ssl_context = credentials.ssl_context()
        self.kubelet.start()
        self.operator.start()
        self.job_controller.start()
        if self.jobset_controller is not None:
            self.jobset_controller.start()
        if self.persister is not None:
            self.persister.start()
        port = await self.server.start(host=options.host, port=options.port, ssl_context=ssl_context)
        scheme = "http" if options.http else "https"
        shown_host = f"[{options.host}]" if ":" in options.host else options.host
        self.url = f"{scheme}://{shown_host}:{port}"
        write_kubeconfig(self.kubeconfig_path, server=self.url, token=self.token, ca_pem=self.ca_pem)
        self._started = True

    async def stop(self) -> None:
        """Stop serving, stop the controllers, kill and reap every pod process, flush state."""
        try:
            await self.server.stop()
            await self.operator.stop()
            await self.job_controller.stop()
            if self.jobset_controller is not None:
                await self.jobset_controller.stop()
            await self.kubelet.stop()
            if self.persister is not None:
                await self.persister.stop()
        finally:
            if self.ports is not None:
                self.ports.close()
            self._started = False
            shutil.rmtree(self._private_dir / "pki", ignore_errors=True)

    def cleanup(self) -> None:
        """Remove the private directory (CA files, and the kubeconfig and workdir unless placed elsewhere)."""
        shutil.rmtree(self._private_dir, ignore_errors=True)

    def status(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "resourceVersion": self.store.resource_version,
            "operatorRunning": self.operator.running,
            "processes": self.kubelet.running_processes,
            "openWatches": self.server.watches.open_count,
            "objects": {
                f"{rt.group or 'core'}/{rt.plural}": self.store.count(rt) for rt in self.store.tables()
            },
        }

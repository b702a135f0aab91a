"""``TFJobOperator``: run a distributed TensorFlow training as one Airflow task, exactly once;
parameters, outcomes and deletions are in docs/reference/operator.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

from airflow.providers.common.compat.sdk import (
    AirflowFailException,
    AirflowTaskTimeout,
    BaseOperator,
    conf,
)

try:  # Airflow >= 3.2 keeps task exceptions in the Task SDK; older 3.x in airflow.exceptions.
    from airflow.sdk.exceptions import TaskDeferralTimeout
except ImportError:  # pragma: no cover - depends on the installed Airflow
    from airflow.exceptions import TaskDeferralTimeout  # type: ignore[no-redef,attr-defined]

from tfjob_provider._airflow.carrying_out import (
    carry_out,
    decide_ending,
    delete_if_ours,
    judge_confirmed,
    outcome_from_event,
    read_job,
    translated_api_errors,
)
from tfjob_provider._airflow.fail_fast_templates import FailFastTemplates
from tfjob_provider._airflow.task_params import DEFERRAL_TIMEOUT_MARGIN, coerce_rules, seconds
from tfjob_provider._jobset import tfjob_to_jobset
from tfjob_provider._outcome.report import result_dict
from tfjob_provider._outcome.task_ending import ON_FINISH_ACTIONS, OnFinishAction
from tfjob_provider._outcome.wait import (
    WaitOutcome,
    WaitTarget,
    earliest_deadline,
    format_utc,
    parse_utc,
    utc_now,
)
from tfjob_provider.clipping import clip
from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.kube.kinds import JobKind, kind_for
from tfjob_provider.lineage.extra import check_asset_keys
from tfjob_provider.lineage.task_lineage import TFJobLineage
from tfjob_provider.links import (
    XCOM_BACKEND,
    XCOM_NAME,
    XCOM_NAMESPACE,
    XCOM_UID,
    TFJobLink,
    dashboard_url_template,
    render_dashboard_url,
)
from tfjob_provider.manifest import (
    DEFAULT_CLEAN_POD_POLICY,
    DEFAULT_RESTART_POLICY,
    ManifestError,
    build_tfjob,
    load_tfjob,
    resolve_namespace,
    validate_tfjob,
)
from tfjob_provider.naming import job_name_for, stamp_identity
from tfjob_provider.operators._log_streaming import LogStreamer, print_deciding_log
from tfjob_provider.operators._submission import Submission, TaskIdentity, submit_or_adopt
from tfjob_provider.operators._worker_wait import wait_in_worker, wake_worker_waits
from tfjob_provider.policy import Rules
from tfjob_provider.triggers.tfjob import TFJobTrigger
from tfjob_provider.ui.record import XCOM_CONN_ID, now_iso, observe

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from tfjob_provider.kube.sync_client import SyncTFJobClient
    from tfjob_provider.kube.tracking import JobSnapshot

#: Seconds the chief's log stream gets to deliver its last lines before the outcome is reported.
LOG_DRAIN_SECONDS: Final = 2.0

#: Typed manifest parameters, passed to :func:`tfjob_provider.manifest.build_tfjob` under the same
#: names (``container_resources`` becomes its ``resources``).
BUILDER_FIELDS: Final = (
    "image",
    "command",
    "args",
    "env",
    "container_resources",
    "node_selector",
    "tolerations",
    "restart_policy",
    "chief",
    "worker",
    "ps",
    "evaluator",
    "success_policy",
    "backoff_limit",
    "active_deadline_seconds",
    "clean_pod_policy",
    "ttl_seconds_after_finished",
    "suspend",
    "scheduling_policy",
    "managed_by",
    "enable_dynamic_worker",
    "labels",
    "annotations",
    "pod_labels",
    "pod_annotations",
    "service_account_name",
    "image_pull_policy",
    "image_pull_secrets",
    "volumes",
    "volume_mounts",
)


class TFJobOperator(FailFastTemplates, TFJobLineage, BaseOperator):
    """Submit a Kubeflow TFJob, wait for it, and end as the chief/worker/PS rules say.

    Give the job either as ``tfjob`` (a full manifest) or through the typed parameters
    (``image`` and the others of :func:`tfjob_provider.manifest.build_tfjob`), not both.

    :param tfjob: the TFJob manifest: a dict, YAML/JSON text, or the path of a ``.yaml``,
        ``.yml`` or ``.json`` file (templated, file contents too).  Its ``metadata.name`` is
        replaced by ``job_name``; its ``metadata.namespace`` must agree with ``namespace``.
    :param image: container image of every replica (typed build).
    :param command: container command (typed build).
    :param args: container arguments (typed build).
    :param env: environment, a dict or a list of Kubernetes ``EnvVar`` dicts (typed build).
    :param container_resources: container resources, e.g. ``{"limits": {"nvidia.com/gpu": 1}}``
        (typed build; ``resources`` is taken by Airflow's BaseOperator).
    :param node_selector: pod node selector (typed build).
    :param tolerations: pod tolerations (typed build).
    :param restart_policy: replica restart policy: ``Never``, ``OnFailure``, ``Always`` or
        ``ExitCode`` (typed build).
    :param chief: Chief replicas: a count, or a dict / ``ReplicaSpec`` with per-type overrides.
    :param worker: Worker replicas (as ``chief``).
    :param ps: parameter-server replicas (as ``chief``).
    :param evaluator: Evaluator replicas (as ``chief``).
    :param success_policy: ``spec.successPolicy`` (``""`` or ``"AllWorkers"``).
    :param backoff_limit: ``runPolicy.backoffLimit``.
    :param active_deadline_seconds: ``runPolicy.activeDeadlineSeconds``.
    :param clean_pod_policy: ``runPolicy.cleanPodPolicy`` (default ``"Running"``).
    :param ttl_seconds_after_finished: ``runPolicy.ttlSecondsAfterFinished``.
    :param suspend: ``runPolicy.suspend``.
    :param scheduling_policy: ``runPolicy.schedulingPolicy`` (gang scheduling).
    :param managed_by: ``runPolicy.managedBy`` (e.g. ``kueue.x-k8s.io/multikueue``).
    :param enable_dynamic_worker: ``spec.enableDynamicWorker``.
    :param labels: labels of the TFJob.
    :param annotations: annotations of the TFJob.
    :param pod_labels: labels of every replica pod (typed build).
    :param pod_annotations: annotations of every replica pod (typed build).
    :param service_account_name: pods' service account (typed build).
    :param image_pull_policy: container image pull policy (typed build).
    :param image_pull_secrets: names of the pods' image pull secrets (typed build).
    :param volumes: pod volumes (typed build).
    :param volume_mounts: container volume mounts (typed build).
    :param namespace: namespace of the TFJob; default: the manifest's, else the connection's,
        else ``"default"``.
    :param kubernetes_conn_id: the :ref:`kubernetes connection <howto/connection:kubernetes>`.
    :param job_name: name of the TFJob; default: a deterministic name derived from dag id, task
        id, run id and map index, so every try of a task instance finds the same TFJob.
    :param wait_for_completion: wait for the outcome; False returns right after submission.
    :param deferrable: wait in the triggerer instead of the worker; default from
        ``[operators] default_deferrable``.
    :param poll_interval: None (default): the wait judges the TFJob when it or its pods change
        (a watch) and when a time-based rule comes due (``docs/concepts/timers.md``).  A number: also
        re-judge an unchanged state at least this often, as a safety net (no API request).
    :param startup_timeout: seconds from the TFJob's creation within which a training operator
        must reconcile it and its replicas must leave Pending (also each replica's Pending limit
        unless ``rules`` sets ``pending_timeout``); None: wait forever.
    :param timeout: seconds (or timedelta) from the TFJob's creation after which the task times
        out: the TFJob is deleted and ``AirflowTaskTimeout`` raised.  An adopted TFJob keeps
        its original clock; a retry that submits a fresh TFJob starts a new one.
    :param rules: :class:`~tfjob_provider.policy.Rules`, or a dict of its fields.
    :param get_logs: stream the chief's (or worker-0's) log into the task log while waiting in
        the worker; when deferred, print its last lines when the task resumes.  The failure
        report includes the culprits' log tails in both modes.
    :param log_tail_lines: lines of each culprit's log in the failure report (0: none).
    :param on_finish_action: what to do with the TFJob when the task ends: ``"keep"``,
        ``"delete_succeeded"`` (default) or ``"delete"``.  A failed TFJob with anything still
        Pending or Running, or that only the provider judged failed, is always deleted.
    :param cancel_on_kill: delete the TFJob when the task is killed (``on_kill``; in deferrable
        mode the trigger's ``on_kill``, Airflow >= 3.3).
    :param reattach: adopt this task instance's existing unfinished TFJob instead of replacing it.
    :param output_asset_keys: keys of the outputs whose values are URIs (a string or a list of
        them) of what the training wrote: each becomes an asset event of every ``AssetAlias``
        outlet and an OpenLineage output dataset (docs/guides/assets-and-lineage.md).
    :param input_asset_keys: keys of the outputs whose values are URIs of what the training read:
        OpenLineage input datasets.
    :param dashboard_url_template: URL of the "TFJob" extra link with ``{namespace}``, ``{name}``
        and ``{uid}`` placeholders; default: ``[tfjob_provider] dashboard_url_template``.
    :param backend: what runs the training: ``"tfjob"`` (default: a TFJob for the Kubeflow training
        operator) or ``"jobset"`` (the same job translated to a JobSet, docs/guides/jobset.md).
    """

    template_fields: Sequence[str] = (
        "tfjob",
        "namespace",
        "job_name",
        "kubernetes_conn_id",
        *BUILDER_FIELDS,
    )
    template_ext: Sequence[str] = (".yaml", ".yml", ".json")
    template_fields_renderers = {
        "tfjob": "yaml",
        "command": "json",
        "args": "json",
        "env": "json",
        "container_resources": "json",
        "node_selector": "json",
        "tolerations": "json",
        "chief": "json",
        "worker": "json",
        "ps": "json",
        "evaluator": "json",
        "scheduling_policy": "json",
        "labels": "json",
        "annotations": "json",
        "pod_labels": "json",
        "pod_annotations": "json",
        "image_pull_secrets": "json",
        "volumes": "json",
        "volume_mounts": "json",
    }
    operator_extra_links = (TFJobLink(),)
    ui_color = "#fcd9b6"

    def __init__(
        self,
        *,
        tfjob: Mapping[str, Any] | str | None = None,
        image: str | None = None,
        command: Sequence[str] | None = None,
        args: Sequence[str] | None = None,
        env: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        container_resources: Mapping[str, Any] | None = None,
        node_selector: Mapping[str, str] | None = None,
        tolerations: Sequence[Mapping[str, Any]] | None = None,
        restart_policy: str = DEFAULT_RESTART_POLICY,
        chief: Any = 0,
        worker: Any = 1,
        ps: Any = 0,
        evaluator: Any = 0,
        success_policy: str | None = None,
        backoff_limit: int | str | None = None,
        active_deadline_seconds: int | str | None = None,
        clean_pod_policy: str | None = DEFAULT_CLEAN_POD_POLICY,
        ttl_seconds_after_finished: int | str | None = None,
        suspend: bool | str | None = None,
        scheduling_policy: Mapping[str, Any] | None = None,
        managed_by: str | None = None,
        enable_dynamic_worker: bool | str | None = None,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        pod_labels: Mapping[str, str] | None = None,
        pod_annotations: Mapping[str, str] | None = None,
        service_account_name: str | None = None,
        image_pull_policy: str | None = None,
        image_pull_secrets: Sequence[str] | None = None,
        volumes: Sequence[Mapping[str, Any]] | None = None,
        volume_mounts: Sequence[Mapping[str, Any]] | None = None,
        namespace: str | None = None,
        kubernetes_conn_id: str = TFJobHook.default_conn_name,
        job_name: str | None = None,
        wait_for_completion: bool = True,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float | timedelta | None = None,
        startup_timeout: float | timedelta | None = 600.0,
        timeout: float | timedelta | None = None,
        rules: Rules | Mapping[str, Any] | None = None,
        get_logs: bool = True,
        log_tail_lines: int = 100,
        on_finish_action: OnFinishAction = "delete_succeeded",
        cancel_on_kill: bool = True,
        reattach: bool = True,
        dashboard_url_template: str | None = None,
        output_asset_keys: Sequence[str] = (),
        input_asset_keys: Sequence[str] = (),
        backend: str = "tfjob",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        try:
            self._kind: JobKind = kind_for(backend)
        except ValueError as error:
            raise ValueError(f"{self.task_id}: {error}") from None
        self.backend = backend
        self.output_asset_keys = check_asset_keys(
            output_asset_keys, field="output_asset_keys", task_id=self.task_id
        )
        self.input_asset_keys = check_asset_keys(
            input_asset_keys, field="input_asset_keys", task_id=self.task_id
        )
        if (tfjob is None) == (image is None):
            raise ValueError(
                f"{self.task_id}: give the TFJob either as tfjob= (a manifest, YAML text or file) "
                "or through the typed parameters starting with image=, exactly one of the two"
            )
        if on_finish_action not in ON_FINISH_ACTIONS:
            raise ValueError(
                f"{self.task_id}: on_finish_action is {on_finish_action!r}; "
                f"use one of {list(ON_FINISH_ACTIONS)}"
            )
        if isinstance(log_tail_lines, bool) or not isinstance(log_tail_lines, int) or log_tail_lines < 0:
            raise ValueError(f"{self.task_id}: log_tail_lines must be a non-negative integer")
        self.tfjob = tfjob
        self.image = image
        self.command = command
        self.args = args
        self.env = env
        self.container_resources = container_resources
        self.node_selector = node_selector
        self.tolerations = tolerations
        self.restart_policy = restart_policy
        self.chief = chief
        self.worker = worker
        self.ps = ps
        self.evaluator = evaluator
        self.success_policy = success_policy
        self.backoff_limit = backoff_limit
        self.active_deadline_seconds = active_deadline_seconds
        self.clean_pod_policy = clean_pod_policy
        self.ttl_seconds_after_finished = ttl_seconds_after_finished
        self.suspend = suspend
        self.scheduling_policy = scheduling_policy
        self.managed_by = managed_by
        self.enable_dynamic_worker = enable_dynamic_worker
        self.labels = labels
        self.annotations = annotations
        self.pod_labels = pod_labels
        self.pod_annotations = pod_annotations
        self.service_account_name = service_account_name
        self.image_pull_policy = image_pull_policy
        self.image_pull_secrets = image_pull_secrets
        self.volumes = volumes
        self.volume_mounts = volume_mounts
        self.namespace = namespace
        self.kubernetes_conn_id = kubernetes_conn_id
        self.job_name = job_name
        self.wait_for_completion = wait_for_completion
        self.deferrable = deferrable
        self.poll_interval = seconds(poll_interval, field="poll_interval") or None
        self.startup_timeout = seconds(startup_timeout, field="startup_timeout")
        self.timeout = seconds(timeout, field="timeout")
        self.rules = rules
        self.get_logs = get_logs
        self.log_tail_lines = log_tail_lines
        self.on_finish_action = on_finish_action
        self.cancel_on_kill = cancel_on_kill
        self.reattach = reattach
        self.dashboard_url_template = dashboard_url_template
        self._job: tuple[str, str, str | None] | None = None
        self._killed: str | None = None
        self._last_seen: JobSnapshot | None = None
        self.check_template_field_nesting()

    @cached_property
    def hook(self) -> TFJobHook:
        return TFJobHook(kubernetes_conn_id=self.kubernetes_conn_id)

    # --- preparing: everything that can be checked without the cluster ---------------------------

    def _rules(self) -> Rules:
        try:
            return coerce_rules(self.rules)
        except (TypeError, ValueError) as error:
            raise AirflowFailException(f"{self.task_id}: rules are invalid: {error}") from None

    def _manifest(self, identity: TaskIdentity, rules: Rules) -> dict[str, Any]:
        """The validated, identity-stamped manifest to submit (a JobSet's with ``backend="jobset"``);
        AirflowFailException listing problems."""
        name = self.job_name or job_name_for(
            dag_id=identity.dag_id,
            task_id=identity.task_id,
            run_id=identity.run_id,
            map_index=identity.map_index,
        )
        try:
            if self.tfjob is not None:
                manifest = load_tfjob(self.tfjob)
                written = (
                    (manifest.get("metadata") or {}).get("name")
                    if isinstance(manifest.get("metadata"), dict)
                    else None
                )
                if written and written != name:
                    self.log.info(
                        "metadata.name %r of the manifest is replaced by %r (set job_name= to choose it)",
                        written,
                        name,
                    )
            else:
                typed = {field: getattr(self, field) for field in BUILDER_FIELDS}
                typed["resources"] = typed.pop("container_resources")
                manifest = build_tfjob(name=name, **typed)
            namespace = resolve_namespace(
                manifest, requested=self.namespace, fallback=self.hook.get_namespace()
            )
            manifest = stamp_identity(
                manifest,
                name=name,
                namespace=namespace,
                dag_id=identity.dag_id,
                task_id=identity.task_id,
                run_id=identity.run_id,
                map_index=identity.map_index,
                try_number=identity.try_number,
            )
            manifest = validate_tfjob(manifest)
            if self._kind.backend == "jobset":
                self._lineage_manifest = manifest  # the job facet describes the TFJob it runs
                return tfjob_to_jobset(manifest, rules=rules)
            return manifest
        except ManifestError as error:
            raise AirflowFailException(f"{self.task_id}: {error}") from None
        except (TypeError, ValueError) as error:
            reason = clip(str(error))  # a TypeError may quote a whole value
            raise AirflowFailException(f"{self.task_id}: the TFJob cannot be built: {reason}") from None

    def _lineage_spec(self) -> Mapping[str, Any] | None:
        """The TFJob for the OpenLineage job facet: as submitted, else as the parameters describe it."""
        if self._lineage_manifest is not None:
            return self._lineage_manifest
        try:
            if self.tfjob is not None:
                return load_tfjob(self.tfjob)
            typed = {field: getattr(self, field) for field in BUILDER_FIELDS}
            typed["resources"] = typed.pop("container_resources")
            return build_tfjob(name=self.task_id.replace("_", "-").lower(), **typed)
        except (ManifestError, TypeError, ValueError):
            return None

    # --- execute ------------------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        self._lineage_end = None  # a try's lineage never shows an earlier try's ending
        ti = context["ti"]
        identity = TaskIdentity(
            dag_id=ti.dag_id,
            task_id=ti.task_id,
            run_id=ti.run_id,
            map_index=ti.map_index if ti.map_index is not None else -1,
            try_number=ti.try_number,
        )
        rules = self._rules()
        kind = self._kind
        manifest = self._manifest(identity, rules)
        if kind.backend == "tfjob":
            self._lineage_manifest = manifest
        client = self.hook.client
        with translated_api_errors(self.task_id):
            client.run(kind.check_served(client.session))
            submission = submit_or_adopt(
                client,
                manifest,
                identity=identity,
                rules=rules,
                reattach=self.reattach,
                log=self.log,
                kind=kind,
            )
        name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
        self._job = (name, namespace, submission.uid)
        self._publish(context, name=name, namespace=namespace, uid=submission.uid)
        if not self.wait_for_completion:
            verdict = kind.engine.decide(submission.tfjob, [], now=utc_now(), rules=rules)[0]
            result = result_dict(name=name, namespace=namespace, uid=submission.uid, verdict=verdict)
            return self._with_outlet_events(context, result, submitted=True)
        target = self._target(submission, rules, context)
        if submission.action != "created":
            with translated_api_errors(self.task_id):
                tfjob, pods = read_job(client, name=name, namespace=namespace, kind=kind)
                outcome = judge_confirmed(client, target, tfjob, pods)
            if outcome is not None:
                return self._conclude(context, target, outcome, observe(tfjob, pods, decided_at=now_iso()))
        if self.deferrable:
            self._defer(target)
        outcome = self._wait_in_worker(client, target)
        seen = self._last_seen
        observed = (
            None
            if seen is None
            else observe(
                seen.tfjob,
                seen.pods,
                earlier=seen.earlier,
                earlier_dropped=seen.earlier_dropped,
                decided_at=now_iso(),
            )
        )
        return self._conclude(context, target, outcome, observed)

    def _publish(self, context: Context, *, name: str, namespace: str, uid: str | None) -> None:
        ti = context["ti"]
        ti.xcom_push(key=XCOM_NAME, value=name)
        ti.xcom_push(key=XCOM_NAMESPACE, value=namespace)
        ti.xcom_push(key=XCOM_UID, value=uid)
        ti.xcom_push(key=XCOM_CONN_ID, value=self.kubernetes_conn_id)
        if self._kind.backend != "tfjob":
            ti.xcom_push(key=XCOM_BACKEND, value=self._kind.backend)
        url = render_dashboard_url(dashboard_url_template(self), name=name, namespace=namespace, uid=uid)
        if url:
            ti.xcom_push(key=TFJobLink().xcom_key, value=url)
            self.log.info("TFJob dashboard: %s", url)

    def _target(self, submission: Submission, rules: Rules, context: Context) -> WaitTarget:
        metadata = submission.tfjob.get("metadata") or {}
        created = parse_utc(metadata.get("creationTimestamp")) or utc_now()
        candidates: dict[str, datetime | None] = {
            "timeout": created + timedelta(seconds=self.timeout) if self.timeout is not None else None
        }
        if self.deferrable and self.execution_timeout is not None:
            # In the worker Airflow enforces execution_timeout itself; while deferred nobody does.
            started = getattr(context["ti"], "start_date", None) or utc_now()
            candidates["execution_timeout"] = started + self.execution_timeout
        deadline, deadline_name = earliest_deadline(candidates)
        return WaitTarget(
            name=str(metadata["name"]),
            namespace=str(metadata["namespace"]),
            uid=submission.uid,
            rules=rules,
            startup_timeout=self.startup_timeout,
            deadline=deadline,
            deadline_name=deadline_name or "timeout",
            engine=self._kind.engine,
        )

    def _defer(self, target: WaitTarget) -> None:
        trigger = TFJobTrigger(
            name=target.name,
            namespace=target.namespace,
            uid=target.uid,
            kubernetes_conn_id=self.kubernetes_conn_id,
            deadline=format_utc(target.deadline),
            deadline_name=target.deadline_name,
            startup_timeout=self.startup_timeout,
            rules=(target.rules or Rules()).to_dict(),
            poll_interval=self.poll_interval,
            cancel_on_kill=self.cancel_on_kill,
            backend=self._kind.backend,
        )
        safety_net = None
        if target.deadline is not None:
            safety_net = max(target.deadline - utc_now(), timedelta(0)) + DEFERRAL_TIMEOUT_MARGIN
        self.log.info(
            "Deferring: waiting for %s %s/%s in the triggerer", self._kind.noun, target.namespace, target.name
        )
        self.defer(trigger=trigger, method_name="execute_complete", timeout=safety_net)

    def _wait_in_worker(self, client: SyncTFJobClient, target: WaitTarget) -> WaitOutcome:
        streamer = (
            LogStreamer(client, namespace=target.namespace, emit=self.log.info) if self.get_logs else None
        )
        self.log.info(
            "Waiting for %s %s/%s (uid %s)", self._kind.noun, target.namespace, target.name, target.uid
        )

        def on_snapshot(snapshot: JobSnapshot) -> None:
            self._last_seen = snapshot
            if streamer is not None:
                streamer.update(snapshot.pods)

        try:
            return wait_in_worker(
                client,
                target,
                poll_interval=self.poll_interval,
                on_snapshot=on_snapshot,
                interrupted=lambda: self._killed,
            )
        except AirflowTaskTimeout:
            # execution_timeout fired in the worker: the task fails, so nothing may keep training.
            delete_if_ours(
                client,
                name=target.name,
                namespace=target.namespace,
                uid=target.uid,
                log=self.log,
                why="execution_timeout reached",
                kind=self._kind,
            )
            raise
        finally:
            if streamer is not None:
                streamer.drain(LOG_DRAIN_SECONDS)

    # --- resuming after the trigger ------------------------------------------------------------------

    def execute_complete(self, context: Context, event: Mapping[str, Any]) -> Any:
        """Resume after :class:`~tfjob_provider.triggers.tfjob.TFJobTrigger` fired."""
        outcome = outcome_from_event(self.task_id, event)
        self._job = (outcome.name, outcome.namespace, outcome.uid)
        if self.get_logs and outcome.status in ("success", "failed"):
            print_deciding_log(
                self.hook.client,
                name=outcome.name,
                namespace=outcome.namespace,
                emit=self.log.info,
                # On failure the report shows every culprit's log tail: print the chief's only if
                # it is not one of them.
                reported=outcome.verdict.culprits if outcome.status == "failed" and outcome.verdict else (),
                kind=self._kind,
            )
        target = WaitTarget(
            name=outcome.name,
            namespace=outcome.namespace,
            uid=outcome.uid,
            rules=self._rules(),
            startup_timeout=self.startup_timeout,
            engine=self._kind.engine,
        )
        observed = event.get("observed") if isinstance(event, Mapping) else None
        return self._conclude(context, target, outcome, observed if isinstance(observed, Mapping) else None)

    def resume_execution(self, next_method: str, next_kwargs: dict[str, Any] | None, context: Context) -> Any:
        """Airflow's own deferral timeout (the safety net) fired: delete the TFJob, then time out."""
        try:
            return super().resume_execution(next_method, next_kwargs, context)
        except TaskDeferralTimeout as error:
            ti = context["ti"]
            name = ti.xcom_pull(task_ids=ti.task_id, key=XCOM_NAME, map_indexes=ti.map_index)
            namespace = ti.xcom_pull(task_ids=ti.task_id, key=XCOM_NAMESPACE, map_indexes=ti.map_index)
            uid = ti.xcom_pull(task_ids=ti.task_id, key=XCOM_UID, map_indexes=ti.map_index)
            if name and namespace:
                delete_if_ours(
                    self.hook.client,
                    name=name,
                    namespace=namespace,
                    uid=uid,
                    log=self.log,
                    why="the deferral timed out",
                    kind=self._kind,
                )
            raise AirflowTaskTimeout(f"{self.task_id}: the deferral timed out: {error}") from error

    # --- concluding ----------------------------------------------------------------------------------

    def _conclude(
        self,
        context: Context,
        target: WaitTarget,
        outcome: WaitOutcome,
        observed: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """End the task as :func:`tfjob_provider._outcome.task_ending.conclude` decides for ``outcome``;
        ``observed``: what the waiter last saw (:func:`tfjob_provider.ui.record.observe`)."""
        client = self.hook.client
        with translated_api_errors(self.task_id):
            outcome, ending = decide_ending(
                client,
                target,
                outcome,
                role="operator",
                on_finish_action=self.on_finish_action,
                log_tail_lines=self.log_tail_lines,
                observed=observed,
                try_number=getattr(context["ti"], "try_number", None),
            )
        self._record_ending(outcome, ending)
        result = carry_out(
            client, outcome, ending, role="operator", ti=context["ti"], log=self.log, kind=self._kind
        )
        return self._with_outlet_events(context, result) if result is not None else None

    # --- killing -------------------------------------------------------------------------------------

    def on_kill(self) -> None:
        """The task is being killed (or timed out in the worker): delete the TFJob if ``cancel_on_kill``."""
        self._killed = "the task was killed while waiting for its TFJob"
        wake_worker_waits()
        if not self.cancel_on_kill or self._job is None:
            return
        name, namespace, uid = self._job
        delete_if_ours(
            self.hook.client,
            name=name,
            namespace=namespace,
            uid=uid,
            log=self.log,
            why="task killed",
            kind=self._kind,
        )


__all__ = ["ON_FINISH_ACTIONS", "TFJobOperator"]

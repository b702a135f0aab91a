"""``TFJobSensor``: wait on a TFJob submitted elsewhere and judge it as the operator does, in poke,
reschedule or deferrable mode; it never deletes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import (
    AirflowException,
    BaseSensorOperator,
    PokeReturnValue,
    conf,
)

from tfjob_provider._airflow.carrying_out import (
    carry_out,
    decide_ending,
    judge_confirmed,
    outcome_from_event,
    read_job,
    translated_api_errors,
)
from tfjob_provider._airflow.fail_fast_templates import FailFastTemplates
from tfjob_provider._airflow.task_params import DEFERRAL_TIMEOUT_MARGIN, coerce_rules, seconds
from tfjob_provider._outcome.wait import WaitOutcome, WaitTarget, format_utc, utc_now
from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.kube.errors import KubeApiError
from tfjob_provider.kube.kinds import JobKind, kind_for
from tfjob_provider.lineage.extra import check_asset_keys
from tfjob_provider.lineage.task_lineage import TFJobLineage, openlineage_active
from tfjob_provider.links import XCOM_NAME, XCOM_NAMESPACE, XCOM_UID, TFJobLink
from tfjob_provider.policy import Rules
from tfjob_provider.triggers.tfjob import TFJobTrigger
from tfjob_provider.ui.record import XCOM_CONN_ID, now_iso, observe

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context


class TFJobSensor(FailFastTemplates, TFJobLineage, BaseSensorOperator):
    """Wait until an existing TFJob has finished; succeed, fail or retry as its replicas decide.

    Returns (XCom ``return_value``) the same result dict as
    :class:`~tfjob_provider.operators.tfjob.TFJobOperator`, and pushes ``tfjob_name``,
    ``tfjob_namespace`` and ``tfjob_uid`` once the TFJob is seen.

    :param job_name: name of the TFJob (templated).
    :param namespace: its namespace (templated); default: the connection's, else ``"default"``.
    :param kubernetes_conn_id: the :ref:`kubernetes connection <howto/connection:kubernetes>`.
    :param rules: :class:`~tfjob_provider.policy.Rules`, or a dict of its fields.
    :param startup_timeout: seconds from the TFJob's creation within which a training operator must
        reconcile it and its replicas must leave Pending; None (default): no limit.
    :param log_tail_lines: lines of each culprit's log in the failure report (0: none).
    :param deferrable: wait in the triggerer; default from ``[operators] default_deferrable``.
    :param dashboard_url_template: URL template of the "TFJob" extra link (see the operator).
    :param output_asset_keys: output keys holding URIs of what the training wrote (see the operator).
    :param input_asset_keys: output keys holding URIs of what the training read (see the operator).
    :param backend: ``"tfjob"`` (default) or ``"jobset"``: ``job_name`` names a JobSet, judged with
        its Jobs and pods as the operator's ``backend="jobset"`` judges it.

    The usual sensor parameters apply: ``poke_interval`` (default 30 s; poke and reschedule
    modes only: deferred, the trigger judges on every change and when a time-based rule comes
    due, ``docs/concepts/timers.md``), ``timeout``, ``mode``, ``soft_fail``.
    """

    template_fields = ("job_name", "namespace", "kubernetes_conn_id")
    operator_extra_links = (TFJobLink(),)
    ui_color = "#fcd9b6"

    def __init__(
        self,
        *,
        job_name: str,
        namespace: str | None = None,
        kubernetes_conn_id: str = TFJobHook.default_conn_name,
        rules: Rules | Mapping[str, Any] | None = None,
        startup_timeout: float | timedelta | None = None,
        log_tail_lines: int = 100,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        dashboard_url_template: str | None = None,
        poke_interval: float | timedelta = 30.0,
        output_asset_keys: Sequence[str] = (),
        input_asset_keys: Sequence[str] = (),
        backend: str = "tfjob",
        **kwargs: Any,
    ) -> None:
        super().__init__(poke_interval=poke_interval, **kwargs)
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
        self.job_name = job_name
        self.namespace = namespace
        self.kubernetes_conn_id = kubernetes_conn_id
        self.rules = rules
        self.startup_timeout = seconds(startup_timeout, field="startup_timeout")
        self.log_tail_lines = log_tail_lines
        self.deferrable = deferrable
        self.dashboard_url_template = dashboard_url_template
        self._published_uid: str | None = None
        self.check_template_field_nesting()

    @cached_property
    def hook(self) -> TFJobHook:
        return TFJobHook(kubernetes_conn_id=self.kubernetes_conn_id)

    def _resolved_namespace(self) -> str:
        return self.namespace or self.hook.get_namespace()

    def _target(self) -> WaitTarget:
        try:
            rules = coerce_rules(self.rules)
        except (TypeError, ValueError) as error:
            raise AirflowException(f"{self.task_id}: rules are invalid: {error}") from None
        return WaitTarget(
            name=self.job_name,
            namespace=self._resolved_namespace(),
            uid=None,
            rules=rules,
            startup_timeout=self.startup_timeout,
            wait_for_existence=True,
            engine=self._kind.engine,
        )

    def _publish(self, context: Context, outcome_uid: str | None, namespace: str) -> None:
        if outcome_uid is None or outcome_uid == self._published_uid:
            return
        ti = context["ti"]
        ti.xcom_push(key=XCOM_NAME, value=self.job_name)
        ti.xcom_push(key=XCOM_NAMESPACE, value=namespace)
        ti.xcom_push(key=XCOM_UID, value=outcome_uid)
        ti.xcom_push(key=XCOM_CONN_ID, value=self.kubernetes_conn_id)
        self._published_uid = outcome_uid

    # --- poke and reschedule --------------------------------------------------------------------

    def poke(self, context: Context) -> bool | PokeReturnValue:
        target = self._target()
        with translated_api_errors(self.task_id):
            tfjob, pods = read_job(
                self.hook.client, name=target.name, namespace=target.namespace, kind=self._kind
            )
        if tfjob is None:
            self.log.info("%s %s/%s does not exist (yet)", self._kind.noun, target.namespace, target.name)
            return False
        self._lineage_manifest = tfjob
        metadata = tfjob.get("metadata")
        uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
        self._publish(context, str(uid) if uid else None, target.namespace)
        with translated_api_errors(self.task_id):
            outcome = judge_confirmed(self.hook.client, target, tfjob, pods)
        if outcome is None:
            return False
        observed = observe(tfjob, pods, decided_at=now_iso())
        return PokeReturnValue(is_done=True, xcom_value=self._conclude(context, target, outcome, observed))

    # --- deferrable -----------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        self._lineage_end = None  # a try's lineage never shows an earlier try's ending
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)
        if first:
            return first.xcom_value if isinstance(first, PokeReturnValue) else None
        target = self._target()
        started = getattr(context["ti"], "start_date", None) or utc_now()
        deadline = started + timedelta(seconds=self.timeout)
        trigger = TFJobTrigger(
            name=target.name,
            namespace=target.namespace,
            uid=None,
            kubernetes_conn_id=self.kubernetes_conn_id,
            deadline=format_utc(deadline),
            deadline_name="timeout",
            startup_timeout=self.startup_timeout,
            rules=(target.rules or Rules()).to_dict(),
            cancel_on_kill=False,
            wait_for_existence=True,
            backend=self._kind.backend,
        )
        safety_net = max(deadline - utc_now(), timedelta(0)) + DEFERRAL_TIMEOUT_MARGIN
        self.defer(trigger=trigger, method_name="execute_complete", timeout=safety_net)

    def execute_complete(self, context: Context, event: Mapping[str, Any]) -> Any:
        outcome = outcome_from_event(self.task_id, event)
        self._publish(context, outcome.uid, outcome.namespace)
        observed = event.get("observed") if isinstance(event, Mapping) else None
        if openlineage_active():  # the job facet shows the TFJob's shape: read it once, best effort
            with contextlib.suppress(KubeApiError):
                client = self.hook.client
                self._lineage_manifest = client.run(
                    self._kind.get(client.session, outcome.name, namespace=outcome.namespace)
                )
        return self._conclude(
            context, self._target(), outcome, observed if isinstance(observed, Mapping) else None
        )

    # --- concluding -----------------------------------------------------------------------------

    def _conclude(
        self,
        context: Context,
        target: WaitTarget,
        outcome: WaitOutcome,
        observed: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """End the task as :func:`tfjob_provider._outcome.task_ending.conclude` decides (never deletes)."""
        client = self.hook.client
        with translated_api_errors(self.task_id):
            outcome, ending = decide_ending(
                client,
                target,
                outcome,
                role="sensor",
                soft_fail=self.soft_fail,
                log_tail_lines=self.log_tail_lines,
                observed=observed,
                try_number=getattr(context["ti"], "try_number", None),
            )
        self._record_ending(outcome, ending)
        result = carry_out(
            client, outcome, ending, role="sensor", ti=context["ti"], log=self.log, kind=self._kind
        )
        return self._with_outlet_events(context, result) if result is not None else None


__all__ = ["TFJobSensor"]

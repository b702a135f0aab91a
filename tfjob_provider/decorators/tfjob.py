"""``@task.tfjob``: a Python function run as a distributed TensorFlow training, one TFJob per task
(:class:`~tfjob_provider.operators.tfjob.TFJobOperator` with the program filled in).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from airflow.providers.common.compat.sdk import (
    AirflowFailException,
    DecoratedOperator,
    TaskDecorator,
    task_decorator_factory,
)

from tfjob_provider.decorators.packing import (
    PAYLOAD_ENV,
    TaskFunctionError,
    check_callable,
    check_source,
    pack,
    runner_command,
)
from tfjob_provider.operators.tfjob import TFJobOperator

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

#: XCom key of the TFJob's result dict (what a TFJobOperator returns) for a ``@task.tfjob`` task,
#: whose ``return_value`` is the function's.
XCOM_TFJOB_RESULT: Final = "tfjob_result"
#: Parameters of TFJobOperator that the decorator fills itself.
_OWN_FIELDS: Final = ("tfjob", "command", "args")


class _TFJobDecoratedOperator(DecoratedOperator, TFJobOperator):  # type: ignore[misc]
    """The operator behind ``@task.tfjob`` (see the module docstring).

    :param interpreter: the Python inside the image that runs the function (default
        ``python3``; templated); on the sandbox, a local interpreter standing in for the image's.
    """

    custom_operator_name = "@task.tfjob"
    template_fields: Sequence[str] = tuple(
        dict.fromkeys(
            [
                "op_args",
                "op_kwargs",
                "interpreter",
                *(f for f in TFJobOperator.template_fields if f not in _OWN_FIELDS),
            ]
        )
    )
    # No template files: an argument such as "data.json" is a value, not a file to render.
    template_ext: Sequence[str] = ()
    # The callable is not copied (it may hold unpicklable defaults); its source is what travels.
    shallow_copy_attrs: Sequence[str] = ("python_callable",)

    def __init__(self, *, interpreter: str = "python3", **kwargs: Any) -> None:
        given = [name for name in _OWN_FIELDS if kwargs.get(name) is not None]
        task_id = kwargs.get("task_id", "?")
        if kwargs.get("image") is None:
            raise ValueError(f"{task_id}: @task.tfjob needs image=, the image every replica runs")
        if given:
            raise ValueError(
                f"{task_id}: @task.tfjob runs the decorated function, so {', '.join(given)} cannot be "
                "given; use TFJobOperator for a program of your own"
            )
        if not isinstance(interpreter, str) or not interpreter:
            raise ValueError(f"{task_id}: interpreter must be the name or path of a Python, e.g. 'python3'")
        super().__init__(**kwargs)
        self.interpreter = interpreter
        self._sent: str | None = None
        self.function_name = check_callable(self.python_callable)
        try:
            self.function_source = self.get_python_source()
        except (OSError, TypeError) as error:
            raise TaskFunctionError(
                f"@task.tfjob function {self.function_name!r} cannot be serialised: its source is not "
                f"available ({error}); define it with def in a DAG file"
            ) from None
        check_source(self.function_source, self.function_name)

    def _payload_env(self) -> list[dict[str, Any]]:
        """``env`` as a list of EnvVar dicts, plus the payload of the (rendered) arguments."""
        try:
            positional = [
                parameter.name
                for parameter in inspect.signature(self.python_callable).parameters.values()
                if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
            ]
            payload = pack(
                self.function_source,
                self.function_name,
                list(self.op_args),
                dict(self.op_kwargs),
                parameter_names=positional,
            )
        except TaskFunctionError as error:
            raise AirflowFailException(f"{self.task_id}: {error}") from None
        env: list[dict[str, Any]]
        if self.env is None:
            env = []
        elif isinstance(self.env, Mapping):
            env = [{"name": str(key), "value": str(value)} for key, value in self.env.items()]
        else:
            env = [dict(item) for item in self.env]
        # This operator's own payload from an earlier execute() of the same object is replaced.
        env = [
            item for item in env if not (item.get("name") == PAYLOAD_ENV and item.get("value") == self._sent)
        ]
        if any(item.get("name") == PAYLOAD_ENV for item in env):
            raise AirflowFailException(f"{self.task_id}: env must not set {PAYLOAD_ENV}; @task.tfjob sets it")
        self._sent = payload
        return [*env, {"name": PAYLOAD_ENV, "value": payload}]

    def execute(self, context: Context) -> Any:
        # Everything about the function and its arguments is checked before the first API request.
        self.env = self._payload_env()
        self.command = runner_command(self.interpreter)
        self.args = None
        return self._task_value(context, TFJobOperator.execute(self, context))

    def execute_complete(self, context: Context, event: Mapping[str, Any]) -> Any:
        return self._task_value(context, TFJobOperator.execute_complete(self, context, event))

    def _task_value(self, context: Context, result: Mapping[str, Any] | None) -> Any:
        """The function's return value for ``return_value``; the TFJob's result dict goes under
        :data:`XCOM_TFJOB_RESULT`."""
        if result is None:
            return None
        context["ti"].xcom_push(key=XCOM_TFJOB_RESULT, value=dict(result))
        return result.get("outputs")


def tfjob_task(
    python_callable: Callable[..., Any] | None = None,
    multiple_outputs: bool | None = None,
    **kwargs: Any,
) -> TaskDecorator:
    """``@task.tfjob(image=..., chief=1, worker=2, ...)``: run the function as a TFJob.

    Accepts every :class:`~tfjob_provider.operators.tfjob.TFJobOperator` parameter except
    ``tfjob``, ``command`` and ``args``, plus ``interpreter`` (default ``python3``).

    :param python_callable: the function (given by the decorator syntax).
    :param multiple_outputs: unroll a returned dict into one XCom per key.
    """
    return task_decorator_factory(
        python_callable=python_callable,
        multiple_outputs=multiple_outputs,
        decorated_operator_class=_TFJobDecoratedOperator,
        **kwargs,
    )


__all__ = ["XCOM_TFJOB_RESULT", "tfjob_task"]

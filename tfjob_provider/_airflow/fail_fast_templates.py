""":class:`FailFastTemplates`, mixed into the operator and the sensor: a templated field that cannot be
rendered fails the task once (no retries), naming the field, the file and the line
(docs/adr/0016-template-errors-fail-without-retry.md).
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import jinja2
from airflow.providers.common.compat.sdk import AirflowFailException

from tfjob_provider.clipping import clip, shown
from tfjob_provider.manifest import shape_problem

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context


def _template_location(error: BaseException) -> tuple[str | None, int | None]:
    """The template file (None for a field's own text) and line where *error* was raised.

    The innermost template frame of the traceback tells: a frame of compiled template code
    carries its template in ``__jinja_template__`` (its Python line maps to a template line), and
    a traceback Jinja has already rewritten shows frames whose globals carry
    ``__jinja_exception__`` and whose code has the template's file name and line.  Airflow's
    renderer consumes Jinja's output generator outside its own ``handle_exception`` call, so both
    kinds occur.
    """
    filename: str | None = None
    line: int | None = None
    trace: types.TracebackType | None = error.__traceback__
    while trace is not None:
        frame_globals = trace.tb_frame.f_globals
        template = frame_globals.get("__jinja_template__")
        if isinstance(template, jinja2.Template):
            filename = template.name or template.filename
            line = template.get_corresponding_lineno(trace.tb_lineno)
        elif "__jinja_exception__" in frame_globals:
            filename, line = trace.tb_frame.f_code.co_filename, trace.tb_lineno
        trace = trace.tb_next
    return (None if filename in (None, "<template>") else filename), line


def _where(template: str | None, line: int | None) -> str:
    place = f"template file {shown(template, 200)}" if template else "the field's own text"
    return f"{place}, line {line}" if line is not None else place


def template_error_message(task_id: str, field: str, error: jinja2.TemplateError, searchpath: Any) -> str:
    """The one-line reason (with its fix) a templated field could not be rendered."""
    head = f"{task_id}: the templated field {field!r} cannot be rendered:"
    if isinstance(error, jinja2.TemplateNotFound):
        template, line = _template_location(error)
        missing = shown(str(error.name), 200)
        included = f" (included from {_where(template, line)})" if template or line else ""
        looked_in = f" (looked in {shown(list(searchpath), 400)})" if searchpath else ""
        return (
            f"{head} the template file {missing} does not exist{included}{looked_in}. Fix: put the "
            "file next to the DAG file or in the DAG's template_searchpath, or correct its name."
        )
    if isinstance(error, jinja2.TemplateSyntaxError):
        template = error.name if error.name else None
        reason = clip(str(error.message).rstrip("."), 300)
        return (
            f"{head} Jinja syntax error in {_where(template, error.lineno)}: {reason}. "
            "Fix: correct the template there (an unclosed {{ or {% is typical)."
        )
    template, line = _template_location(error)
    if isinstance(error, jinja2.UndefinedError):
        fix = "define it (params, a macro, user_defined_macros) or guard it with | default(...)"
    else:
        fix = "correct the template there"
    return f"{head} {clip(str(error), 300)} in {_where(template, line)}. Fix: {fix}."


def _searchpath(jinja_env: jinja2.Environment | None) -> Iterable[str] | None:
    loader = getattr(jinja_env, "loader", None)
    path = getattr(loader, "searchpath", None)
    return [str(item) for item in path] if isinstance(path, list | tuple) else None


class FailFastTemplates:
    """Mixin (before ``BaseOperator`` in the bases) that makes template problems permanent failures."""

    task_id: str
    template_fields: Any

    def check_template_field_nesting(self) -> None:
        """Refuse, when the task is created, a templated value nested deeper than the manifest limit.

        Airflow walks templated values recursively as soon as the operator is created (looking
        for XCom references), so this must run at the end of ``__init__``: a ``ValueError`` naming
        the field and the limit is the DAG's import error, instead of a ``RecursionError``.
        """
        for field in self.template_fields:
            problem = shape_problem(getattr(self, field, None), field, check_size=False)
            if problem is not None:
                raise ValueError(f"{self.task_id}: {problem}")

    def _refuse_over_limits(self, field: str, value: Any) -> None:
        problem = shape_problem(value, field)
        if problem is not None:
            raise AirflowFailException(f"{self.task_id}: templated field {problem}")

    def _do_render_template_fields(
        self,
        parent: Any,
        template_fields: Iterable[str],
        context: Context,
        jinja_env: jinja2.Environment,
        seen_oids: set[int],
    ) -> None:
        render = super()._do_render_template_fields  # type: ignore[misc]
        if parent is not self:  # a nested object with template fields of its own
            render(parent, template_fields, context, jinja_env, seen_oids)
            return
        for field in template_fields:
            self._refuse_over_limits(field, getattr(self, field, None))
            try:
                render(parent, (field,), context, jinja_env, seen_oids)
            except jinja2.TemplateError as error:
                message = template_error_message(self.task_id, field, error, _searchpath(jinja_env))
                raise AirflowFailException(message) from None
            self._refuse_over_limits(field, getattr(self, field, None))  # what the template made of it


__all__ = ["FailFastTemplates", "template_error_message"]

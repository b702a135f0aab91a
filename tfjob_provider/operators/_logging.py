"""The logger shape the operator's helpers need, whichever logger Airflow hands the task.

Airflow 3 gives tasks a structlog logger (``self.log``), not a :class:`logging.Logger`; the helpers
only call ``info`` and ``warning`` with %-style arguments, which both kinds accept.
"""

from __future__ import annotations

from typing import Any, Protocol


class TaskLog(Protocol):
    def info(self, event: str, *args: Any) -> Any: ...

    def warning(self, event: str, *args: Any) -> Any: ...


__all__ = ["TaskLog"]

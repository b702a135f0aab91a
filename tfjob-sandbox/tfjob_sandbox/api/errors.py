"""``ApiError``: the one error every part of the sandbox raises, rendered as a ``metav1.Status``."""

from __future__ import annotations

from typing import Any

#: ``reason`` strings of ``metav1.StatusReason`` for the codes the sandbox produces.
REASON_FOR_CODE: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """A failed API call: HTTP ``code``, Status ``reason`` and ``message``, optional details/headers.

    :param code: HTTP status code (also the Status ``code``).
    :param reason: machine-readable ``metav1.StatusReason`` such as ``NotFound`` or ``Invalid``.
    :param message: the human-readable message, worded like kube-apiserver's.
    :param details: the Status ``details`` (``name``, ``group``, ``kind``, ``causes``,
        ``retryAfterSeconds``), omitted when ``None``.
    :param headers: extra HTTP response headers, e.g. ``Retry-After``.
    """

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = dict(headers or {})

    def to_status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body for this error."""
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            status["details"] = self.details
        return status

    def __repr__(self) -> str:
        return f"ApiError({self.code}, {self.reason!r}, {self.message!r})"


def status_success(*, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``metav1.Status`` with ``status: Success`` (what some deletes return)."""
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        status["details"] = details
    return status


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def not_found(qualified_resource: str, name: str, *, group: str, kind: str) -> ApiError:
    """404 worded as ``<resource>[.<group>] "<name>" not found``."""
    return ApiError(
        404,
        "NotFound",
        f'{qualified_resource} "{name}" not found',
        details={"name": name, "group": group, "kind": kind} if group else {"name": name, "kind": kind},
    )


def invalid(*, kind: str, group: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 Invalid listing ``causes`` (each ``{"type", "message", "field"}``) like a field.ErrorList."""
    rendered = [_render_cause(cause) for cause in causes]
    summary = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    qualified_kind = f"{kind}.{group}" if group else kind
    details: dict[str, Any] = {"name": name, "kind": kind, "causes": causes}
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {summary}', details=details)


def _render_cause(cause: dict[str, str]) -> str:
    field = cause.get("field", "")
    message = cause.get("message", "")
    return f"{field}: {message}" if field else message

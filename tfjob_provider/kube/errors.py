""":class:`KubeApiError` and its subclasses, mapped from responses and transport failures
(:func:`error_from_response`; docs/adr/0020-typed-api-errors-naming-the-missing-permission.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any

from tfjob_provider.constants import RBAC_DOCS_URL
from tfjob_provider.kube.requests import ApiRequest, RbacRule

#: How much of a non-Status body is kept (and shown).
MAX_RAW_BODY_CHARS = 256

TFJOB_NOT_SERVED_MESSAGE = (
    "the cluster does not serve kubeflow.org/v1 TFJob — install the Kubeflow training operator v1"
)


class KubeApiError(Exception):
    """A request to the Kubernetes API failed.

    :param message: one human sentence (the API's message when it gave one).
    :param status: HTTP status, or ``None`` when no response arrived (connection error, timeout).
    :param reason: the API's machine reason (``NotFound``, ``Forbidden``, …) or the HTTP phrase.
    :param body: the ``kind: Status`` body as a dict, or the raw body cut to 256 characters.
    :param request: the request that failed, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        reason: str = "",
        body: Mapping[str, Any] | str | None = None,
        request: ApiRequest | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason
        self.body = body
        self.request = request

    @property
    def status_body(self) -> Mapping[str, Any] | None:
        return self.body if isinstance(self.body, Mapping) else None

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only constructor: teach pickle (and copy) how to rebuild us.
        return (_rebuild, (type(self), self.message, self.__dict__))


def _rebuild(cls: type[KubeApiError], message: str, state: dict[str, Any]) -> KubeApiError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class NotFoundError(KubeApiError):
    """404: the object (or the API path) does not exist."""


class ConflictError(KubeApiError):
    """409: a write conflicted with the stored object."""


class AlreadyExistsError(ConflictError):
    """409 with reason ``AlreadyExists``: an object of that name exists already."""


class ForbiddenError(KubeApiError):
    """403: the credentials lack an RBAC permission; the message names the missing rule and the fix.

    :param rule: the rule the failed request needed, when known.
    """

    def __init__(self, message: str, *, rule: RbacRule | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.rule = rule


class UnauthorizedError(KubeApiError):
    """401: the credentials were not accepted (expired token, wrong certificate)."""


class InvalidError(KubeApiError):
    """422: the API rejected the object; ``causes`` are the API's ``details.causes`` (field, message)."""

    def __init__(self, message: str, *, causes: Sequence[Mapping[str, Any]] = (), **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.causes: tuple[Mapping[str, Any], ...] = tuple(causes)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(str(cause.get("field", "")) for cause in self.causes if cause.get("field"))


class GoneError(KubeApiError):
    """410: the requested resourceVersion is no longer in the server's history — list again."""


class TooManyRequestsError(KubeApiError):
    """429: API Priority and Fairness (or a proxy) rejected the request; wait ``retry_after`` seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class UnavailableError(KubeApiError):
    """The API could not answer: a 5xx, a refused or reset connection, a timeout.

    ``retry_after`` is set when a 503/504 carried ``Retry-After``.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class TFJobNotServedError(KubeApiError):
    """The cluster does not serve ``kubeflow.org/v1`` ``tfjobs`` (no training operator installed)."""

    def __init__(self, *, request: ApiRequest | None = None, status: int | None = None) -> None:
        super().__init__(TFJOB_NOT_SERVED_MESSAGE, status=status, reason="NotServed", request=request)


# --- parsing helpers -------------------------------------------------------------------------


def clean_body(body: bytes | str | Mapping[str, Any] | None) -> Mapping[str, Any] | str | None:
    """Keep a ``kind: Status`` body as a dict; cut anything else to :data:`MAX_RAW_BODY_CHARS`."""
    if body is None:
        return None
    if isinstance(body, Mapping):
        return body if body.get("kind") == "Status" else json.dumps(body)[:MAX_RAW_BODY_CHARS]
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        parsed = json.loads(text)
    except ValueError:
        return text[:MAX_RAW_BODY_CHARS]
    if isinstance(parsed, dict) and parsed.get("kind") == "Status":
        return parsed
    return text[:MAX_RAW_BODY_CHARS]


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date (negative → 0)."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return max(0.0, (moment - now).total_seconds())


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if not headers:
        return None
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None


def _retry_after(headers: Mapping[str, str] | None, status_body: Mapping[str, Any] | None) -> float | None:
    header = parse_retry_after(_header(headers, "Retry-After"))
    if header is not None:
        return header
    details = (status_body or {}).get("details")
    if isinstance(details, Mapping):
        seconds = details.get("retryAfterSeconds")
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool):
            return float(seconds)
    return None


def forbidden_message(rule: RbacRule | None, api_message: str) -> str:
    """Explain a 403 as the rule to add, not just the API server's "cannot get resource" sentence."""
    if rule is None:
        return f"forbidden: {api_message} (grant the missing permission; see {RBAC_DOCS_URL})"
    group = rule.api_group
    where = f"in namespace {rule.namespace!r}" if rule.namespace else "cluster-wide"
    fix = (
        f"add to the Role bound to the provider's service account {where}: "
        f'{{apiGroups: ["{group}"], resources: ["{rule.resource}"], verbs: ["{rule.verb}"]}} '
        f"(the complete least-privilege Role is at {RBAC_DOCS_URL})"
    )
    return f"missing RBAC permission: {rule.describe()}; {fix}. API server said: {api_message}"


STRICT_DECODING_PREFIX = "strict decoding error"
_STRICT_FIELD = re.compile(r'(unknown|duplicate) field "([^"]+)"')


def strict_decoding_causes(message: str) -> list[dict[str, str]]:
    """Causes from a ``strict decoding error: unknown field "spec.x", duplicate field "y"`` message."""
    return [
        {
            "reason": "FieldValueInvalid" if kind == "unknown" else "FieldValueDuplicate",
            "field": field,
            "message": f"{kind} field",
        }
        for kind, field in _STRICT_FIELD.findall(message)
    ]


def error_from_response(
    status: int,
    body: bytes | str | Mapping[str, Any] | None,
    headers: Mapping[str, str] | None,
    *,
    request: ApiRequest | None,
) -> KubeApiError:
    """Map a non-2xx response to the matching :class:`KubeApiError` subclass (returned, not raised,
    so the transport can ``raise … from`` its own exception)."""
    cleaned = clean_body(body)
    status_body = cleaned if isinstance(cleaned, Mapping) else None
    api_reason = str((status_body or {}).get("reason") or "")
    api_message = str(
        (status_body or {}).get("message") or (cleaned if isinstance(cleaned, str) else "") or ""
    )
    where = f" ({request.describe()})" if request is not None else ""
    message = f"{status} {api_reason or 'error'}: {api_message or 'no message'}{where}"
    common: dict[str, Any] = {"status": status, "reason": api_reason, "body": cleaned, "request": request}
    if status == 404:
        return NotFoundError(message, **common)
    if status == 409:
        if api_reason == "AlreadyExists":
            return AlreadyExistsError(message, **common)
        return ConflictError(message, **common)
    if status == 403:
        rule = request.rbac if request is not None else None
        return ForbiddenError(forbidden_message(rule, api_message or "forbidden"), rule=rule, **common)
    if status == 401:
        return UnauthorizedError(
            f"{message} — the credentials were rejected; check the connection's kubeconfig or token", **common
        )
    if status == 422:
        details = (status_body or {}).get("details")
        raw_causes = details.get("causes") if isinstance(details, Mapping) else None
        causes = [c for c in raw_causes if isinstance(c, Mapping)] if isinstance(raw_causes, list) else []
        return InvalidError(message, causes=causes, **common)
    if status == 400 and api_message.startswith(STRICT_DECODING_PREFIX):
        # fieldValidation=Strict rejects unknown/duplicate fields with a 400 whose causes are only
        # in the message text; surface them as an InvalidError so callers treat both alike.
        return InvalidError(message, causes=strict_decoding_causes(api_message), **common)
    if status == 410:
        return GoneError(message, **common)
    if status == 429:
        return TooManyRequestsError(message, retry_after=_retry_after(headers, status_body), **common)
    if status >= 500:
        return UnavailableError(message, retry_after=_retry_after(headers, status_body), **common)
    return KubeApiError(message, **common)


def error_from_watch_status(status_object: Mapping[str, Any], *, request: ApiRequest | None) -> KubeApiError:
    """Map the ``object`` of a watch ``ERROR`` event (a ``Status``) like an HTTP error of its ``code``."""
    code = status_object.get("code")
    status = code if isinstance(code, int) and not isinstance(code, bool) else 500
    return error_from_response(status, dict(status_object, kind="Status"), None, request=request)


def unavailable(description: str, *, request: ApiRequest | None) -> UnavailableError:
    """A transport failure with no HTTP response: refused/reset connection, TLS failure, timeout."""
    where = f" ({request.describe()})" if request is not None else ""
    return UnavailableError(
        f"API server unreachable: {description}{where}", reason="Unavailable", request=request
    )


__all__ = [
    "MAX_RAW_BODY_CHARS",
    "TFJOB_NOT_SERVED_MESSAGE",
    "AlreadyExistsError",
    "ConflictError",
    "ForbiddenError",
    "GoneError",
    "InvalidError",
    "KubeApiError",
    "NotFoundError",
    "TFJobNotServedError",
    "TooManyRequestsError",
    "UnauthorizedError",
    "UnavailableError",
    "clean_body",
    "error_from_response",
    "error_from_watch_status",
    "forbidden_message",
    "parse_retry_after",
    "unavailable",
]

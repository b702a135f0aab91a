"""Mapping API responses to the provider's own error classes."""

from __future__ import annotations

import json
import pickle

import aiohttp
import kubernetes.client.exceptions
import kubernetes_asyncio.client.exceptions
import pytest
import urllib3.exceptions

from tfjob_provider.constants import RBAC_DOCS_URL
from tfjob_provider.kube import errors
from tfjob_provider.kube import requests as rq

ALL_ERRORS = (
    errors.KubeApiError,
    errors.NotFoundError,
    errors.ConflictError,
    errors.AlreadyExistsError,
    errors.ForbiddenError,
    errors.UnauthorizedError,
    errors.InvalidError,
    errors.GoneError,
    errors.TooManyRequestsError,
    errors.UnavailableError,
    errors.TFJobNotServedError,
)


def status(code: int, reason: str, message: str, **details: object) -> bytes:
    body: dict[str, object] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return json.dumps(body).encode()


# A 403 exactly as kube-apiserver words it for a service account without "watch" on pods.
FORBIDDEN_WATCH_PODS = status(
    403,
    "Forbidden",
    'pods is forbidden: User "system:serviceaccount:airflow:airflow-worker" cannot watch resource '
    '"pods" in API group "" in the namespace "training"',
    kind="pods",
)


@pytest.mark.parametrize("error_class", ALL_ERRORS)
def test_no_error_subclasses_a_transport_exception(error_class: type[Exception]) -> None:
    foreign = (
        aiohttp.ClientError,
        urllib3.exceptions.HTTPError,
        kubernetes.client.exceptions.OpenApiException,
        kubernetes_asyncio.client.exceptions.OpenApiException,
        OSError,
    )
    assert not issubclass(error_class, foreign)
    assert issubclass(error_class, errors.KubeApiError)


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (404, "NotFound", errors.NotFoundError),
        (409, "Conflict", errors.ConflictError),
        (409, "AlreadyExists", errors.AlreadyExistsError),
        (401, "Unauthorized", errors.UnauthorizedError),
        (410, "Expired", errors.GoneError),
        (429, "TooManyRequests", errors.TooManyRequestsError),
        (500, "InternalError", errors.UnavailableError),
        (503, "ServiceUnavailable", errors.UnavailableError),
        (504, "Timeout", errors.UnavailableError),
        (400, "BadRequest", errors.KubeApiError),
    ],
)
def test_each_status_maps_to_its_class(code: int, reason: str, expected: type[errors.KubeApiError]) -> None:
    error = errors.error_from_response(code, status(code, reason, "boom"), {}, request=None)
    assert type(error) is expected
    assert error.status == code and error.reason == reason
    assert "boom" in str(error)


def test_forbidden_names_the_missing_rule_and_the_fix() -> None:
    request = rq.watch_pods(namespace="training", resource_version="1", timeout_seconds=300, read_timeout=70)
    error = errors.error_from_response(403, FORBIDDEN_WATCH_PODS, {}, request=request)
    assert isinstance(error, errors.ForbiddenError)
    assert error.rule == rq.RbacRule("watch", "", "pods", "training")
    text = str(error)
    assert "verb 'watch'" in text and "resource 'pods'" in text and "namespace 'training'" in text
    assert 'verbs: ["watch"]' in text and RBAC_DOCS_URL in text
    assert "cannot watch resource" in text  # the API server's own words are kept


def test_forbidden_for_tfjobs_names_the_kubeflow_group() -> None:
    request = rq.create_tfjob({}, namespace="ns")
    error = errors.error_from_response(403, status(403, "Forbidden", "no"), {}, request=request)
    assert 'apiGroups: ["kubeflow.org"], resources: ["tfjobs"], verbs: ["create"]' in str(error)


def test_invalid_carries_the_api_causes() -> None:
    body = status(
        422,
        "Invalid",
        'TFJob.kubeflow.org "x" is invalid',
        causes=[{"reason": "FieldValueInvalid", "field": "spec.tfReplicaSpecs.Worker.restartPolicyy"}],
    )
    error = errors.error_from_response(422, body, {}, request=None)
    assert isinstance(error, errors.InvalidError)
    assert error.fields == ("spec.tfReplicaSpecs.Worker.restartPolicyy",)


def test_retry_after_header_wins_over_status_details() -> None:
    body = status(429, "TooManyRequests", "slow down", retryAfterSeconds=9)
    error = errors.error_from_response(429, body, {"Retry-After": "3"}, request=None)
    assert isinstance(error, errors.TooManyRequestsError) and error.retry_after == 3.0
    no_header = errors.error_from_response(429, body, {}, request=None)
    assert isinstance(no_header, errors.TooManyRequestsError) and no_header.retry_after == 9.0


def test_retry_after_on_503_is_kept() -> None:
    error = errors.error_from_response(503, b"", {"retry-after": "2"}, request=None)
    assert isinstance(error, errors.UnavailableError) and error.retry_after == 2.0


def test_non_status_bodies_are_cut_to_256_characters() -> None:
    error = errors.error_from_response(502, b"<html>" + b"x" * 5000, {}, request=None)
    assert isinstance(error.body, str) and len(error.body) == errors.MAX_RAW_BODY_CHARS


def test_status_bodies_are_kept_whole() -> None:
    error = errors.error_from_response(404, status(404, "NotFound", "m" * 1000), {}, request=None)
    assert isinstance(error.status_body, dict) and len(error.status_body["message"]) == 1000


def test_tfjob_not_served_message_is_exact() -> None:
    assert (
        str(errors.TFJobNotServedError())
        == "the cluster does not serve kubeflow.org/v1 TFJob — install the Kubeflow training operator v1"
    )


def test_watch_error_event_maps_by_its_code() -> None:
    gone = errors.error_from_watch_status({"kind": "Status", "code": 410, "reason": "Expired"}, request=None)
    assert isinstance(gone, errors.GoneError)


def test_errors_survive_pickling() -> None:
    error = errors.error_from_response(
        422, status(422, "Invalid", "bad", causes=[{"field": "a"}]), {}, request=None
    )
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is errors.InvalidError and copy.fields == ("a",) and str(copy) == str(error)


def test_parse_retry_after_accepts_http_dates_and_rejects_garbage() -> None:
    assert errors.parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert errors.parse_retry_after("soon") is None
    assert errors.parse_retry_after(None) is None


def test_strict_decoding_400_becomes_invalid_with_each_field() -> None:
    body = status(
        400,
        "BadRequest",
        'strict decoding error: unknown field "spec.tfReplicaSpecs.Worker.restartPolicyy", '
        'duplicate field "spec.runPolicy"',
    )
    error = errors.error_from_response(400, body, {}, request=None)
    assert isinstance(error, errors.InvalidError)
    assert error.fields == ("spec.tfReplicaSpecs.Worker.restartPolicyy", "spec.runPolicy")

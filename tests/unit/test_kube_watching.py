"""The list -> watch state machine, fed scripted responses and lines."""

from __future__ import annotations

import json

import pytest

from tfjob_provider.kube import errors
from tfjob_provider.kube import requests as rq
from tfjob_provider.kube.watching import Expired, LineBuffer, ListWatch, WatchEvent, WatchSettings


def make_watch(**settings: float) -> ListWatch:
    return ListWatch(
        list_request=lambda: rq.list_pods(namespace="ns", label_selector="a=b"),
        watch_request=lambda rv, timeout, read_timeout: rq.watch_pods(
            namespace="ns", resource_version=rv, timeout_seconds=timeout, read_timeout=read_timeout
        ),
        settings=WatchSettings(**settings),  # type: ignore[arg-type]
        rng=lambda: 0.5,
    )


def line(event_type: str, rv: str, name: str = "p") -> bytes:
    return json.dumps(
        {"type": event_type, "object": {"metadata": {"name": name, "resourceVersion": rv}}}
    ).encode()


BOOKMARK = b'{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"120"}}}'
ERROR_410 = b'{"type":"ERROR","object":{"kind":"Status","status":"Failure","reason":"Expired","code":410}}'
ERROR_500 = b'{"type":"ERROR","object":{"kind":"Status","message":"etcd fell over","code":500}}'
LIST_BODY = {
    "kind": "PodList",
    "metadata": {"resourceVersion": "100"},
    "items": [{"metadata": {"name": "a"}}],
}


def test_first_request_is_a_list_then_a_watch_from_the_lists_version() -> None:
    watch = make_watch()
    assert ("watch", "true") not in watch.next_request().query
    assert watch.on_list(LIST_BODY) == [{"metadata": {"name": "a"}}]
    request = watch.next_request()
    query = dict(request.query)
    assert query["resourceVersion"] == "100" and query["allowWatchBookmarks"] == "true"


def test_server_timeout_is_randomised_between_five_and_ten_minutes() -> None:
    for fraction, expected in ((0.0, 300), (0.5, 450), (0.999, 599)):
        assert WatchSettings().random_server_timeout(lambda f=fraction: f) == expected  # type: ignore[misc]


def test_every_event_moves_the_resource_version_including_bookmarks() -> None:
    watch = make_watch()
    watch.on_list(LIST_BODY)
    assert watch.on_line(line("ADDED", "101")) == WatchEvent(
        "ADDED", {"metadata": {"name": "p", "resourceVersion": "101"}}
    )
    assert watch.resource_version == "101"
    assert watch.on_line(BOOKMARK) is None
    assert watch.resource_version == "120"
    assert dict(watch.next_request().query)["resourceVersion"] == "120"


def test_410_error_event_means_relist() -> None:
    watch = make_watch()
    watch.on_list(LIST_BODY)
    assert isinstance(watch.on_line(ERROR_410), Expired)
    assert watch.needs_list
    assert ("watch", "true") not in watch.next_request().query


def test_http_410_when_opening_means_relist() -> None:
    watch = make_watch()
    watch.on_list(LIST_BODY)
    gone = errors.error_from_response(410, b"", {}, request=None)
    assert isinstance(watch.on_error(gone), Expired)
    assert watch.needs_list


def test_other_http_errors_are_raised() -> None:
    watch = make_watch()
    watch.on_list(LIST_BODY)
    with pytest.raises(errors.ForbiddenError):
        watch.on_error(errors.error_from_response(403, b"", {}, request=None))
    assert not watch.needs_list


def test_other_error_events_are_raised() -> None:
    watch = make_watch()
    watch.on_list(LIST_BODY)
    with pytest.raises(errors.UnavailableError, match="etcd fell over"):
        watch.on_line(ERROR_500)


def test_silence_and_normal_end_resume_from_the_same_version() -> None:
    watch = make_watch()
    watch.on_list(LIST_BODY)
    watch.on_line(line("MODIFIED", "105"))
    watch.on_silence()
    assert dict(watch.next_request().query)["resourceVersion"] == "105"
    watch.on_end()
    assert dict(watch.next_request().query)["resourceVersion"] == "105"


def test_inactivity_timeout_becomes_the_watch_read_timeout() -> None:
    watch = make_watch(inactivity_timeout=12.5)
    watch.on_list(LIST_BODY)
    assert watch.next_request().read_timeout == 12.5


def test_blank_and_unknown_lines_are_ignored_malformed_ones_raise() -> None:
    watch = make_watch()
    watch.on_list(LIST_BODY)
    assert watch.on_line(b"") is None
    assert watch.on_line(b'{"type":"SOMETHING","object":{}}') is None
    with pytest.raises(errors.KubeApiError, match="malformed"):
        watch.on_line(b"{not json")


def test_a_list_without_resource_version_is_an_error() -> None:
    with pytest.raises(errors.KubeApiError):
        make_watch().on_list({"items": []})


def test_line_buffer_reassembles_lines_across_chunks() -> None:
    buffer = LineBuffer()
    assert list(buffer.feed(b'{"a":')) == []
    assert list(buffer.feed(b'1}\n{"b"')) == [b'{"a":1}']
    assert list(buffer.feed(b":2}\n\n")) == [b'{"b":2}', b""]
    assert list(buffer.feed(b"tail")) == []
    assert list(buffer.flush()) == [b"tail"]


def test_line_buffer_refuses_unbounded_lines() -> None:
    buffer = LineBuffer(max_line_bytes=10)
    with pytest.raises(errors.KubeApiError):
        list(buffer.feed(b"x" * 11))

"""Operations driven by a scripted transport: retries, rate limit, status mapping and the watch loop.

The "transport" here is a few lines that answer each effect from a script; it is the same
contract the urllib3 and aiohttp transports implement, so no Kubernetes client is involved.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from typing import Any

import pytest

from tfjob_provider.kube import effects, errors, list_watch
from tfjob_provider.kube import operations as ops
from tfjob_provider.kube.ratelimit import RateLimit, TokenBucket
from tfjob_provider.kube.retry import RetryPolicy
from tfjob_provider.kube.tracking import JobSnapshot
from tfjob_provider.kube.watching import WatchSettings

pytestmark = pytest.mark.timeout(30)


#: Monotonic "time" of the scripted transport: every Sleep effect advances it, so outage budgets
#: are spent without waiting.
CLOCK = [0.0]


class StopScript(Exception):
    """The script ran out of lines: end the test's run."""


class Script:
    """Answers effects: ``responses`` per (method, path-suffix) in order, ``lines`` for NextLine."""

    def __init__(self) -> None:
        self.responses: dict[tuple[str, str], deque[effects.Response | Exception]] = {}
        self.lines: deque[Callable[[dict[str, str]], effects.StreamLine | effects.StreamClosed]] = deque()
        self.sent: list[Any] = []
        self.sleeps: list[float] = []
        self.open: dict[str, str] = {}  # stream name -> current key

    def on(self, method: str, suffix: str, *answers: effects.Response | Exception) -> None:
        self.responses.setdefault((method, suffix), deque()).extend(answers)

    def answer(self, request: Any) -> effects.Response:
        for (method, suffix), answers in self.responses.items():
            if request.method == method and request.path.endswith(suffix) and answers:
                first = answers[0]
                if len(answers) > 1:
                    answers.popleft()
                if isinstance(first, Exception):
                    raise first
                return first
        raise AssertionError(f"unscripted request {request.describe()} {request.query}")

    def perform(self, effect: effects.Effect) -> Any:
        self.sent.append(effect)
        if isinstance(effect, effects.Send):
            return self.answer(effect.request)
        if isinstance(effect, effects.Sleep):
            self.sleeps.append(effect.seconds)
            CLOCK[0] += effect.seconds
            return None
        if isinstance(effect, effects.OpenStream):
            response = self.answer(effect.request)
            if 200 <= response.status < 300:
                self.open[effect.key.split("#")[0]] = effect.key
            return response
        if isinstance(effect, effects.NextLine):
            if not self.lines:
                raise StopScript
            return self.lines.popleft()(self.open)
        if isinstance(effect, effects.CloseStream):
            return None
        raise AssertionError(effect)


def run(
    script: Script, operation: effects.Operation[Any], *, max_emits: int = 1000, max_effects: int = 500
) -> tuple[Any, list[Any]]:
    emitted: list[Any] = []
    try:
        effect = next(operation)
        while len(script.sent) < max_effects:
            if isinstance(effect, effects.Emit):
                emitted.append(effect.value)
                if len(emitted) >= max_emits:
                    operation.close()
                    return None, emitted
                effect = operation.send(None)
                continue
            try:
                result = script.perform(effect)
            except errors.KubeApiError as error:
                effect = operation.throw(error)
                continue
            effect = operation.send(result)
    except StopIteration as stop:
        return stop.value, emitted
    except StopScript:
        return None, emitted
    operation.close()
    return None, emitted


def session(**retry: Any) -> ops.Session:
    clock = [0.0]
    return ops.Session(
        retry=RetryPolicy(random=lambda: 0.0, clock=lambda: CLOCK[0], **retry),
        bucket=TokenBucket(RateLimit(rate=1000, burst=1000), clock=lambda: clock[0]),
        watch=WatchSettings(poll_interval=10.0),
    )


def ok(body: Any) -> effects.Response:
    return effects.Response(200, {}, json.dumps(body).encode())


def status(
    code: int, reason: str = "", message: str = "", headers: dict[str, str] | None = None
) -> effects.Response:
    body = {"kind": "Status", "code": code, "reason": reason, "message": message}
    return effects.Response(code, headers or {}, json.dumps(body).encode())


def line(stream: str, event: dict[str, Any]) -> Callable[[dict[str, str]], effects.StreamLine]:
    return lambda open_keys: effects.StreamLine(open_keys[stream], json.dumps(event).encode())


def closed(stream: str, **kwargs: Any) -> Callable[[dict[str, str]], effects.StreamClosed]:
    return lambda open_keys: effects.StreamClosed(open_keys[stream], **kwargs)


def tfjob_obj(rv: str, *, uid: str = "u1", conditions: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "mnist", "namespace": "ns", "uid": uid, "resourceVersion": rv},
        "status": {"conditions": conditions or []},
    }


def pod_obj(name: str, rv: str, phase: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": name,
            "resourceVersion": rv,
            "labels": {"training.kubeflow.org/job-name": "mnist"},
        },
        "status": {"phase": phase},
    }


# --- one-shot operations -------------------------------------------------------------------------


def test_transient_failures_are_retried_with_backoff_then_succeed() -> None:
    script = Script()
    script.on(
        "GET", "/tfjobs/mnist", status(503), errors.unavailable("reset", request=None), ok(tfjob_obj("1"))
    )
    result, _ = run(script, ops.get_tfjob(session(), "mnist", namespace="ns"))
    assert result["metadata"]["uid"] == "u1"
    assert script.sleeps == [1.0, 1.0]  # attempt 1 and 2 back-off with zero jitter and wait_min 1
    assert sum(isinstance(e, effects.Send) for e in script.sent) == 3


def test_429_waits_exactly_retry_after() -> None:
    script = Script()
    script.on("GET", "/tfjobs/mnist", status(429, headers={"Retry-After": "4"}), ok(tfjob_obj("1")))
    run(script, ops.get_tfjob(session(), "mnist", namespace="ns"))
    assert script.sleeps == [4.0]


def test_422_is_never_retried_and_carries_causes() -> None:
    script = Script()
    body = {"kind": "Status", "code": 422, "reason": "Invalid", "details": {"causes": [{"field": "spec.x"}]}}
    script.on("POST", "/tfjobs", effects.Response(422, {}, json.dumps(body).encode()))
    with pytest.raises(errors.InvalidError) as caught:
        run(script, ops.create_tfjob(session(), {"kind": "TFJob"}, namespace="ns"))
    assert caught.value.fields == ("spec.x",)
    assert sum(isinstance(e, effects.Send) for e in script.sent) == 1 and script.sleeps == []


def test_retries_stop_when_the_outage_budget_is_spent() -> None:
    script = Script()
    script.on("GET", "/tfjobs/mnist", status(500))
    with pytest.raises(errors.UnavailableError):
        run(script, ops.get_tfjob(session(budget=5.0), "mnist", namespace="ns"))
    assert script.sleeps == [1.0, 1.0, 2.0, 1.0]  # 1, 1, 2, then the 4 s step cut to the budget
    assert sum(isinstance(e, effects.Send) for e in script.sent) == 5


def test_retry_after_one_second_is_a_minimum_not_the_pace() -> None:
    script = Script()
    busy = status(429, headers={"Retry-After": "1"})
    script.on("GET", "/tfjobs/mnist", busy, busy, busy, busy, ok(tfjob_obj("1")))
    run(script, ops.get_tfjob(session(), "mnist", namespace="ns"))
    assert script.sleeps == [1.0, 1.0, 2.0, 4.0]


def test_the_error_is_raised_from_the_transport_exception() -> None:
    cause = RuntimeError("library error")
    script = Script()
    script.on(
        "GET",
        "/tfjobs/mnist",
        effects.Response(404, {}, json.dumps({"kind": "Status"}).encode(), cause=cause),
    )
    with pytest.raises(errors.NotFoundError) as caught:
        run(script, ops.get_tfjob(session(), "mnist", namespace="ns"))
    assert caught.value.__cause__ is cause


def test_every_request_takes_a_token_and_waits_when_the_bucket_is_empty() -> None:
    script = Script()
    script.on("GET", "/tfjobs/mnist", ok(tfjob_obj("1")))
    clock = [0.0]
    slow = ops.Session(bucket=TokenBucket(RateLimit(rate=2, burst=1), clock=lambda: clock[0]))
    for _ in range(3):
        run(script, ops.get_tfjob(slow, "mnist", namespace="ns"))
    assert script.sleeps == [0.5, 1.0]


def test_a_plain_404_on_tfjobs_means_the_type_is_not_served() -> None:
    script = Script()
    script.on("POST", "/tfjobs", effects.Response(404, {}, b"404 page not found"))
    with pytest.raises(errors.TFJobNotServedError, match="install the Kubeflow training operator v1"):
        run(script, ops.create_tfjob(session(), {}, namespace="ns"))


def test_check_served_reads_discovery() -> None:
    served = Script()
    served.on(
        "GET", "/apis/kubeflow.org/v1", ok({"resources": [{"name": "tfjobs"}, {"name": "tfjobs/status"}]})
    )
    assert run(served, ops.check_tfjob_served(session()))[0] is None
    other = Script()
    other.on("GET", "/apis/kubeflow.org/v1", ok({"resources": [{"name": "pytorchjobs"}]}))
    with pytest.raises(errors.TFJobNotServedError):
        run(other, ops.check_tfjob_served(session()))
    missing = Script()
    missing.on("GET", "/apis/kubeflow.org/v1", status(404, "NotFound"))
    with pytest.raises(errors.TFJobNotServedError):
        run(missing, ops.check_tfjob_served(session()))


def test_delete_of_a_missing_job_returns_false() -> None:
    script = Script()
    script.on("DELETE", "/tfjobs/mnist", status(404, "NotFound"))
    assert run(script, ops.delete_tfjob(session(), "mnist", namespace="ns"))[0] is False


def test_log_tail_is_cut_to_limit_bytes() -> None:
    script = Script()
    script.on("GET", "/log", effects.Response(200, {}, b"x" * 100))
    text, _ = run(script, ops.read_log_tail(session(), "p", namespace="ns", limit_bytes=10))
    assert text == "x" * 10


def test_events_for_several_objects_are_merged_and_sorted() -> None:
    script = Script()
    first = {"metadata": {"uid": "e1"}, "lastTimestamp": "2024-01-01T00:00:02Z"}
    second = {"metadata": {"uid": "e2"}, "lastTimestamp": "2024-01-01T00:00:01Z"}
    script.on("GET", "/events", ok({"items": [first]}), ok({"items": [second, first]}))
    events, _ = run(
        script, ops.list_events(session(), namespace="ns", involved_names=["mnist", "mnist-worker-0"])
    )
    assert [e["metadata"]["uid"] for e in events] == ["e2", "e1"]


def pods_page(names: list[str], *, rv: str, token: str = "") -> effects.Response:
    metadata = {"resourceVersion": rv, **({"continue": token} if token else {})}
    return ok({"metadata": metadata, "items": [pod_obj(name, rv, "Running") for name in names]})


def sent_lists(script: Script) -> list[dict[str, str]]:
    return [dict(e.request.query) for e in script.sent if isinstance(e, effects.Send)]


def test_lists_are_read_in_pages_and_joined() -> None:
    script = Script()
    script.on(
        "GET",
        "/pods",
        pods_page(["mnist-worker-0", "mnist-worker-1"], rv="40", token="t1"),
        pods_page(["mnist-worker-2"], rv="40"),
    )
    pods, _ = run(script, ops.list_job_pods(session(), "mnist", namespace="ns"))
    assert [pod["metadata"]["name"] for pod in pods] == ["mnist-worker-0", "mnist-worker-1", "mnist-worker-2"]
    queries = sent_lists(script)
    assert [q["limit"] for q in queries] == [str(ops.LIST_PAGE_SIZE)] * 2
    assert [q.get("continue") for q in queries] == [None, "t1"]
    assert all(q["labelSelector"] == "training.kubeflow.org/job-name=mnist" for q in queries)


def test_an_expired_continue_token_starts_the_list_over() -> None:
    script = Script()
    script.on(
        "GET",
        "/pods",
        pods_page(["mnist-worker-0"], rv="40", token="t1"),
        status(410, "Expired", "The provided continue parameter is too old"),
        pods_page(["mnist-worker-0"], rv="52", token="t2"),
        pods_page(["mnist-worker-1"], rv="52"),
    )
    pods, _ = run(script, ops.list_job_pods(session(), "mnist", namespace="ns"))
    assert [pod["metadata"]["name"] for pod in pods] == ["mnist-worker-0", "mnist-worker-1"]
    assert [q.get("continue") for q in sent_lists(script)] == [None, "t1", None, "t2"]


def test_a_410_on_the_first_page_is_not_hidden() -> None:
    script = Script()
    script.on("GET", "/pods", status(410, "Expired", "too old resource version"))
    with pytest.raises(errors.GoneError):
        run(script, ops.list_job_pods(session(), "mnist", namespace="ns"))


def test_a_paged_list_hands_the_watch_the_snapshot_version() -> None:
    script = Script()
    script.on("GET", "/tfjobs", ok({"metadata": {"resourceVersion": "10"}, "items": [tfjob_obj("9")]}))
    script.on(
        "GET",
        "/pods",
        pods_page(["mnist-worker-0"], rv="60", token="t1"),
        pods_page(["mnist-worker-1"], rv="60"),
    )
    _, snapshots = run(script, list_watch.watch_job(session(), "mnist", namespace="ns"))
    names = [[p["metadata"]["name"] for p in s.pods] for s in snapshots]
    assert names == [["mnist-worker-0", "mnist-worker-1"]]
    pod_watch = [r for r in watch_requests(script) if r.path.endswith("/pods")]
    assert [dict(r.query)["resourceVersion"] for r in pod_watch] == ["60"]


def test_a_fresh_read_lists_the_pods_before_it_gets_the_tfjob() -> None:
    script = Script()
    script.on("GET", "/pods", pods_page(["mnist-worker-0"], rv="40"))
    script.on("GET", "/tfjobs/mnist", ok(tfjob_obj("41")))
    (tfjob, pods), _ = run(script, ops.read_job(session(), "mnist", namespace="ns"))
    assert tfjob["metadata"]["resourceVersion"] == "41" and len(pods) == 1
    paths = [e.request.path for e in script.sent if isinstance(e, effects.Send)]
    assert [path.rsplit("/", 1)[-1] for path in paths] == ["pods", "mnist"]


def test_a_fresh_read_of_a_missing_tfjob_has_no_pods() -> None:
    script = Script()
    script.on("GET", "/pods", pods_page(["mnist-worker-0"], rv="40"))
    script.on("GET", "/tfjobs/mnist", status(404, "NotFound"))
    assert run(script, ops.read_job(session(), "mnist", namespace="ns"))[0] == (None, [])


def test_follow_log_emits_lines_until_the_stream_ends() -> None:
    script = Script()
    script.on("GET", "/log", effects.Response(200))
    script.lines.extend(
        [
            lambda keys: effects.StreamLine("log", b"step 1\r"),
            lambda keys: effects.StreamLine("log", b"step 2"),
            lambda keys: effects.StreamClosed("log"),
        ]
    )
    _, lines = run(script, ops.follow_log(session(), "p", namespace="ns"))
    assert lines == ["step 1", "step 2"]


# --- the watch loop ------------------------------------------------------------------------------


def watch_script() -> Script:
    script = Script()
    script.on("GET", "/tfjobs", ok({"metadata": {"resourceVersion": "10"}, "items": [tfjob_obj("9")]}))
    script.on(
        "GET",
        "/pods",
        ok({"metadata": {"resourceVersion": "10"}, "items": [pod_obj("mnist-worker-0", "8", "Pending")]}),
    )
    return script


def watch_requests(script: Script) -> list[Any]:
    return [e.request for e in script.sent if isinstance(e, effects.OpenStream)]


def test_watch_job_lists_then_watches_and_emits_on_every_change() -> None:
    script = watch_script()
    script.lines.extend(
        [
            line("pods", {"type": "MODIFIED", "object": pod_obj("mnist-worker-0", "11", "Running")}),
            line("pods", {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}}),
            line("pods", {"type": "MODIFIED", "object": pod_obj("mnist-worker-0", "16", "Succeeded")}),
        ]
    )
    _, snapshots = run(script, list_watch.watch_job(session(), "mnist", namespace="ns"))
    phases = [s.pods[0]["status"]["phase"] for s in snapshots]
    assert phases == ["Pending", "Running", "Succeeded"]
    opened = watch_requests(script)
    assert [dict(r.query)["resourceVersion"] for r in opened] == ["10", "10"]
    assert dict(opened[0].query)["fieldSelector"] == "metadata.name=mnist"
    assert dict(opened[1].query)["labelSelector"] == "training.kubeflow.org/job-name=mnist"


def test_410_event_relists_only_that_stream_and_resumes_from_the_new_version() -> None:
    script = watch_script()
    script.lines.extend(
        [
            line("pods", {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}),
            line("pods", {"type": "ADDED", "object": pod_obj("mnist-worker-1", "31", "Running")}),
        ]
    )
    script.on(
        "GET",
        "/pods",
        ok({"metadata": {"resourceVersion": "30"}, "items": [pod_obj("mnist-worker-0", "29", "Running")]}),
    )
    _, snapshots = run(script, list_watch.watch_job(session(), "mnist", namespace="ns"))
    pod_watches = [r for r in watch_requests(script) if r.path.endswith("/pods")]
    assert [dict(r.query)["resourceVersion"] for r in pod_watches] == ["10", "30"]
    assert [[p["metadata"]["name"] for p in s.pods] for s in snapshots] == [
        ["mnist-worker-0"],
        ["mnist-worker-0"],  # the relist changed the pod's phase
        ["mnist-worker-0", "mnist-worker-1"],
    ]


def test_http_410_on_open_relists() -> None:
    script = watch_script()
    script.on("GET", "/pods", ok({"metadata": {"resourceVersion": "10"}, "items": []}))
    # First watch of pods: 410; after the relist the second watch works.
    pods_list = script.responses[("GET", "/pods")]
    pods_list.clear()
    pods_list.extend(
        [
            ok({"metadata": {"resourceVersion": "10"}, "items": []}),
            status(410, "Expired"),
            ok({"metadata": {"resourceVersion": "40"}, "items": []}),
        ]
    )
    run(script, list_watch.watch_job(session(), "mnist", namespace="ns"))
    lists = [
        e.request for e in script.sent if isinstance(e, effects.Send) and e.request.path.endswith("/pods")
    ]
    assert len(lists) == 2


def test_silence_reconnects_from_the_last_version_without_relisting() -> None:
    script = watch_script()
    script.lines.extend(
        [
            line("pods", {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "77"}}}),
            closed("pods", silent=True),
        ]
    )
    run(script, list_watch.watch_job(session(), "mnist", namespace="ns"))
    pod_watches = [r for r in watch_requests(script) if r.path.endswith("/pods")]
    assert [dict(r.query)["resourceVersion"] for r in pod_watches] == ["10", "77"]
    assert sum(isinstance(e, effects.Send) for e in script.sent) == 2  # only the two initial lists


def test_a_broken_stream_reconnects_after_backoff() -> None:
    script = watch_script()
    script.lines.append(closed("tfjobs", error=errors.unavailable("reset", request=None)))
    run(script, list_watch.watch_job(session(), "mnist", namespace="ns"))
    assert 1.0 in script.sleeps
    assert len([r for r in watch_requests(script) if r.path.endswith("/tfjobs")]) == 2


def test_a_non_410_error_event_ends_the_watch_when_not_retryable() -> None:
    script = watch_script()
    script.lines.append(
        line(
            "tfjobs", {"type": "ERROR", "object": {"kind": "Status", "code": 400, "message": "bad selector"}}
        )
    )
    with pytest.raises(errors.KubeApiError, match="bad selector"):
        run(script, list_watch.watch_job(session(), "mnist", namespace="ns"))


def test_tfjob_deleted_is_reported() -> None:
    script = watch_script()
    script.lines.append(line("tfjobs", {"type": "DELETED", "object": tfjob_obj("12")}))
    _, snapshots = run(script, list_watch.watch_job(session(), "mnist", namespace="ns"))
    assert snapshots[-1].deleted and snapshots[-1].tfjob is None


def test_forbidden_watch_falls_back_to_polling() -> None:
    script = watch_script()
    forbidden = status(403, "Forbidden", "cannot watch")
    script.responses[("GET", "/tfjobs")].appendleft(forbidden)
    script.responses[("GET", "/tfjobs")].rotate(-1)  # list ok, then watch forbidden
    script.on("GET", "/tfjobs/mnist", ok(tfjob_obj("50")))
    _, snapshots = run(script, list_watch.watch_job(session(), "mnist", namespace="ns"), max_emits=3)
    assert len(snapshots) == 2 or len(snapshots) == 3
    assert all(isinstance(s, JobSnapshot) for s in snapshots)
    gets = [
        e.request
        for e in script.sent
        if isinstance(e, effects.Send) and e.request.path.endswith("/tfjobs/mnist")
    ]
    assert gets, "polling must GET the TFJob"
    assert 10.0 in script.sleeps


def test_a_watch_rides_out_failures_for_the_outage_budget_however_many_then_raises() -> None:
    script = watch_script()
    list_ok = ok({"metadata": {"resourceVersion": "10"}, "items": []})
    script.responses[("GET", "/pods")] = deque([list_ok, list_ok, status(503, "ServiceUnavailable")])
    script.lines.append(closed("pods", error=errors.unavailable("reset", request=None)))
    with pytest.raises(errors.UnavailableError):
        run(script, list_watch.watch_job(session(budget=60.0), "mnist", namespace="ns"))
    assert len(script.sleeps) > 10  # not a count of failures: the time they took
    assert sum(script.sleeps) == pytest.approx(60.0)


def test_a_stream_reopened_ends_the_outage_for_a_break_queued_meanwhile() -> None:
    script = watch_script()
    listed = ok({"metadata": {"resourceVersion": "10"}, "items": [tfjob_obj("9")]})
    unavailable = status(503, "ServiceUnavailable")
    script.responses[("GET", "/tfjobs")] = deque([listed, listed, unavailable, unavailable, listed])
    reset = errors.unavailable("reset", request=None)
    script.lines.extend([closed("tfjobs", error=reset), closed("pods", error=reset)])
    run(script, list_watch.watch_job(session(), "mnist", namespace="ns"))
    assert script.sleeps == [1.0, 1.0, 2.0, 1.0]  # the pods' break starts a new run: 1 s, not 4 s


def test_a_line_received_ends_the_outage() -> None:
    def reset(keys: dict[str, str]) -> effects.StreamClosed:
        return effects.StreamClosed(keys["pods"], error=errors.unavailable("reset", request=None))

    bookmark = line("pods", {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "77"}}})
    script = watch_script()
    script.lines = type(script.lines)([reset, reset, reset, bookmark] * 10)
    run(script, list_watch.watch_job(session(budget=5.0), "mnist", namespace="ns"))  # 40 s of flapping
    assert sum(script.sleeps) > 5.0

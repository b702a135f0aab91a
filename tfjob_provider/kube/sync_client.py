"""The synchronous transport for workers: :class:`SyncTFJobClient` performs :mod:`.effects` with the
``kubernetes`` client, one reader thread per open stream.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, ReadTimeoutError

from tfjob_provider.kube import effects, list_watch
from tfjob_provider.kube import operations as ops
from tfjob_provider.kube.errors import KubeApiError, unavailable
from tfjob_provider.kube.requests import ApiRequest
from tfjob_provider.kube.tracking import JobSnapshot
from tfjob_provider.kube.watching import LineBuffer

T = TypeVar("T")

#: Seconds to wait for a TCP/TLS connection to the API server.
CONNECT_TIMEOUT = 10.0
#: Seconds without a byte before an ordinary (non-stream) request is abandoned and retried.
READ_TIMEOUT = 60.0
_CHUNK = 64 * 1024


class _SyncStreams:
    """The open streams of one running operation and the queue their reader threads fill."""

    def __init__(self) -> None:
        self.items: queue.Queue[effects.StreamLine | effects.StreamClosed] = queue.Queue()
        self._responses: dict[str, urllib3.BaseHTTPResponse] = {}
        self._closing: set[str] = set()
        self._lock = threading.Lock()

    def start(self, key: str, response: urllib3.BaseHTTPResponse, request: ApiRequest) -> None:
        with self._lock:
            self._responses[key] = response
        reader = threading.Thread(
            target=self._read, args=(key, response, request), name=f"tfjob-watch-{key}", daemon=True
        )
        reader.start()

    def _read(self, key: str, response: urllib3.BaseHTTPResponse, request: ApiRequest) -> None:
        lines = LineBuffer()
        try:
            while True:
                chunk = response.read1(_CHUNK)
                if not chunk:
                    break
                for line in lines.feed(chunk):
                    self.items.put(effects.StreamLine(key, line))
            for line in lines.flush():
                self.items.put(effects.StreamLine(key, line))
            self.items.put(effects.StreamClosed(key))
        except ReadTimeoutError:
            self.items.put(effects.StreamClosed(key, silent=True))
        except (HTTPError, OSError, ValueError, AttributeError) as exc:
            # AttributeError: http.client drops its file object when another thread closes it.
            if key not in self._closing:
                error = unavailable(f"stream broken: {exc}", request=request)
                error.__cause__ = exc
                self.items.put(effects.StreamClosed(key, error=error))
        except KubeApiError as error:
            self.items.put(effects.StreamClosed(key, error=error))
        finally:
            _discard(response)

    def next(self) -> effects.StreamLine | effects.StreamClosed:
        while True:
            item = self.items.get()
            if item.key not in self._closing:
                return item

    def close(self, key: str) -> None:
        with self._lock:
            self._closing.add(key)
            response = self._responses.pop(key, None)
        if response is not None:
            _shutdown(response)

    def close_all(self) -> None:
        for key in list(self._responses):
            self.close(key)


def _shutdown(response: urllib3.BaseHTTPResponse) -> None:
    """Wake a reader blocked in ``recv`` (shutdown), then drop the connection (never pooled again)."""
    with contextlib.suppress(ValueError, RuntimeError, OSError):
        response.shutdown()
    _discard(response)


def _discard(response: urllib3.BaseHTTPResponse) -> None:
    with contextlib.suppress(HTTPError, OSError):
        response.close()


class SyncTFJobClient:
    """TFJob operations over one ``kubernetes.client.ApiClient``.

    :param api_client: the client to use for every request; built by the caller from a *private*
        ``Configuration`` and never replaced.
    :param session: shared retry policy, token bucket and watch settings (one per connection).
    """

    def __init__(self, api_client: ApiClient, *, session: ops.Session | None = None) -> None:
        self.api_client = api_client
        self.session = session or ops.Session()

    # --- the transport: how effects are performed --------------------------------------------------

    def _timeout(self, request: ApiRequest) -> tuple[float, float | None]:
        if request.stream:
            return (CONNECT_TIMEOUT, request.read_timeout)
        return (CONNECT_TIMEOUT, request.read_timeout or READ_TIMEOUT)

    def _request(self, request: ApiRequest) -> urllib3.BaseHTTPResponse:
        response: urllib3.BaseHTTPResponse = self.api_client.call_api(
            request.path,
            request.method,
            query_params=list(request.query),
            header_params=dict(request.headers),
            body=dict(request.body) if request.body is not None else None,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=self._timeout(request),
        )
        return response

    def _send(self, request: ApiRequest, streams: _SyncStreams | None, key: str | None) -> effects.Response:
        try:
            raw = self._request(request)
        except ApiException as exc:
            if not exc.status:  # the client's wrapper for TLS errors
                raise unavailable(str(exc.reason), request=request) from exc
            body = exc.body if isinstance(exc.body, bytes) else str(exc.body or "").encode()
            headers: Mapping[str, str] = dict(exc.headers or {})
            return effects.Response(exc.status, headers, body, cause=exc)
        except (HTTPError, OSError) as exc:
            raise unavailable(f"{type(exc).__name__}: {exc}", request=request) from exc
        if streams is not None and key is not None:
            streams.start(key, raw, request)
            return effects.Response(raw.status, dict(raw.headers))
        try:
            body = raw.read()
        except (HTTPError, OSError) as exc:
            raise unavailable(f"reading the response failed: {exc}", request=request) from exc
        finally:
            raw.release_conn()
        return effects.Response(raw.status, dict(raw.headers), body)

    def _perform(self, effect: effects.Effect, streams: _SyncStreams) -> Any:
        if isinstance(effect, effects.Send):
            return self._send(effect.request, None, None)
        if isinstance(effect, effects.Sleep):
            time.sleep(effect.seconds)
            return None
        if isinstance(effect, effects.OpenStream):
            return self._send(effect.request, streams, effect.key)
        if isinstance(effect, effects.NextLine):
            return streams.next()
        if isinstance(effect, effects.CloseStream):
            streams.close(effect.key)
            return None
        raise TypeError(f"unknown effect {effect!r}")

    def _drive(self, operation: effects.Operation[Any], result: list[Any] | None = None) -> Iterator[Any]:
        """Run ``operation``, yielding the values it emits; its return value is appended to ``result``."""
        streams = _SyncStreams()
        try:
            effect = next(operation)
            while True:
                if isinstance(effect, effects.Emit):
                    yield effect.value
                    effect = operation.send(None)
                    continue
                try:
                    outcome = self._perform(effect, streams)
                except KubeApiError as error:
                    effect = operation.throw(error)
                    continue
                effect = operation.send(outcome)
        except StopIteration as stop:
            if result is not None:
                result.append(stop.value)
        finally:
            operation.close()
            streams.close_all()

    def _run(self, operation: effects.Operation[T]) -> T:
        result: list[T] = []
        for _ in self._drive(operation, result):
            pass
        return result[0]

    # --- public API -----------------------------------------------------------------------------

    def check_tfjob_served(self) -> None:
        """Raise :class:`~.errors.TFJobNotServedError` unless the cluster serves kubeflow.org/v1 tfjobs."""
        self._run(ops.check_tfjob_served(self.session))

    def create_tfjob(
        self, manifest: Mapping[str, Any], *, namespace: str, dry_run: bool = False
    ) -> dict[str, Any]:
        """Create a TFJob (``fieldValidation=Strict``) and return the stored object."""
        return self._run(ops.create_tfjob(self.session, manifest, namespace=namespace, dry_run=dry_run))

    def get_tfjob(self, name: str, *, namespace: str) -> dict[str, Any]:
        return self._run(ops.get_tfjob(self.session, name, namespace=namespace))

    def delete_tfjob(
        self,
        name: str,
        *,
        namespace: str,
        propagation: str = "Foreground",
        grace_period_seconds: int | None = None,
    ) -> bool:
        """Delete a TFJob; ``False`` when it was already gone."""
        return self._run(
            ops.delete_tfjob(
                self.session,
                name,
                namespace=namespace,
                propagation=propagation,
                grace_period_seconds=grace_period_seconds,
            )
        )

    def list_job_pods(self, name: str, *, namespace: str) -> list[dict[str, Any]]:
        """Pods labelled ``training.kubeflow.org/job-name=<name>``, sorted by name."""
        return self._run(ops.list_job_pods(self.session, name, namespace=namespace))

    def read_log_tail(
        self,
        pod: str,
        *,
        namespace: str,
        container: str = "tensorflow",
        tail_lines: int = 100,
        limit_bytes: int = 65536,
        previous: bool = False,
    ) -> str:
        """The last lines of a container's log, bounded by the server (never the whole log)."""
        return self._run(
            ops.read_log_tail(
                self.session,
                pod,
                namespace=namespace,
                container=container,
                tail_lines=tail_lines,
                limit_bytes=limit_bytes,
                previous=previous,
            )
        )

    def follow_log(
        self,
        pod: str,
        *,
        namespace: str,
        container: str = "tensorflow",
        since_seconds: int | None = None,
        stopping: threading.Event | None = None,
    ) -> Iterator[str]:
        """Lines of a followed log, as they are written, until the container ends (or ``stopping``
        is set: another thread can end the stream, see :func:`.effects.stoppable`)."""
        follow = ops.follow_log(
            self.session, pod, namespace=namespace, container=container, since_seconds=since_seconds
        )
        return self._drive(follow if stopping is None else effects.stoppable(follow, stopping))

    def list_events(
        self, *, namespace: str, involved_names: list[str] | tuple[str, ...]
    ) -> list[dict[str, Any]]:
        """core/v1 events about the job and its pods, oldest first."""
        return self._run(ops.list_events(self.session, namespace=namespace, involved_names=involved_names))

    def watch_job(
        self,
        name: str,
        *,
        namespace: str,
        stopping: threading.Event | None = None,
        watch: Callable[..., effects.Operation[None]] = list_watch.watch_job,
    ) -> Iterator[JobSnapshot]:
        """Snapshots of the TFJob and its pods: after the initial lists, then after every change.

        Runs until the consumer stops iterating (closing the generator closes the streams), until
        ``stopping`` is set (from any thread), or until an error that retries and reconnects could
        not ride out is raised.  ``watch``: the watch operation (a JobSet's: ``JobKind.watch``).
        """
        operation = watch(self.session, name, namespace=namespace)
        return self._drive(operation if stopping is None else effects.stoppable(operation, stopping))

    def run(self, operation: effects.Operation[T]) -> T:
        """Run any :mod:`.operations` generator on this transport."""
        return self._run(operation)

    def close(self) -> None:
        """Release the connection pool."""
        self.api_client.close()


__all__ = ["CONNECT_TIMEOUT", "READ_TIMEOUT", "SyncTFJobClient"]

"""The asyncio transport for the triggerer: :class:`AsyncTFJobClient` performs :mod:`.effects` with
``kubernetes_asyncio``, one task per open stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import aiohttp

from tfjob_provider.kube import effects
from tfjob_provider.kube import operations as ops
from tfjob_provider.kube.errors import KubeApiError, unavailable
from tfjob_provider.kube.lean_import import load_transport
from tfjob_provider.kube.requests import ApiRequest
from tfjob_provider.kube.watching import LineBuffer

load_transport()  # before any kubernetes_asyncio import: skips its ~88 MB of generated code

from kubernetes_asyncio.client.api_client import ApiClient  # noqa: E402
from kubernetes_asyncio.client.exceptions import ApiException  # noqa: E402

T = TypeVar("T")

#: Seconds to wait for a TCP/TLS connection to the API server.
CONNECT_TIMEOUT = 10.0
#: Seconds without a byte before an ordinary (non-stream) request is abandoned and retried.
READ_TIMEOUT = 60.0
_CHUNK = 64 * 1024


class _AsyncStreams:
    """The open streams of one running operation and the queue their reader tasks fill."""

    def __init__(self) -> None:
        self.items: asyncio.Queue[effects.StreamLine | effects.StreamClosed] = asyncio.Queue()
        self._readers: dict[str, tuple[aiohttp.ClientResponse, asyncio.Task[None]]] = {}
        self._closed: set[str] = set()

    def start(self, key: str, response: aiohttp.ClientResponse, request: ApiRequest) -> None:
        task = asyncio.get_running_loop().create_task(
            self._read(key, response, request), name=f"tfjob-watch-{key}"
        )
        self._readers[key] = (response, task)

    async def _read(self, key: str, response: aiohttp.ClientResponse, request: ApiRequest) -> None:
        lines = LineBuffer()
        try:
            while True:
                chunk = await response.content.readany()
                if not chunk:
                    break
                for line in lines.feed(chunk):
                    self.items.put_nowait(effects.StreamLine(key, line))
            for line in lines.flush():
                self.items.put_nowait(effects.StreamLine(key, line))
            self.items.put_nowait(effects.StreamClosed(key))
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError):
            self.items.put_nowait(effects.StreamClosed(key, silent=True))
        except (aiohttp.ClientError, OSError) as exc:
            error = unavailable(f"stream broken: {exc}", request=request)
            error.__cause__ = exc
            self.items.put_nowait(effects.StreamClosed(key, error=error))
        except KubeApiError as error:
            self.items.put_nowait(effects.StreamClosed(key, error=error))
        finally:
            response.close()

    async def next(self) -> effects.StreamLine | effects.StreamClosed:
        while True:
            item = await self.items.get()
            if item.key not in self._closed:
                return item

    async def close(self, key: str) -> None:
        self._closed.add(key)
        reader = self._readers.pop(key, None)
        if reader is None:
            return
        response, task = reader
        task.cancel()
        response.close()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    async def close_all(self) -> None:
        for key in list(self._readers):
            await self.close(key)


class AsyncTFJobClient:
    """TFJob operations over one ``kubernetes_asyncio.client.ApiClient``; same methods as
    :class:`~.sync_client.SyncTFJobClient`, awaitable or async-iterable.

    :param api_client: the client for every request (built from a private ``Configuration``).
    :param session: shared retry policy, token bucket and watch settings (one per connection).
    """

    def __init__(self, api_client: ApiClient, *, session: ops.Session | None = None) -> None:
        self.api_client = api_client
        self.session = session or ops.Session()

    # --- the transport --------------------------------------------------------------------------

    def _timeout(self, request: ApiRequest) -> aiohttp.ClientTimeout:
        read = request.read_timeout if request.stream else (request.read_timeout or READ_TIMEOUT)
        return aiohttp.ClientTimeout(
            total=None, connect=CONNECT_TIMEOUT, sock_connect=CONNECT_TIMEOUT, sock_read=read
        )

    async def _send(
        self, request: ApiRequest, streams: _AsyncStreams | None, key: str | None
    ) -> effects.Response:
        try:
            raw: aiohttp.ClientResponse = await self.api_client.call_api(
                request.path,
                request.method,
                query_params=list(request.query),
                header_params=dict(request.headers),
                body=dict(request.body) if request.body is not None else None,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=self._timeout(request),
            )
        except ApiException as exc:
            if not exc.status:
                raise unavailable(str(exc.reason), request=request) from exc
            body = exc.body if isinstance(exc.body, bytes) else str(exc.body or "").encode()
            return effects.Response(exc.status, dict(exc.headers or {}), body, cause=exc)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise unavailable(f"{type(exc).__name__}: {exc}", request=request) from exc
        headers = dict(raw.headers)
        if streams is not None and key is not None and 200 <= raw.status < 300:
            streams.start(key, raw, request)
            return effects.Response(raw.status, headers)
        try:
            body = await raw.read()
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise unavailable(f"reading the response failed: {exc}", request=request) from exc
        finally:
            raw.release()
        return effects.Response(raw.status, headers, body)

    async def _perform(self, effect: effects.Effect, streams: _AsyncStreams) -> Any:
        if isinstance(effect, effects.Send):
            return await self._send(effect.request, None, None)
        if isinstance(effect, effects.Sleep):
            await asyncio.sleep(effect.seconds)
            return None
        if isinstance(effect, effects.OpenStream):
            return await self._send(effect.request, streams, effect.key)
        if isinstance(effect, effects.NextLine):
            return await streams.next()
        if isinstance(effect, effects.CloseStream):
            await streams.close(effect.key)
            return None
        raise TypeError(f"unknown effect {effect!r}")

    async def _drive(
        self, operation: effects.Operation[Any], result: list[Any] | None = None
    ) -> AsyncIterator[Any]:
        """Run ``operation``, yielding what it emits; its return value is appended to ``result``."""
        streams = _AsyncStreams()
        try:
            effect = next(operation)
            while True:
                if isinstance(effect, effects.Emit):
                    yield effect.value
                    effect = operation.send(None)
                    continue
                try:
                    outcome = await self._perform(effect, streams)
                except KubeApiError as error:
                    effect = operation.throw(error)
                    continue
                effect = operation.send(outcome)
        except StopIteration as stop:
            if result is not None:
                result.append(stop.value)
        finally:
            operation.close()
            await streams.close_all()

    async def _run(self, operation: effects.Operation[T]) -> T:
        result: list[T] = []
        async for _ in self._drive(operation, result):
            pass
        return result[0]

    # --- public API -----------------------------------------------------------------------------

    async def get_tfjob(self, name: str, *, namespace: str) -> dict[str, Any]:
        return await self._run(ops.get_tfjob(self.session, name, namespace=namespace))

    async def delete_tfjob(
        self,
        name: str,
        *,
        namespace: str,
        propagation: str = "Foreground",
        grace_period_seconds: int | None = None,
    ) -> bool:
        """Delete a TFJob; ``False`` when it was already gone."""
        return await self._run(
            ops.delete_tfjob(
                self.session,
                name,
                namespace=namespace,
                propagation=propagation,
                grace_period_seconds=grace_period_seconds,
            )
        )

    async def run(self, operation: effects.Operation[T]) -> T:
        """Run any :mod:`.operations` generator on this transport.

        The triggerer needs few calls of its own (read, get, delete) besides the shared watch, so
        this transport names only those; anything else is ``run(ops.<operation>(client.session, …))``.
        """
        return await self._run(operation)

    async def close(self) -> None:
        """Close the aiohttp session."""
        await self.api_client.close()


__all__ = ["CONNECT_TIMEOUT", "READ_TIMEOUT", "AsyncTFJobClient"]

"""Close the hook's shared async clients at the end of a test's (or benchmark's) event loop.

In a triggerer each shared client is closed by the last ``async_client_lease`` that holds it; a
test that calls ``TFJobHook.get_async_client()`` directly holds no lease, so it closes what it
opened here before its event loop ends (else aiohttp warns about an unclosed session).  The
provider itself never needs this, so it lives with the tests.
"""

from __future__ import annotations

import asyncio

from tfjob_provider.hooks import tfjob as hook_module


async def close_async_clients() -> None:
    """Close every shared async client of the running loop and forget its leases."""
    loop = asyncio.get_running_loop()
    hook_module._async_leases.pop(loop, None)
    clients = hook_module._async_clients.pop(loop, {})
    for async_client in clients.values():
        await async_client.close()

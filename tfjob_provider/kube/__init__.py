"""Kubernetes access: a sans-I/O core (:mod:`.effects`, :mod:`.operations`, :mod:`.list_watch` and
the modules they use) and two transports (:mod:`.sync_client`, :mod:`.async_client`);
docs/reference/client.md.
"""

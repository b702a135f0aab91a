"""Kubernetes access for the provider: a sans-I/O core plus two thin transports.

The pure modules (:mod:`.requests`, :mod:`.errors`, :mod:`.retry`, :mod:`.ratelimit`,
:mod:`.watching`, :mod:`.tracking`, :mod:`.operations`) decide *what* to send and *what it
means*; :mod:`.sync_client` and :mod:`.async_client` only move bytes and sleep.  Nothing is
imported here so that ``import tfjob_provider.kube.tracking`` stays free of any HTTP client.
See ``docs/client.md`` for the design.
"""

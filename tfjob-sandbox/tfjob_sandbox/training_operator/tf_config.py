"""``tf_config(...)``: ``TF_CONFIG`` byte for byte as the operator writes it, or with loopback endpoints."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tfjob_sandbox.api import wire
from tfjob_sandbox.training_operator.tfjob_spec import general_name, replica_count, replica_port

#: ``replica type (lower case) -> one loopback port per index``.
LoopbackPorts = Mapping[str, Sequence[int]]


def go_json(value: Any) -> str:
    """Encode like Go's ``json.Marshal``: compact, HTML-sensitive characters escaped.

    Map key order is the caller's business (pass dicts already in Go's order).
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def is_distributed(replica_specs: Mapping[str, Any]) -> bool:
    """The operator's ``isDistributed``: replicas summed over the five known types ≠ 1."""
    total = 0
    for replica_type in wire.REPLICA_TYPES:
        replica = replica_specs.get(replica_type)
        if isinstance(replica, Mapping):
            total += replica_count(replica)
    return total != 1


def cluster_spec(
    *,
    job_name: str,
    namespace: str,
    replica_specs: Mapping[str, Any],
    cluster_domain: str = "",
    loopback_ports: LoopbackPorts | None = None,
) -> dict[str, list[str]]:
    """``{"<type lower>": ["<host>:<port>", ...]}`` for every replica type in the (defaulted) spec."""
    cluster: dict[str, list[str]] = {}
    for replica_type, replica in replica_specs.items():
        if not isinstance(replica, Mapping):
            continue
        lower = replica_type.lower()
        port = replica_port(replica)
        endpoints: list[str] = []
        for index in range(replica_count(replica)):
            if loopback_ports is not None:
                endpoints.append(f"127.0.0.1:{loopback_ports[lower][index]}")
                continue
            host = f"{general_name(job_name, replica_type, index)}.{namespace}.svc"
            if cluster_domain:
                host += f".{cluster_domain}"
            endpoints.append(f"{host}:{port}")
        cluster[lower] = endpoints
    return cluster


def tf_config(
    *,
    job_name: str,
    namespace: str,
    replica_specs: Mapping[str, Any],
    replica_type: str,
    index: int,
    dynamic_worker: bool = False,
    cluster_domain: str = "",
    loopback_ports: LoopbackPorts | None = None,
) -> str:
    """The ``TF_CONFIG`` value for one replica (``genTFConfigJSONStr``)."""
    cluster = cluster_spec(
        job_name=job_name,
        namespace=namespace,
        replica_specs=replica_specs,
        cluster_domain=cluster_domain,
        loopback_ports=loopback_ports,
    )
    lower = replica_type.lower()
    task = {"type": lower, "index": index}
    if dynamic_worker:
        return go_json({"cluster": _sparse_cluster(cluster, lower, index), "task": task})
    ordered_cluster = {key: cluster[key] for key in sorted(cluster)}
    return go_json({"cluster": ordered_cluster, "task": task, "environment": "cloud"})


def _sparse_cluster(cluster: Mapping[str, list[str]], lower: str, index: int) -> dict[str, Any]:
    """``SparseClusterSpec``: a worker sees itself and every PS; a PS sees only itself."""
    workers: dict[str, str] = {}
    ps: list[str] | None = []
    own = cluster.get(lower, [])
    # A pod in a slot the spec no longer covers (R15 allocates slot 0 even for replicas: 0) has no
    # address of its own; the Go code would index past the end here, the emulation leaves it out.
    own_address = own[index] if 0 <= index < len(own) else None
    if lower == "ps":
        ps = [own_address] if own_address is not None else []
    elif lower == "worker":
        # A Go nil slice: a job without PS encodes "ps":null for its workers.
        ps = list(cluster["ps"]) if "ps" in cluster else None
        if own_address is not None:
            workers[str(index)] = own_address
    return {"worker": workers, "ps": ps}

"""OpenLineage dataset naming for a URI: ``s3://bucket/key`` → namespace ``s3://bucket``, name ``key``.

Follows the OpenLineage naming spec (https://openlineage.io/docs/spec/naming): the namespace is
the datasource (``scheme://authority``), the name the dataset within it.  User info
(``user:password@``), query and fragment are dropped, so a credential in a URI never reaches an
event.
"""

from __future__ import annotations

from typing import Final, NamedTuple
from urllib.parse import urlsplit

#: Object stores: the name is the object key, without its leading slash.
_OBJECT_STORES: Final = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs"}
#: Azure storage: the namespace keeps ``container@account.host``, the name is the path.
_AZURE: Final = frozenset({"abfss", "abfs", "wasbs", "wasb"})
#: Databases whose asset URIs are ``scheme://host:port/db/schema/table``: the name is dotted.
_TABLES: Final = frozenset({"postgres", "postgresql", "mysql", "trino", "hive", "redshift"})


class DatasetName(NamedTuple):
    namespace: str
    name: str


def _authority(host: str | None, port: int | None) -> str:
    host = host or ""
    return f"{host}:{port}" if port is not None else host


def dataset_name(uri: str) -> DatasetName | None:
    """The OpenLineage namespace and name of ``uri``; None for a plain name (no ``scheme://``)
    or a URI this cannot read."""
    try:
        parts = urlsplit(uri.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not scheme or "://" not in uri:
        return None
    path = parts.path
    if scheme == "file":
        host = _authority(parts.hostname, port)
        return DatasetName("file" if host in ("", "localhost") else f"file://{host}", path or "/")
    authority = _authority(parts.hostname, port)
    if scheme in _OBJECT_STORES:
        return DatasetName(f"{_OBJECT_STORES[scheme]}://{authority}", path.lstrip("/") or "/")
    if scheme in _AZURE:
        owner = parts.username  # abfss://container@account.dfs.core.windows.net/path
        where = f"{owner}@{authority}" if owner and not parts.password else authority
        return DatasetName(f"{scheme}://{where}", path.lstrip("/") or "/")
    if scheme == "hdfs":
        return DatasetName(f"hdfs://{authority}", path or "/")
    if scheme in _TABLES:
        dotted = ".".join(part for part in path.split("/") if part)
        return DatasetName(f"{'postgres' if scheme == 'postgresql' else scheme}://{authority}", dotted or "/")
    if scheme == "bigquery":
        dotted = ".".join(part for part in [authority, *path.split("/")] if part)
        return DatasetName("bigquery", dotted)
    return DatasetName(f"{scheme}://{authority}", path.lstrip("/") or "/")


__all__ = ["DatasetName", "dataset_name"]

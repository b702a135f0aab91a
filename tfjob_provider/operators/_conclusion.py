"""Moved to :mod:`tfjob_provider.concluding` (the sensor shares it, and may not import ``operators``).

Kept so that code written against the first location keeps importing.
"""

from __future__ import annotations

from tfjob_provider.concluding import (
    XCOM_FAILURE,
    delete_if_ours,
    failure_exception,
    failure_summary,
    gather_failure_report,
)

__all__ = ["XCOM_FAILURE", "delete_if_ours", "failure_exception", "failure_summary", "gather_failure_report"]

"""Parameter coercion shared by the operator and the sensor: durations (:func:`seconds`) and rules
(:func:`coerce_rules`), raising ``ValueError`` naming the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final

from tfjob_provider.clipping import shown
from tfjob_provider.policy import Rules

#: How much later than the trigger's own deadline Airflow's deferral timeout fires: the trigger
#: needs a moment to re-read the state and report; Airflow's timeout is only the safety net.
DEFERRAL_TIMEOUT_MARGIN: Final = timedelta(seconds=60)


def seconds(value: float | timedelta | None, *, field: str) -> float | None:
    """A non-negative number of seconds from a number or a timedelta; ValueError naming ``field``."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(
            f"{field} must be a non-negative number of seconds or a timedelta, got {shown(value)}"
        )
    return float(value)


def coerce_rules(rules: Rules | Mapping[str, Any] | None) -> Rules:
    """Rules from a Rules, a dict (``Rules.from_dict``) or None; ValueError naming the field."""
    if rules is None:
        return Rules()
    if isinstance(rules, Rules):
        return rules
    return Rules.from_dict(rules)


__all__ = ["DEFERRAL_TIMEOUT_MARGIN", "coerce_rules", "seconds"]

""":class:`Rules`: a team's failure and success policy over the operator's defaults; frozen, with a
JSON round trip, validated eagerly.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Final, Literal, get_args

from tfjob_provider.clipping import shown

SuccessPolicy = Literal["chief", "worker0", "all_workers"]
SUCCESS_POLICIES: Final[tuple[str, ...]] = get_args(SuccessPolicy)

#: Container exit codes are 0-255 on Linux (128 + N for "killed by signal N").
_EXIT_CODE_RANGE: Final = range(0, 256)


def _fail(field_name: str, problem: str, fix: str) -> ValueError:
    return ValueError(f"Rules.{field_name} {problem}; {fix}")


def _exit_codes(field_name: str, value: object) -> frozenset[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise _fail(
            field_name,
            f"must be a collection of exit codes, got {shown(value)}",
            f"write e.g. {field_name}=[1, 137]",
        )
    codes: set[int] = set()
    for code in value:
        if isinstance(code, bool) or not isinstance(code, int) or code not in _EXIT_CODE_RANGE:
            raise _fail(
                field_name,
                f"contains {shown(code)}, which is not an exit code",
                "use integers from 0 to 255",
            )
        codes.add(int(code))
    return frozenset(codes)


def _seconds(field_name: str, value: object, example: str) -> float | None:
    """A positive, finite number of seconds (as a float), or None."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise _fail(
            field_name,
            f"must be a positive number of seconds or None, got {shown(value)}",
            f"write e.g. {example}",
        )
    return float(value)


def _flag(field_name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise _fail(
            field_name, f"must be true or false, got {shown(value)}", f"write {field_name}=True or False"
        )
    return value


@dataclass(frozen=True, kw_only=True)
class Rules:
    """Overrides of the default verdict rules; every field defaults to the documented behaviour.

    :param success_policy: who decides success.  None: as the TFJob says (its Chief/Master, else
        worker-0 or, with ``successPolicy: AllWorkers``, every worker).  ``"chief"``: the
        Chief/Master, or worker-0 when there is none.  ``"worker0"``: worker-0 (the chief when the
        job has no workers).  ``"all_workers"``: every worker (the chief when there are none).
    :param fail_on_worker_failure: fail the job at the first failure of any replica, even where
        the training operator would restart it (OnFailure/Always/ExitCode restarts, container
        restarts in place, dynamic workers, a Restarting condition).
    :param retryable_exit_codes: exit codes that make a failure retryable.
    :param permanent_exit_codes: exit codes that make a failure permanent.  Both lists override
        the default class rule (1-127 permanent, 128 and above retryable) in either direction.
    :param oom_is_retryable: whether a container killed for running out of memory is retryable.
    :param pending_timeout: seconds a replica's pod may stay Pending (from its creationTimestamp)
        before the job is failed; None waits forever, as the training operator does.
    :param image_pull_fail_fast: fail the job, permanently, as soon as a replica waits on an image
        that does not exist or may not be pulled, or on a container that cannot be configured,
        instead of waiting forever.  False waits on every pull error, as the training operator does.
    :param image_pull_timeout: seconds (from the pod's creationTimestamp) a replica may keep
        failing to pull its image for a reason that can clear by itself — a registry rate limiting
        (429), failing (5xx) or unreachable — before the job is failed, retryably; None waits
        forever.  Applies only with ``image_pull_fail_fast``.
    """

    success_policy: SuccessPolicy | None = None
    fail_on_worker_failure: bool = False
    retryable_exit_codes: frozenset[int] = frozenset()
    permanent_exit_codes: frozenset[int] = frozenset()
    oom_is_retryable: bool = True
    pending_timeout: float | None = None
    image_pull_fail_fast: bool = True
    image_pull_timeout: float | None = 300.0

    def __post_init__(self) -> None:
        if self.success_policy is not None and self.success_policy not in SUCCESS_POLICIES:
            raise _fail(
                "success_policy",
                f"is {shown(self.success_policy)}",
                f"use one of {', '.join(map(repr, SUCCESS_POLICIES))} or None (the TFJob's own policy)",
            )
        _flag("fail_on_worker_failure", self.fail_on_worker_failure)
        _flag("oom_is_retryable", self.oom_is_retryable)
        _flag("image_pull_fail_fast", self.image_pull_fail_fast)
        retryable = _exit_codes("retryable_exit_codes", self.retryable_exit_codes)
        permanent = _exit_codes("permanent_exit_codes", self.permanent_exit_codes)
        both = retryable & permanent
        if both:
            raise _fail(
                "retryable_exit_codes",
                f"and Rules.permanent_exit_codes both list {sorted(both)}",
                "list each exit code in one of them only",
            )
        object.__setattr__(self, "retryable_exit_codes", retryable)
        object.__setattr__(self, "permanent_exit_codes", permanent)
        pending = _seconds("pending_timeout", self.pending_timeout, "pending_timeout=900 for 15 minutes")
        object.__setattr__(self, "pending_timeout", pending)
        pull = _seconds(
            "image_pull_timeout", self.image_pull_timeout, "image_pull_timeout=600 for 10 minutes"
        )
        object.__setattr__(self, "image_pull_timeout", pull)

    def is_retryable_exit_code(self, exit_code: int) -> bool:
        """The retry class of a container exit code under these rules.

        Explicit lists win; otherwise 128 and above (killed by a signal, or the operator's
        "no exit code" value 48879) is retryable and everything else is the program's own error.
        """
        if exit_code in self.permanent_exit_codes:
            return False
        if exit_code in self.retryable_exit_codes:
            return True
        return exit_code >= 128

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (exit codes as sorted lists) that :meth:`from_dict` restores exactly."""
        return {
            "success_policy": self.success_policy,
            "fail_on_worker_failure": self.fail_on_worker_failure,
            "retryable_exit_codes": sorted(self.retryable_exit_codes),
            "permanent_exit_codes": sorted(self.permanent_exit_codes),
            "oom_is_retryable": self.oom_is_retryable,
            "pending_timeout": self.pending_timeout,
            "image_pull_fail_fast": self.image_pull_fail_fast,
            "image_pull_timeout": self.image_pull_timeout,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Rules:
        """Build rules from a (JSON) dict; missing keys keep their defaults.

        Raises ValueError naming the field and the fix for unknown keys and bad values.
        """
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ValueError(
                f"Rules must be given as a dict of field names to values, got {type(data).__name__}; "
                f"known fields: {', '.join(_FIELD_NAMES)}"
            )
        for key in data:
            if key not in _FIELD_NAMES:
                # No field name is long, and difflib gets slow on long words.
                name = key if isinstance(key, str) and len(key) < 64 else ""
                close = difflib.get_close_matches(name, _FIELD_NAMES, n=1) if name else []
                hint = f"did you mean {close[0]!r}?" if close else f"known fields: {', '.join(_FIELD_NAMES)}"
                raise ValueError(f"Rules has no field {shown(key)}; {hint}")
        return cls(**dict(data))


_FIELD_NAMES: Final[tuple[str, ...]] = tuple(item.name for item in fields(Rules))

"""The training's outputs: the deciding replica's termination message, parsed as JSON
(:func:`parse_outputs`; docs/adr/0010-outputs-through-the-termination-message.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from tfjob_provider._outcome.report import log_pod_for, pod_name
from tfjob_provider.constants import DEFAULT_CONTAINER_NAME
from tfjob_provider.policy import Verdict, VerdictState

#: Bytes of a container's termination message that Kubernetes keeps (the kubelet's
#: ``MaxContainerTerminationMessageLength``); a message this long may have been cut.
TERMINATION_MESSAGE_LIMIT: Final = 4096
#: XCom key of the parsed outputs (also ``return_value["outputs"]``).
XCOM_OUTPUTS: Final = "tfjob_outputs"


class OutputsError(ValueError):
    """The deciding replica left a termination message that cannot be the task's outputs."""


def deciding_pod(verdict: Verdict | None, pods: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The pod whose termination message holds the outputs: Chief/Master 0, else Worker 0, among
    the pods a Succeeded verdict names as deciding (all pods when it names none, e.g. a success
    read from the TFJob's condition only); None when that pod is gone."""
    pods = list(pods)
    if verdict is not None and verdict.state is VerdictState.SUCCEEDED and verdict.culprits:
        named = set(verdict.culprits)
        # The verdict names at most 20 pods: under AllWorkers with more workers, worker-0 may be
        # one of those left out, and is still the one to read.
        chosen = log_pod_for(pod for pod in pods if pod_name(pod) in named)
        if chosen is not None:
            return chosen
    return log_pod_for(pods)


def termination_message(pod: Mapping[str, Any]) -> str | None:
    """``state.terminated.message`` of the pod's ``tensorflow`` container (None when empty), cut
    to one character over the limit so an oversized, hand-written status cannot bloat an event."""
    status = pod.get("status")
    statuses = status.get("containerStatuses") if isinstance(status, Mapping) else None
    if not isinstance(statuses, Sequence):
        return None
    for container in statuses:
        if not isinstance(container, Mapping) or container.get("name") != DEFAULT_CONTAINER_NAME:
            continue
        state = container.get("state")
        terminated = state.get("terminated") if isinstance(state, Mapping) else None
        message = terminated.get("message") if isinstance(terminated, Mapping) else None
        if isinstance(message, str) and message:
            return message[: TERMINATION_MESSAGE_LIMIT + 1]
    return None


def parse_outputs(pod: str | None, message: str | None) -> Any:
    """The outputs a deciding pod's termination message holds: None without a message, else the
    parsed JSON document; :class:`OutputsError` naming the pod and the problem otherwise."""
    if message is None or message.strip() == "":
        return None
    size = len(message.encode("utf-8", errors="surrogatepass"))
    where = f"the termination message of pod {pod or '?'}"
    if size >= TERMINATION_MESSAGE_LIMIT:
        raise OutputsError(
            f"{where} is {size} bytes, at Kubernetes' {TERMINATION_MESSAGE_LIMIT}-byte limit, so it was "
            "probably cut (the kubelet keeps the file's end); write a smaller JSON document — e.g. "
            "a URI of the full results — to the termination message"
        )
    try:
        return json.loads(message)
    except ValueError as error:
        start = message[:80].replace("\n", "\\n")
        raise OutputsError(
            f"{where} is not JSON ({error}); it starts {start!r}. Write one JSON document to "
            "terminationMessagePath, or nothing"
        ) from None


__all__ = [
    "TERMINATION_MESSAGE_LIMIT",
    "XCOM_OUTPUTS",
    "OutputsError",
    "deciding_pod",
    "parse_outputs",
    "termination_message",
]

"""Image pull failures in the text a kubelet on containerd reports, per cause (``PULL_FAILURE_CAUSES``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: The causes a test can ask for, each with (gRPC code, containerd's detail after the image ref).
#: ``{ref}`` is the normalized reference, ``{manifest}`` the registry URL of its manifest and
#: ``{registry}`` the registry host.
_CAUSES: Final[dict[str, tuple[str, str]]] = {
    # The image or tag does not exist: permanent.
    "not-found": ("NotFound", 'failed to resolve reference "{ref}": {ref}: not found'),
    # A private repository without credentials (Docker Hub's wording): permanent.
    "access-denied": (
        "Unknown",
        'failed to resolve reference "{ref}": pull access denied, repository does not exist or may '
        "require authorization: server message: insufficient_scope: authorization failed",
    ),
    # Docker Hub's anonymous pull limit: transient.
    "rate-limited": (
        "Unknown",
        "failed to copy: httpReadSeeker: failed open: unexpected status code {manifest}: "
        "429 Too Many Requests - Server message: toomanyrequests: You have reached your pull rate "
        "limit. You may increase the limit by authenticating and upgrading: "
        "https://www.docker.com/increase-rate-limit",
    ),
    # The registry answers with a server error: transient.
    "server-error": (
        "Unknown",
        'failed to resolve reference "{ref}": unexpected status from HEAD request to {manifest}: '
        "503 Service Unavailable",
    ),
    # The registry does not answer: transient.
    "timeout": (
        "Unknown",
        'failed to resolve reference "{ref}": failed to do request: Head "{manifest}": '
        "dial tcp 192.0.2.10:443: i/o timeout",
    ),
    "connection-refused": (
        "Unknown",
        'failed to resolve reference "{ref}": failed to do request: Head "{manifest}": '
        "dial tcp 192.0.2.10:443: connect: connection refused",
    ),
    "tls-handshake-timeout": (
        "Unknown",
        'failed to resolve reference "{ref}": failed to do request: Head "{manifest}": '
        "net/http: TLS handshake timeout",
    ),
}
PULL_FAILURE_CAUSES: Final[tuple[str, ...]] = tuple(_CAUSES)
#: Causes a registry recovers from by itself (the others need a change to the job).
TRANSIENT_CAUSES: Final = frozenset(
    {"rate-limited", "server-error", "timeout", "connection-refused", "tls-handshake-timeout"}
)
_DOCKER_HUB: Final = "docker.io"


def normalized_reference(image: str) -> str:
    """The reference containerd resolves: registry host and ``library/`` for Docker Hub, a tag.

    ``python:3.11`` → ``docker.io/library/python:3.11``; ``registry.example.com/tf`` →
    ``registry.example.com/tf:latest``.  Digests are kept as they are.
    """
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        domain, path = first, rest
    else:
        domain, path = _DOCKER_HUB, image
        if "/" not in path:
            path = f"library/{path}"
    last = path.rsplit("/", 1)[-1]
    if "@" not in path and ":" not in last:
        path = f"{path}:latest"
    return f"{domain}/{path}"


def _manifest_url(reference: str) -> str:
    domain, _, path = reference.partition("/")
    host = "registry-1.docker.io" if domain == _DOCKER_HUB else domain
    if "@" in path:
        repository, _, tag = path.partition("@")
    else:
        repository, _, tag = path.rpartition(":")
    return f"https://{host}/v2/{repository}/manifests/{tag}"


@dataclass(frozen=True)
class PullFailure:
    """One failed pull of one image: the texts the kubelet puts in statuses and events."""

    image: str
    cause: str

    @property
    def error(self) -> str:
        """The CRI error: the ``ErrImagePull`` waiting message (and what the event quotes)."""
        code, detail = _CAUSES[self.cause]
        reference = normalized_reference(self.image)
        text = detail.format(ref=reference, manifest=_manifest_url(reference))
        return f'rpc error: code = {code} desc = failed to pull and unpack image "{reference}": {text}'

    @property
    def event_message(self) -> str:
        """The Warning ``Failed`` event of the pull."""
        return f'Failed to pull image "{self.image}": {self.error}'

    @property
    def back_off_message(self) -> str:
        """The ``ImagePullBackOff`` waiting message (Kubernetes 1.32+ appends the last error)."""
        return f'Back-off pulling image "{self.image}": ErrImagePull: {self.error}'


def check_cause(cause: str) -> str:
    """``cause`` if it is a known pull failure cause; ValueError naming the choices otherwise."""
    if cause not in _CAUSES:
        raise ValueError(
            f"unknown image pull failure cause {cause!r}; use one of {', '.join(PULL_FAILURE_CAUSES)}"
        )
    return cause


__all__ = [
    "PULL_FAILURE_CAUSES",
    "TRANSIENT_CAUSES",
    "PullFailure",
    "check_cause",
    "normalized_reference",
]

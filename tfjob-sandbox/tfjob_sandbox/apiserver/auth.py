"""Bearer-token authentication and RBAC authorisation: 401 and 403 as kube-apiserver words them."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from tfjob_sandbox.api.errors import ApiError
from tfjob_sandbox.apiserver.rbac import RbacPolicy, forbidden
from tfjob_sandbox.apiserver.routing import RequestInfo

ADMIN_USER = "sandbox-admin"
_DISCOVERY_PREFIXES = ("/api", "/apis", "/version", "/openapi", "/healthz", "/livez", "/readyz")


@dataclass(frozen=True)
class User:
    name: str
    is_admin: bool = False


def _unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


class Authenticator:
    """Checks the bearer token and, for resource requests, the RBAC rules of its user."""

    def __init__(self, *, admin_token: str, policy: RbacPolicy | None = None) -> None:
        self.admin_token = admin_token
        self.policy = policy

    def authenticate(self, authorization: str | None) -> User:
        """The user behind an ``Authorization`` header; 401 Status when missing or unknown."""
        if not authorization:
            raise _unauthorized()
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise _unauthorized()
        if hmac.compare_digest(token.encode(), self.admin_token.encode()):
            return User(ADMIN_USER, is_admin=True)
        if self.policy is not None:
            user = self.policy.user_for(token)
            if user is not None:
                return User(user)
        raise _unauthorized()

    def authorize(self, user: User, info: RequestInfo) -> None:
        """403 Forbidden (worded like kube-apiserver's RBAC denials) unless ``user`` may do ``info``."""
        if user.is_admin:
            return
        if not info.is_resource_request:
            if info.method == "GET" and info.path.startswith(_DISCOVERY_PREFIXES):
                return
            raise ApiError(
                403,
                "Forbidden",
                f'forbidden: User "{user.name}" cannot {info.verb} path "{info.path}"',
                details={},
            )
        if self.policy is not None and self.policy.allows(user.name, info):
            return
        raise forbidden(user.name, info)

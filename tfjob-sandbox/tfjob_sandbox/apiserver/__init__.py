"""The HTTP API server: routing, authentication, RBAC, API faults, request counts and the request handlers."""

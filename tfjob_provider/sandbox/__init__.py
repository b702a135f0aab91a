"""Embedded sandbox Kubernetes cluster (see tfjob_provider.sandbox.Sandbox)."""

"""Shared by every part of the sandbox: resource types, the API error, the operator's wire names."""

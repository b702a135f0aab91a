"""Tests of the built distributions (wheel contents, installing the provider wheel)."""

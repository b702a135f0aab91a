"""The verdict engine's private parts; import from :mod:`tfjob_provider.policy`."""

"""The manifest builder's private parts; import from :mod:`tfjob_provider.manifest`."""

"""The manifest builder's private parts; :mod:`tfjob_provider.manifest` is the interface to import.

Split by concern: :mod:`.problems` (the error type), :mod:`.loading` (text, files, YAML with
lines), :mod:`.building` (typed parameters), :mod:`.checks` (generic value checks) and
:mod:`.validation` (the TFJob rules).  Standard library plus PyYAML, like the builder itself.
"""

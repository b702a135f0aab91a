"""The verdict engine's private parts; :mod:`tfjob_provider.policy` is the interface to import.

Split by concern: :mod:`.readers` (defensive JSON reads), :mod:`.tfjob` (the TFJob with the
operator's defaults), :mod:`.pods` (why a pod failed), :mod:`.observation` (one pass over the
pods), :mod:`.reconcile` (one replayed operator pass), :mod:`.rules` and :mod:`.verdicts` (the
public data types).  Standard library only, like the engine itself.
"""

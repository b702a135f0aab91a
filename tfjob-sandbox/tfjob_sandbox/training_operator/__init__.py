"""The training operator emulation (v1.9.4 rules): the I/O driver and the pure reconcile pass."""

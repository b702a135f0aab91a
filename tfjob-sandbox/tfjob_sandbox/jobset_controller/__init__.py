"""The JobSet controller (kubernetes-sigs/jobset v0.7), emulated: a pure pass under an event-driven driver."""

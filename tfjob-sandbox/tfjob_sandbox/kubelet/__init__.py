"""The one node: scheduling, containers run as local processes or scripts, pod status, node faults."""

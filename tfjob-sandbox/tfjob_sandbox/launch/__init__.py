"""A whole sandbox: its parts assembled, run in a thread or by the CLI; the admin API; the kubeconfig."""

"""What the sandbox takes from the machine it runs on: local ports for loopback ``TF_CONFIG``."""

"""tfjob_provider: an Apache Airflow provider for Kubeflow TFJobs.

Holds :func:`get_provider_info` only, and imports nothing else, so ``import tfjob_provider.policy``
works without Airflow or a Kubernetes client.
"""

from __future__ import annotations

from typing import Any

from tfjob_provider.__about__ import __version__


def get_provider_info() -> dict[str, Any]:
    """Describe this provider to Airflow's ProvidersManager (the ``apache_airflow_provider`` entry point)."""
    return {
        "package-name": "tfjob-provider",
        "name": "Kubeflow TFJob",
        "description": "Run Kubeflow TFJobs (distributed TensorFlow training) from Airflow and judge "
        "their outcome from the chief, worker and parameter-server replicas.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Kubeflow TFJob",
                "external-doc-url": "https://www.kubeflow.org/docs/components/trainer/legacy-v1/user-guides/tensorflow/",
                "tags": ["software"],
            }
        ],
        "hooks": [{"integration-name": "Kubeflow TFJob", "python-modules": ["tfjob_provider.hooks.tfjob"]}],
        "operators": [
            {"integration-name": "Kubeflow TFJob", "python-modules": ["tfjob_provider.operators.tfjob"]}
        ],
        "sensors": [
            {"integration-name": "Kubeflow TFJob", "python-modules": ["tfjob_provider.sensors.tfjob"]}
        ],
        "triggers": [
            {"integration-name": "Kubeflow TFJob", "python-modules": ["tfjob_provider.triggers.tfjob"]}
        ],
        # The hook uses the cncf-kubernetes provider's "kubernetes" connection type; nothing to add.
        "connection-types": [],
        "extra-links": ["tfjob_provider.links.TFJobLink"],
        "task-decorators": [{"class-name": "tfjob_provider.decorators.tfjob.tfjob_task", "name": "tfjob"}],
        "config": {
            "tfjob_provider": {
                "description": "Settings of the Kubeflow TFJob provider.",
                "options": {
                    "dashboard_url_template": {
                        "description": "URL of the 'TFJob' extra link of TFJobOperator and TFJobSensor, "
                        "with {namespace}, {name} and {uid} placeholders. Empty: no link.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "https://kubeflow.example.com/_/tfjobs/{namespace}/{name}",
                        "default": "",
                    },
                    "api_qps": {
                        "description": "Client-side rate limit: sustained Kubernetes API requests per second "
                        "per connection per process (client-go's default). Every hook, sensor and trigger "
                        "of a process shares it, so a triggerer waking hundreds of TFJobs does not flood "
                        "the API server into 429s.",
                        "version_added": "0.1.0",
                        "type": "float",
                        "example": "20",
                        "default": "5",
                    },
                    "api_burst": {
                        "description": "Client-side rate limit: requests that may go out back to back "
                        "after a quiet period (client-go's default).",
                        "version_added": "0.1.0",
                        "type": "integer",
                        "example": "30",
                        "default": "10",
                    },
                    "api_outage_budget": {
                        "description": "Seconds an unavailable Kubernetes API (503, 429, connection "
                        "resets, timeouts) is ridden out by every request, watch and fresh read before "
                        "it gives up, measured from the first failure; back-off is exponential with "
                        "jitter (1-15 s) and waits at least the server's Retry-After. A connection's "
                        "'api_outage_budget' extra overrides it.",
                        "version_added": "0.1.0",
                        "type": "float",
                        "example": "600",
                        "default": "180",
                    },
                },
            }
        },
    }

"""The pytest plugin tfjob-sandbox registers (entry point ``pytest11``), used as a team would use it.

Each test runs a small user test file with ``pytester`` in a fresh pytest session: the plugin is
found through its entry point, not imported by hand; the user's test reaches the sandbox only
through what the fixtures give (the kubeconfig and the Airflow connection) and the official
``kubernetes`` client.
"""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest

pytest_plugins = ["pytester"]

USER_TEST = """
import json
import time
from pathlib import Path

from kubernetes import client, config

TFJOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": "mnist"},
    "spec": {
        "tfReplicaSpecs": {
            "Worker": {
                "replicas": 2,
                "restartPolicy": "Never",
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "tensorflow",
                                "image": "registry.example/mnist:1.0",
                                "command": ["python", "-c", "print('trained')"],
                            }
                        ]
                    }
                },
            }
        }
    },
}


def test_a_tfjob_succeeds(tfjob_sandbox_kubeconfig):
    api = config.new_client_from_config(config_file=str(tfjob_sandbox_kubeconfig))
    tfjobs = client.CustomObjectsApi(api)
    tfjobs.create_namespaced_custom_object("kubeflow.org", "v1", "default", "tfjobs", TFJOB)
    deadline = time.monotonic() + 60
    state = None
    while time.monotonic() < deadline and state != "Succeeded":
        time.sleep(0.2)
        job = tfjobs.get_namespaced_custom_object("kubeflow.org", "v1", "default", "tfjobs", "mnist")
        conditions = (job.get("status") or {}).get("conditions") or []
        state = conditions[-1]["type"] if conditions else None
    assert state == "Succeeded"
    log = client.CoreV1Api(api).read_namespaced_pod_log("mnist-worker-1", "default", _preload_content=False)
    assert log.data.decode() == "trained\\n"
    api.close()


def test_the_fixtures_describe_one_session_sandbox(
    tfjob_sandbox, tfjob_sandbox_kubeconfig, tfjob_sandbox_conn_uri
):
    connection = json.loads(tfjob_sandbox_conn_uri)
    assert connection["conn_type"] == "kubernetes"
    assert connection["extra"]["kube_config_path"] == str(tfjob_sandbox_kubeconfig)
    assert tfjob_sandbox.kubeconfig_path == tfjob_sandbox_kubeconfig
    # the first test's TFJob is still there: one sandbox for the session
    assert tfjob_sandbox.request_total(verb="create", resource="tfjobs") == 1
    Path("seen.json").write_text(
        json.dumps({"url": tfjob_sandbox.url, "pod_start_delay": tfjob_sandbox.options.pod_start_delay})
    )
"""


def _refuses_connections(url: str) -> bool:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=2).close()
    except OSError:
        return True
    return False


def test_user_tests_create_a_tfjob_through_the_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--tfjob-sandbox-option", "pod_start_delay=0.1")
    result.assert_outcomes(passed=2)
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert seen["pod_start_delay"] == 0.1  # parsed as JSON: a number, not the string "0.1"
    assert _refuses_connections(seen["url"]), "the sandbox outlived its test session"


def test_the_kubeconfig_names_the_sandbox_and_its_ca(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_kubeconfig="""
        import yaml

        def test_kubeconfig(tfjob_sandbox, tfjob_sandbox_kubeconfig):
            document = yaml.safe_load(tfjob_sandbox_kubeconfig.read_text())
            (cluster,) = document["clusters"]
            assert cluster["cluster"]["server"] == tfjob_sandbox.url
            assert cluster["cluster"]["certificate-authority-data"]
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("pod_start_delay", "*--tfjob-sandbox-option takes KEY=VALUE, not 'pod_start_delay'*"),
        ("pod_start_dealy=1", "*--tfjob-sandbox-option pod_start_dealy: not a sandbox option; known: *"),
    ],
)
def test_a_malformed_option_stops_the_run_before_any_test(
    pytester: pytest.Pytester, option: str, message: str
) -> None:
    pytester.makepyfile(test_nothing="def test_nothing(tfjob_sandbox):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--tfjob-sandbox-option", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_the_plugin_is_registered_through_its_entry_point() -> None:
    from importlib.metadata import entry_points

    (plugin,) = [ep for ep in entry_points(group="pytest11") if ep.name == "tfjob_sandbox"]
    assert plugin.value == "tfjob_sandbox.pytest_plugin"

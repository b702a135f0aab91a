"""The triggerer loads kubernetes_asyncio's transport without its generated API and models.

Checked in fresh interpreters (an import is process-wide): the provider's async client must not
load the ~770 model modules, yet any later user of the package — another provider's trigger in
the same triggerer — must still find the complete package, and an already imported package must
be left as it is.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def run_python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.slow  # a fresh interpreter imports the stack: not in make test-unit
def test_the_async_client_loads_no_generated_models_and_the_package_completes_on_demand() -> None:
    out = run_python(
        """
        import sys
        import tfjob_provider.kube.async_client as transport
        models = lambda: sum(1 for m in sys.modules if m.startswith("kubernetes_asyncio.client.models."))
        apis = lambda: sum(1 for m in sys.modules if m.startswith("kubernetes_asyncio.client.api."))
        print(models(), apis())
        from kubernetes_asyncio.client import ApiClient, Configuration
        print(models(), ApiClient is transport.ApiClient)
        from kubernetes_asyncio import client, config
        from kubernetes_asyncio.client import CoreV1Api, V1Pod
        print(models() > 700, client.models.V1Pod is V1Pod, client.ApiClient is ApiClient)
        print(type(client).__name__, callable(config.load_kube_config), CoreV1Api.__name__)
        """
    )
    assert out.splitlines() == ["0 0", "0 True", "True True True", "module True CoreV1Api"]


@pytest.mark.slow  # a fresh interpreter imports the stack: not in make test-unit
def test_an_already_imported_package_is_left_alone() -> None:
    out = run_python(
        """
        import kubernetes_asyncio.client as client
        before = client
        import tfjob_provider.kube.async_client as transport
        import kubernetes_asyncio.client
        print(kubernetes_asyncio.client is before, transport.ApiClient is before.ApiClient)
        """
    )
    assert out == "True True"

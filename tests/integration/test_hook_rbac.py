"""The documented least-privilege Role (docs/guides/rbac.md) is enough, and one verb less is named clearly."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tfjob_sandbox import Sandbox
from tfjob_sandbox.testing import running_sandbox, tfjob_manifest, unique_name

from tfjob_provider.hooks.tfjob import TFJobHook
from tfjob_provider.kube import errors
from tfjob_provider.kube.ratelimit import RateLimit
from tfjob_provider.kube.retry import RetryPolicy
from tfjob_provider.kube.watching import WatchSettings

pytestmark = pytest.mark.timeout(120)

RBAC_DOC = Path(__file__).resolve().parents[2] / "docs" / "guides" / "rbac.md"
TOKEN = "provider-token"
USER = "system:serviceaccount:airflow:airflow-worker"


def documented_role_rules() -> list[dict[str, Any]]:
    """The rules of the ``Role`` YAML block in docs/guides/rbac.md (the test reads the doc users copy)."""
    for block in re.findall(r"```yaml\n(.*?)```", RBAC_DOC.read_text(), flags=re.S):
        for document in yaml.safe_load_all(block):
            if isinstance(document, dict) and document.get("kind") == "Role":
                return list(document["rules"])
    raise AssertionError("docs/guides/rbac.md has no Role")


def sandbox_with_rules(tmp: Path, rules: list[dict[str, Any]], namespace: str) -> Any:
    rbac_file = tmp / "rbac.yaml"
    scoped = [dict(rule, namespaces=[namespace]) for rule in rules]
    rbac_file.write_text(yaml.safe_dump({"tokens": {TOKEN: USER}, "users": {USER: scoped}}))
    return running_sandbox(workdir=tmp / "pods", rbac_file=rbac_file, backoff_initial=0.2, backoff_cap=1.0)


def limited_hook(sandbox: Sandbox, tmp: Path, namespace: str) -> TFJobHook:
    from tests.integration.hook_fixtures import write_kubeconfig

    path = write_kubeconfig(tmp / "limited-kubeconfig", sandbox=sandbox, token=TOKEN, namespace=namespace)
    return TFJobHook(
        None,
        config_file=str(path),
        retry_policy=RetryPolicy(budget=0.5, wait_min=0.05, wait_max=0.1),
        rate_limit=RateLimit(rate=1000, burst=1000),
        watch_settings=WatchSettings(poll_interval=0.2),
    )


@pytest.fixture
def namespace_name() -> str:
    return "training"


def admin_setup(sandbox: Sandbox, namespace: str) -> None:
    from tests.integration.hook_fixtures import create_namespace

    create_namespace(sandbox, namespace)


def exercise_everything(hook: TFJobHook, namespace: str) -> None:
    from tests.integration.hook_fixtures import list_tfjobs

    client = hook.client
    name = unique_name("rbac")
    client.create_tfjob(tfjob_manifest(name, command=["sh", "-c", "echo done"]), namespace=namespace)
    client.get_tfjob(name, namespace=namespace)
    list_tfjobs(client, namespace=namespace)
    watch = client.watch_job(name, namespace=namespace)
    try:
        for snapshot in watch:
            if any(p.get("status", {}).get("phase") == "Succeeded" for p in snapshot.pods):
                break
    finally:
        watch.close()
    pods = client.list_job_pods(name, namespace=namespace)
    client.read_log_tail(pods[0]["metadata"]["name"], namespace=namespace)
    client.list_events(namespace=namespace, involved_names=[name])
    assert client.delete_tfjob(name, namespace=namespace)


@pytest.fixture
def rules() -> Iterator[list[dict[str, Any]]]:
    yield documented_role_rules()


def test_the_documented_role_is_enough(tmp_path: Path, rules: list[dict[str, Any]]) -> None:
    with sandbox_with_rules(tmp_path, rules, "training") as sandbox:
        admin_setup(sandbox, "training")
        exercise_everything(limited_hook(sandbox, tmp_path, "training"), "training")


def without_verb(rules: list[dict[str, Any]], resource: str, verb: str) -> list[dict[str, Any]]:
    trimmed = copy.deepcopy(rules)
    for rule in trimmed:
        if resource in rule["resources"] and verb in rule["verbs"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != verb]
    return trimmed


def test_missing_create_names_the_rule(tmp_path: Path, rules: list[dict[str, Any]]) -> None:
    with sandbox_with_rules(tmp_path, without_verb(rules, "tfjobs", "create"), "training") as sandbox:
        admin_setup(sandbox, "training")
        with pytest.raises(errors.ForbiddenError) as caught:
            limited_hook(sandbox, tmp_path, "training").client.create_tfjob(
                tfjob_manifest(unique_name("x")), namespace="training"
            )
    message = str(caught.value)
    assert caught.value.rule is not None and caught.value.rule.verb == "create"
    assert 'apiGroups: ["kubeflow.org"], resources: ["tfjobs"], verbs: ["create"]' in message
    assert "namespace 'training'" in message and USER in message


def test_missing_pod_watch_falls_back_to_polling(tmp_path: Path, rules: list[dict[str, Any]]) -> None:
    with sandbox_with_rules(tmp_path, without_verb(rules, "pods", "watch"), "training") as sandbox:
        admin_setup(sandbox, "training")
        exercise_everything(limited_hook(sandbox, tmp_path, "training"), "training")


def test_missing_log_permission_is_named(tmp_path: Path, rules: list[dict[str, Any]]) -> None:
    trimmed = [rule for rule in copy.deepcopy(rules) if "pods/log" not in rule["resources"]]
    with sandbox_with_rules(tmp_path, trimmed, "training") as sandbox:
        admin_setup(sandbox, "training")
        with pytest.raises(errors.ForbiddenError) as caught:
            limited_hook(sandbox, tmp_path, "training").client.read_log_tail("p", namespace="training")
    assert 'resources: ["pods/log"], verbs: ["get"]' in str(caught.value)

"""The sandbox kubelet runs containers as real processes and reports them as a kubelet does.

Each test creates pods in the real store and watches the kubelet bind, start, restart and stop
them: container states and pod phases, logs, environment, back-off timing, graceful deletion and
the guarantee that no process group outlives the node.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from tfjob_sandbox.api.resource_types import PODS
from tfjob_sandbox.kubelet.pod_records import go_duration
from workload_helpers import (
    container_status,
    group_alive,
    phase,
    pod_manifest,
    py,
    run,
    running_node,
    sleep_then_exit,
    wait_for,
)


def test_container_gets_command_env_workdir_and_log(tmp_path: Path) -> None:
    code = (
        "import os; print('host', os.environ['HOSTNAME']); print('ns', os.environ['POD_NS']);"
        "print('uid', os.environ['POD_UID']); print('ip', os.environ['POD_IP']);"
        "print('greeting', os.environ['GREETING']); print('cwd', os.getcwd())"
    )
    env = [
        {"name": "NAME", "value": "world"},
        {"name": "GREETING", "value": "hello $(NAME) $$(NAME)"},
        {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            created = node.store.create(PODS, pod_manifest("envy", py(code), env=env))
            pod = await wait_for(lambda: phase(node.pod("envy")) == "Succeeded" and node.pod("envy"))
            status = container_status(pod)
            terminated = status["state"]["terminated"]
            assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
            assert terminated["startedAt"] and terminated["finishedAt"]
            assert pod["spec"]["nodeName"] == "sandbox-node"
            assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "False"
            log = node.kubelet.log_path("default", "envy", "tensorflow")
            assert log is not None
            lines = log.read_text().splitlines()
            uid = created["metadata"]["uid"]
            assert lines[:5] == [
                "host envy",
                "ns default",
                f"uid {uid}",
                "ip 127.0.0.1",
                "greeting hello world $(NAME)",
            ]
            assert lines[5].startswith("cwd ") and lines[5].endswith(f"default_envy_{uid}")
            reasons = [e["reason"] for e in node.events(name="envy")]
            assert reasons == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]

    run(scenario())


def test_never_policy_failure_keeps_exit_code(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("fails", sleep_then_exit(0, 3)))
            pod = await wait_for(lambda: phase(node.pod("fails")) == "Failed" and node.pod("fails"))
            terminated = container_status(pod)["state"]["terminated"]
            assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
            assert container_status(pod)["restartCount"] == 0

    run(scenario())


def test_pod_start_delay_keeps_containers_creating_then_starts_them(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False, pod_start_delay=0.6) as node:
            began = time.monotonic()
            node.store.create(PODS, pod_manifest("slow-start", sleep_then_exit(0, 0)))
            node.store.create(PODS, pod_manifest("deleted-while-waiting", sleep_then_exit(0, 0)))

            def reported() -> dict[str, Any] | None:
                pod = node.pod("slow-start")
                return pod if (pod.get("status") or {}).get("containerStatuses") else None

            bound = await wait_for(reported)
            assert phase(bound) == "Pending"
            assert container_status(bound)["state"] == {"waiting": {"reason": "ContainerCreating"}}
            node.store.delete(PODS, "deleted-while-waiting", namespace="default")
            done = await wait_for(lambda: phase(node.pod("slow-start")) == "Succeeded", timeout=10)
            assert done and time.monotonic() - began >= 0.6
            await asyncio.sleep(0.3)
            assert node.pod_or_none("deleted-while-waiting") is None
            assert not node.events(name="deleted-while-waiting", reason="Started")

    run(scenario())


def test_on_failure_crash_loop_backs_off_and_stays_running(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False, backoff_initial=0.3, backoff_cap=0.6) as node:
            node.store.create(PODS, pod_manifest("loop", sleep_then_exit(0, 1), restart_policy="OnFailure"))
            started = time.monotonic()
            pod = await wait_for(
                lambda: container_status(node.pod("loop"))["restartCount"] >= 3 and node.pod("loop"),
                timeout=15,
            )
            elapsed = time.monotonic() - started
            # First restart at once, then 0.3 s and 0.6 s of back-off at least.
            assert elapsed >= 0.9
            assert phase(pod) == "Running"
            waiting = await wait_for(
                lambda: container_status(node.pod("loop"))["state"].get("waiting"), timeout=5
            )
            assert waiting["reason"] == "CrashLoopBackOff"
            assert "restarting failed container=tensorflow pod=loop_default(" in waiting["message"]
            last = container_status(node.pod("loop"))["lastState"]["terminated"]
            assert (last["exitCode"], last["reason"]) == (1, "Error")
            assert node.events(name="loop", reason="BackOff")

    run(scenario())


def test_on_failure_restart_then_success_keeps_previous_log(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import os, sys
        first = not os.path.exists('ran-once')
        open('ran-once', 'w').close()
        print('first' if first else 'second')
        sys.exit(7 if first else 0)
    """)

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("flaky", py(code), restart_policy="OnFailure"))
            pod = await wait_for(lambda: phase(node.pod("flaky")) == "Succeeded" and node.pod("flaky"))
            status = container_status(pod)
            assert status["restartCount"] == 1
            assert status["lastState"]["terminated"]["exitCode"] == 7
            current = node.kubelet.log_path("default", "flaky", "tensorflow")
            previous = node.kubelet.log_path("default", "flaky", "tensorflow", previous=True)
            assert current is not None and previous is not None
            assert (previous.read_text(), current.read_text()) == ("first\n", "second\n")

    run(scenario())


def test_always_policy_restarts_after_clean_exit(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("again", sleep_then_exit(0, 0), restart_policy="Always"))
            pod = await wait_for(
                lambda: container_status(node.pod("again"))["restartCount"] >= 2 and node.pod("again")
            )
            assert phase(pod) == "Running"
            assert container_status(pod)["lastState"]["terminated"]["reason"] == "Completed"

    run(scenario())


def test_graceful_delete_sends_sigterm_to_the_group(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import signal, sys, time
        def bye(*_):
            print('got SIGTERM', flush=True)
            sys.exit(0)
        signal.signal(signal.SIGTERM, bye)
        print('ready', flush=True)
        time.sleep(30)
    """)

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("polite", py(code), grace=5))
            log = await wait_for(lambda: node.kubelet.log_path("default", "polite", "tensorflow"))
            await wait_for(lambda: "ready" in log.read_text())
            deleted = node.store.delete(PODS, "polite")
            assert deleted["metadata"]["deletionTimestamp"]
            await wait_for(lambda: node.pod_or_none("polite") is None)
            assert "got SIGTERM" in log.read_text()
            assert [e["message"] for e in node.events(name="polite", reason="Killing")] == [
                "Stopping container tensorflow"
            ]
            assert node.kubelet.running_processes == 0

    run(scenario())


def test_delete_escalates_to_sigkill_after_grace_period(tmp_path: Path) -> None:
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True);"
        "time.sleep(60)"
    )

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("stubborn", py(code), grace=1))
            log = await wait_for(lambda: node.kubelet.log_path("default", "stubborn", "tensorflow"))
            await wait_for(lambda: "up" in log.read_text())
            groups = node.kubelet.process_group_ids()
            started = time.monotonic()
            node.store.delete(PODS, "stubborn")
            await wait_for(lambda: node.pod_or_none("stubborn") is None, timeout=10)
            assert time.monotonic() - started >= 0.9
            assert not any(group_alive(g) for g in groups)

    run(scenario())


def test_start_errors_for_missing_program_and_missing_command(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("noexec", ["/definitely/not/here"]))
            bare = pod_manifest("bare", [])
            del bare["spec"]["containers"][0]["command"]
            node.store.create(PODS, bare)
            for name in ("noexec", "bare"):
                pod = await wait_for(lambda n=name: phase(node.pod(n)) == "Failed" and node.pod(n))
                terminated = container_status(pod)["state"]["terminated"]
                assert (terminated["exitCode"], terminated["reason"]) == (128, "StartError")
            noexec = container_status(node.pod("noexec"))["state"]["terminated"]["message"]
            assert "/definitely/not/here" in noexec
            assert (
                "neither command nor args"
                in container_status(node.pod("bare"))["state"]["terminated"]["message"]
            )

    run(scenario())


def test_multi_container_pod_fails_when_one_fails_under_never(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            manifest = pod_manifest("pair", sleep_then_exit(0.6, 2))
            manifest["spec"]["containers"].append(
                {"name": "sidecar", "image": "busybox:1", "command": sleep_then_exit(0, 0)}
            )
            node.store.create(PODS, manifest)
            running = await wait_for(
                lambda: (
                    container_status(node.pod("pair"), "sidecar")["state"].get("terminated")
                    and node.pod("pair")
                )
            )
            assert phase(running) == "Running"
            failed = await wait_for(lambda: phase(node.pod("pair")) == "Failed" and node.pod("pair"))
            assert container_status(failed)["state"]["terminated"]["exitCode"] == 2

    run(scenario())


def test_init_containers_run_first_and_in_order(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            manifest = pod_manifest("ordered", py("print(open('marker').read())"))
            manifest["spec"]["initContainers"] = [
                {
                    "name": "prepare",
                    "image": "busybox:1",
                    "command": py("open('marker', 'w').write('prepared')"),
                },
            ]
            node.store.create(PODS, manifest)
            pod = await wait_for(lambda: phase(node.pod("ordered")) == "Succeeded" and node.pod("ordered"))
            assert pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
            log = node.kubelet.log_path("default", "ordered", "tensorflow")
            assert log is not None and log.read_text() == "prepared\n"

    run(scenario())


def test_termination_message_from_file_and_from_logs(tmp_path: Path) -> None:
    writes_file = py(
        "import os, sys; os.makedirs('dev', exist_ok=True);"
        "open('dev/termination-log', 'w').write('bad data'); sys.exit(4)"
    )
    logs_only = py("import sys; print('traceback here'); sys.exit(5)")

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("by-file", writes_file))
            node.store.create(
                PODS, pod_manifest("by-log", logs_only, terminationMessagePolicy="FallbackToLogsOnError")
            )
            by_file = await wait_for(lambda: phase(node.pod("by-file")) == "Failed" and node.pod("by-file"))
            by_log = await wait_for(lambda: phase(node.pod("by-log")) == "Failed" and node.pod("by-log"))
            assert container_status(by_file)["state"]["terminated"]["message"] == "bad data"
            assert container_status(by_log)["state"]["terminated"]["message"] == "traceback here\n"

    run(scenario())


def test_nothing_in_the_working_directory_shadows_a_module_named_like_the_container(tmp_path: Path) -> None:
    """The pod directory is the working directory; the kubelet's own files there (logs of the
    ``tensorflow`` container) must not make ``import tensorflow`` succeed without TensorFlow."""
    probe = py(
        "import importlib.util, sys; print('started'); "
        "sys.exit(0 if importlib.util.find_spec('tensorflow') is None else 1)"
    )

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("probe", probe))
            pod = await wait_for(
                lambda: phase(node.pod("probe")) in ("Succeeded", "Failed") and node.pod("probe")
            )
            assert phase(pod) == "Succeeded", container_status(pod)
            log = node.kubelet.log_path("default", "probe", "tensorflow")
            assert log is not None and log.read_text() == "started\n"

    run(scenario())


def test_termination_message_path_is_given_in_the_environment(tmp_path: Path) -> None:
    """A program finds its (relocated) terminationMessagePath through the environment, and the
    kubelet reads it on success too."""
    writes = py(
        "import json, os; path = os.environ['TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH'];"
        "open(path, 'w').write(json.dumps({'path': path}))"
    )

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("custom", writes, terminationMessagePath="/tmp/result.json"))
            pod = await wait_for(lambda: phase(node.pod("custom")) == "Succeeded" and node.pod("custom"))
            message = json.loads(container_status(pod)["state"]["terminated"]["message"])
            pod_directory = tmp_path / "pods" / f"default_custom_{pod['metadata']['uid']}"
            assert Path(message["path"]) == pod_directory / "tmp" / "result.json"

    run(scenario())


def test_termination_message_keeps_the_last_4096_bytes_like_kubelet(tmp_path: Path) -> None:
    writes = py(
        "import os; open(os.environ['TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH'], 'w')"
        ".write('A' * 100 + 'B' * 4096)"
    )

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("long", writes))
            pod = await wait_for(lambda: phase(node.pod("long")) == "Succeeded" and node.pod("long"))
            assert container_status(pod)["state"]["terminated"]["message"] == "B" * 4096

    run(scenario())


def test_fallback_to_logs_only_on_error_and_at_most_80_lines_and_2048_bytes(tmp_path: Path) -> None:
    many_lines = py("import sys; [print(f'line {i}') for i in range(200)]; sys.exit(3)")
    long_lines = py("import sys; [print(str(i % 10) * 100) for i in range(30)]; sys.exit(3)")
    clean_exit = py("print('all good')")
    fallback = {"terminationMessagePolicy": "FallbackToLogsOnError"}

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("many", many_lines, **fallback))
            node.store.create(PODS, pod_manifest("long", long_lines, **fallback))
            node.store.create(PODS, pod_manifest("clean", clean_exit, **fallback))
            many = await wait_for(lambda: phase(node.pod("many")) == "Failed" and node.pod("many"))
            long = await wait_for(lambda: phase(node.pod("long")) == "Failed" and node.pod("long"))
            clean = await wait_for(lambda: phase(node.pod("clean")) == "Succeeded" and node.pod("clean"))
            lines = container_status(many)["state"]["terminated"]["message"].splitlines()
            assert lines == [f"line {i}" for i in range(120, 200)]
            message = container_status(long)["state"]["terminated"]["message"]
            assert len(message.encode()) == 2048 and message.endswith("9" * 100 + "\n")
            assert "message" not in container_status(clean)["state"]["terminated"]

    run(scenario())


def test_a_restarted_container_does_not_report_its_previous_message(tmp_path: Path) -> None:
    """Each run gets a fresh, empty file, as the kubelet mounts a new one at every start."""
    code = (
        "import os, sys; path = os.environ['TFJOB_SANDBOX_TERMINATION_MESSAGE_PATH'];"
        "first = not os.path.exists('ran'); open('ran', 'a').close();"
        "first and open(path, 'w').write('first run'); sys.exit(1 if first else 0)"
    )

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("again", py(code), restart_policy="OnFailure"))
            pod = await wait_for(lambda: phase(node.pod("again")) == "Succeeded" and node.pod("again"))
            status = container_status(pod)
            assert status["lastState"]["terminated"]["message"] == "first run"
            assert "message" not in status["state"]["terminated"]

    run(scenario())


def test_unresolvable_secret_reference_blocks_the_container(tmp_path: Path) -> None:
    env = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}]

    async def scenario() -> None:
        async with running_node(tmp_path, operator=False) as node:
            node.store.create(PODS, pod_manifest("secretive", sleep_then_exit(0), env=env))
            pod = await wait_for(
                lambda: (
                    container_status(node.pod("secretive"))["state"].get("waiting", {}).get("reason")
                    == "CreateContainerConfigError"
                    and node.pod("secretive")
                )
            )
            assert phase(pod) == "Pending"
            assert container_status(pod)["state"]["waiting"]["message"] == 'secret "creds" not found'

    run(scenario())


def test_stop_leaves_no_process_group_behind(tmp_path: Path) -> None:
    async def scenario() -> list[int]:
        async with running_node(tmp_path, operator=False) as node:
            for index in range(3):
                # A shell with a background grandchild: the whole group must go, not just the shell.
                node.store.create(PODS, pod_manifest(f"deep-{index}", ["sh", "-c", "sleep 60 & sleep 60"]))
            await wait_for(lambda: node.kubelet.running_processes == 3)
            await wait_for(lambda: all(phase(node.pod(f"deep-{i}")) == "Running" for i in range(3)))
            groups = node.kubelet.process_group_ids()
            assert all(group_alive(g) for g in groups)
            return groups

    groups = run(scenario())
    assert groups and not any(group_alive(g) for g in groups)


def test_watchdog_reaps_groups_when_the_sandbox_is_killed(tmp_path: Path) -> None:
    """SIGKILL the process hosting a kubelet: its containers' groups must still disappear."""
    script = textwrap.dedent(f"""
        import asyncio, sys
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        from workload_helpers import pod_manifest, running_node, wait_for
        from tfjob_sandbox.api.resource_types import PODS

        async def main():
            async with running_node(Path({str(tmp_path)!r}), operator=False) as node:
                node.store.create(PODS, pod_manifest("victim", ["sh", "-c", "sleep 60 & sleep 60"]))
                await wait_for(lambda: node.kubelet.running_processes == 1)
                print(node.kubelet.process_group_ids()[0], flush=True)
                await asyncio.sleep(60)

        asyncio.run(main())
    """)
    host = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        pgid = int(host.stdout.readline())
        assert group_alive(pgid)
        os.kill(host.pid, signal.SIGKILL)
        host.wait()
        deadline = time.monotonic() + 10
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not group_alive(pgid)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()


def test_go_duration_matches_kubelet_messages() -> None:
    assert [go_duration(s) for s in (0.5, 1, 10, 80, 300)] == ["500ms", "1s", "10s", "1m20s", "5m0s"]

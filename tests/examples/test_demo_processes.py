"""The process harness: groups are stopped whole, stubborn processes are killed, leftovers are found."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from demo.processes import (
    RUN_MARKER,
    ProcessGroupSet,
    kill_strays,
    leftover_processes,
    new_run_marker,
    no_process_left_behind,
    wait_for_line,
    wait_until_gone,
)

PYTHON = sys.executable


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")


def test_stop_takes_the_whole_group_with_it(tmp_path: Path) -> None:
    log = tmp_path / "out.log"
    script = "import subprocess, time; c = subprocess.Popen(['sleep', '60']); print(c.pid, flush=True); "
    script += "time.sleep(60)"
    with ProcessGroupSet(marker=new_run_marker()) as processes:
        leader = processes.start("leader", [PYTHON, "-c", script], env=dict(os.environ), log_path=log)
        child = int(wait_for_line(leader, str.isdigit, timeout=30, what="the child's pid"))
        assert alive(child)
        status = leader.stop(grace=5)
    assert status == -signal.SIGTERM
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the forked child went with its group"


def test_a_finished_process_is_never_signalled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its PID may belong to another process by the second stop (ProcessGroupSet stops everything
    again on exit): stopping or crashing it again must not send anything."""
    with ProcessGroupSet(marker=new_run_marker()) as processes:
        sleeper = [PYTHON, "-c", "import time; time.sleep(60)"]
        stopped = processes.start("stopped", sleeper, env=dict(os.environ))
        crashed = processes.start("crashed", sleeper, env=dict(os.environ))
        first = stopped.stop(grace=5)
        crashed.crash()
        signalled: list[int] = []
        monkeypatch.setattr(os, "killpg", lambda pid, signum: signalled.append(pid))
        monkeypatch.setattr(os, "kill", lambda pid, signum: signalled.append(pid))
        assert stopped.stop() == first == -signal.SIGTERM
        assert crashed.stop() == crashed.crash() == -signal.SIGKILL
    assert signalled == []


def test_a_descendant_that_left_the_group_is_killed_and_reported(tmp_path: Path) -> None:
    script = (
        "import subprocess, time; c = subprocess.Popen(['sleep', '60'], start_new_session=True, env={}); "
        "print(c.pid, flush=True); time.sleep(60)"
    )
    processes = ProcessGroupSet(marker=new_run_marker(), settle=0.5)
    with processes:
        leader = processes.start(
            "leader", [PYTHON, "-c", script], env=dict(os.environ), log_path=tmp_path / "l"
        )
        escapee = int(wait_for_line(leader, str.isdigit, timeout=30, what="the child's pid"))
    assert [(stray.pid, stray.why) for stray in processes.survivors] == [(escapee, "outlived leader")]
    deadline = time.monotonic() + 5
    while alive(escapee) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(escapee)


def test_crash_kills_the_leader_and_every_descendant_at_once(tmp_path: Path) -> None:
    script = (
        "import signal, subprocess, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "c = subprocess.Popen(['sleep', '60'], start_new_session=True); print(c.pid, flush=True); "
        "time.sleep(60)"
    )
    with ProcessGroupSet(marker=new_run_marker(), settle=0.5) as processes:
        leader = processes.start(
            "leader", [PYTHON, "-c", script], env=dict(os.environ), log_path=tmp_path / "l"
        )
        child = int(wait_for_line(leader, str.isdigit, timeout=30, what="the child's pid"))
        started = time.monotonic()
        assert leader.crash() == -signal.SIGKILL
        assert time.monotonic() - started < 5, "no grace period"
        deadline = time.monotonic() + 5
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child)
    assert processes.survivors == []


def test_a_process_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    script = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    with ProcessGroupSet(marker=new_run_marker()) as processes:
        stubborn = processes.start(
            "stubborn", [PYTHON, "-c", script], env=dict(os.environ), log_path=tmp_path / "l"
        )
        wait_for_line(stubborn, lambda line: line == "ready", timeout=30, what="ready")
        started = time.monotonic()
        assert stubborn.stop(grace=0.5) == -signal.SIGKILL
        assert time.monotonic() - started < 5


def test_wait_for_line_reports_an_early_exit_with_the_log(tmp_path: Path) -> None:
    with ProcessGroupSet(marker=new_run_marker()) as processes:
        quitter = processes.start(
            "quitter",
            [PYTHON, "-c", "print('boom'); raise SystemExit(3)"],
            env=dict(os.environ),
            log_path=tmp_path / "q",
        )
        with pytest.raises(RuntimeError, match=r"quitter exited \(3\) before 'ready':\nboom"):
            wait_for_line(quitter, lambda line: line == "ready", timeout=30, what="'ready'")


def test_leftovers_are_found_by_marker_and_by_directory_then_killed(tmp_path: Path) -> None:
    marker = new_run_marker()
    workdir = tmp_path / "run"
    (workdir / "pod").mkdir(parents=True)
    # An escapee with the marker (own session, like the sandbox's watchdog) and one without it
    # working in the run's directory (like a pod, which does not inherit the environment).
    escapee = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, RUN_MARKER: marker}, start_new_session=True
    )
    pod = subprocess.Popen(["sleep", "60"], env={}, cwd=workdir / "pod", start_new_session=True)
    unrelated = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        found = {stray.pid: stray.why for stray in leftover_processes(marker=marker, directory=workdir)}
        assert found == {escapee.pid: "carries the run marker", pod.pid: f"works in {workdir / 'pod'}"}
        kill_strays(leftover_processes(marker=marker, directory=workdir))
        escapee.wait(timeout=5)
        pod.wait(timeout=5)
        assert wait_until_gone(marker=marker, directory=workdir, timeout=5) == []
        assert unrelated.poll() is None, "a process of no run is left alone"
    finally:
        for process in (escapee, pod, unrelated):
            process.kill()
            process.wait()


def test_no_process_left_behind_reports_and_kills_what_escaped(tmp_path: Path) -> None:
    marker = new_run_marker()
    report: list = []
    escapee = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, RUN_MARKER: marker}, start_new_session=True
    )
    try:
        with no_process_left_behind(marker=marker, directory=tmp_path, report=report, settle=0.5):
            # Wait until the scan sees the escapee before the block ends: one clean-clone run's
            # scan, made right after Popen returned, missed it (cause not found).
            deadline = time.monotonic() + 10
            while escapee.pid not in {p.pid for p in leftover_processes(marker=marker, directory=tmp_path)}:
                assert time.monotonic() < deadline, "the escapee never showed its run marker in /proc"
                time.sleep(0.05)
        assert [stray.pid for stray in report] == [escapee.pid]
        assert escapee.wait(timeout=5) == -signal.SIGKILL
    finally:
        # Never leak the child into later tests (an unreaped Popen is a ResourceWarning there).
        if escapee.poll() is None:
            escapee.kill()
        escapee.wait()

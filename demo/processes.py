"""Start helper processes in their own process groups, stop them by PID, and prove nothing is left.

Why: the demo and the full-stack test run a sandbox cluster and several Airflow processes, each of
which forks more (LocalExecutor workers, task supervisors, pods run as local processes).  A run
that is interrupted or fails must not leave any of them behind on a shared machine, and we may
only ever signal processes we started — never by name.  So every process is started in a new
session (its own process group), stopped with SIGTERM to its leader, then SIGKILL to whatever
remains of its group; and :func:`leftover_processes` scans ``/proc`` for anything still carrying
the run's marker variable or working inside the run's directory (pods get neither the marker —
they do not inherit the environment — nor our group, but they run under the run's directory).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

#: Environment variable that marks every process of one run (children inherit it).
RUN_MARKER = "TFJOB_PROVIDER_RUN"


def new_run_marker() -> str:
    return uuid.uuid4().hex


@dataclass
class ManagedProcess:
    """One started process: the leader of its own process group (``pgid == pid``)."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path | None
    _log_file: IO[bytes] | None = field(default=None, repr=False)
    #: Set once stopped or crashed: the leader is reaped, so its PID (the group's id) may belong
    #: to someone else's process by now and must not be signalled again.
    _finished: bool = field(default=False, repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal_group(self, signum: int) -> bool:
        """Send ``signum`` to the whole process group; False if nothing of it exists any more."""
        try:
            os.killpg(self.pid, signum)
        except ProcessLookupError:
            return False
        except PermissionError:  # the group id was reused by someone else's process: not ours
            return False
        return True

    def stop(self, *, grace: float = 10.0) -> int | None:
        """SIGTERM the leader, wait up to ``grace`` seconds, then SIGKILL the whole group; returns
        the leader's exit status (None if it had to be killed and could not be reaped).  Stopping
        again signals nothing."""
        if self._finished:
            self._close_log()
            return self.popen.returncode
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.signal_group(signal.SIGKILL)
        # Whatever the leader left in its group (forked workers, task processes) goes too.
        self.signal_group(signal.SIGKILL)
        try:
            status = self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            status = None
        self._close_log()
        self._finished = status is not None
        return status

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def crash(self) -> int | None:
        """Die as on a lost machine: SIGKILL the group and every descendant at once, no grace."""
        if self._finished:
            return self.popen.returncode
        family = descendants(self.pid)
        self.signal_group(signal.SIGKILL)
        for pid, _started in family:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            status: int | None = self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None
        self._finished = True
        return status

    def log_text(self) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(encoding="utf-8", errors="replace")


class ProcessGroupSet:
    """Processes started for one run, stopped together (newest first) on exit — also on errors.

    Before stopping, every descendant of every started process is noted (PID and start time);
    descendants that outlive the stop — a forked child in a group of its own, whose environment
    was overwritten by ``setproctitle`` — are killed and listed in :attr:`survivors`.

    :param marker: value of :data:`RUN_MARKER` given to every process started here.
    :param settle: seconds a noted descendant may take to exit after its parent stopped.
    """

    def __init__(self, *, marker: str, settle: float = 5.0) -> None:
        self.marker = marker
        self.settle = settle
        self.processes: list[ManagedProcess] = []
        self.survivors: list[StrayProcess] = []

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None = None,
        log_path: Path | None = None,
    ) -> ManagedProcess:
        """Start ``argv`` in a new session with output to ``log_path`` (or discarded)."""
        environment = {**env, RUN_MARKER: self.marker}
        log_file = open(log_path, "ab") if log_path is not None else None  # noqa: SIM115 (owned by the process)
        popen = subprocess.Popen(
            list(argv),
            env=environment,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log_file if log_file is not None else subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        process = ManagedProcess(name=name, popen=popen, log_path=log_path, _log_file=log_file)
        self.processes.append(process)
        return process

    def stop_all(self, *, grace: float = 10.0) -> dict[str, int | None]:
        """Stop every process still running, newest first; name → exit status."""
        noted = {process.name: descendants(process.pid) for process in self.processes if process.alive()}
        statuses: dict[str, int | None] = {}
        for process in reversed(self.processes):
            statuses[process.name] = process.stop(grace=grace)
        deadline = time.monotonic() + self.settle
        for name, family in noted.items():
            for pid, started in family:
                while _start_time(pid) == started and time.monotonic() < deadline:
                    time.sleep(0.1)  # a child still exiting after its parent
                if _start_time(pid) == started:
                    command = (
                        _read(Path(f"/proc/{pid}/cmdline")).replace(b"\0", b" ").decode(errors="replace")
                    )
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                    self.survivors.append(
                        StrayProcess(pid=pid, command=command.strip(), why=f"outlived {name}")
                    )
        return statuses

    def __enter__(self) -> ProcessGroupSet:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop_all()


def wait_for_line(
    process: ManagedProcess, predicate: Callable[[str], bool], *, timeout: float, what: str
) -> str:
    """The first line of the process's log that satisfies ``predicate``; RuntimeError (with the log's
    end) if the process exits first or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        for line in process.log_text().splitlines():
            if predicate(line):
                return line
        if not process.alive():
            raise RuntimeError(
                f"{process.name} exited ({process.popen.returncode}) before {what}:\n{tail(process)}"
            )
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{process.name} did not report {what} within {timeout:.0f}s:\n{tail(process)}"
            )
        time.sleep(0.1)


def tail(process: ManagedProcess, lines: int = 30) -> str:
    return "\n".join(process.log_text().splitlines()[-lines:])


@dataclass(frozen=True)
class StrayProcess:
    """A process found after a run that should have ended with it."""

    pid: int
    command: str
    why: str


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (with the PID, a unique identity), or
    None when it is gone or a zombie."""
    raw = _read(Path(f"/proc/{pid}/stat")).decode(errors="replace")
    if not raw:
        return None
    fields = raw.rsplit(")", 1)[-1].split()
    if not fields or fields[0] == "Z":
        return None
    return int(fields[19])


def _parent(pid: int) -> int | None:
    raw = _read(Path(f"/proc/{pid}/stat")).decode(errors="replace")
    fields = raw.rsplit(")", 1)[-1].split()
    return int(fields[1]) if len(fields) > 1 else None


def descendants(root: int) -> set[tuple[int, int]]:
    """``(pid, start time)`` of every living descendant of ``root`` (Linux; empty elsewhere)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return set()
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            parent = _parent(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found: set[tuple[int, int]] = set()
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        started = _start_time(pid)
        if started is not None:
            found.add((pid, started))
        stack.extend(children.get(pid, []))
    return found


def leftover_processes(*, marker: str, directory: Path, exclude: Sequence[int] = ()) -> list[StrayProcess]:
    """Processes of this user that carry ``RUN_MARKER=marker`` or work inside ``directory``.

    Linux only (``/proc``); elsewhere the list is empty, and process groups are the only guard.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    wanted = f"{RUN_MARKER}={marker}".encode()
    root = str(directory.resolve())
    skip = {os.getpid(), *exclude}
    strays: list[StrayProcess] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        environ = _read(entry / "environ").split(b"\0")
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            cwd = ""
        why = ""
        if wanted in environ:
            why = "carries the run marker"
        elif cwd == root or cwd.startswith(root + os.sep):
            why = f"works in {cwd}"
        if why:
            command = _read(entry / "cmdline").replace(b"\0", b" ").decode(errors="replace").strip()
            if command:  # zombies have no command line; their parent reaps them
                strays.append(StrayProcess(pid=int(entry.name), command=command, why=why))
    return strays


def kill_strays(strays: Sequence[StrayProcess]) -> None:
    """SIGKILL processes :func:`leftover_processes` found (each was identified as this run's)."""
    for stray in strays:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(stray.pid, signal.SIGKILL)


def wait_until_gone(
    *, marker: str, directory: Path, timeout: float = 10.0, exclude: Sequence[int] = ()
) -> list[StrayProcess]:
    """Poll until no process of the run is left (exiting ones get a moment); what remains after
    ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        strays = leftover_processes(marker=marker, directory=directory, exclude=exclude)
        if not strays or time.monotonic() > deadline:
            return strays
        time.sleep(0.2)


@contextlib.contextmanager
def no_process_left_behind(
    *, marker: str, directory: Path, report: list[StrayProcess], settle: float = 10.0
) -> Iterator[None]:
    """After the block, give the run's processes ``settle`` seconds to exit, then kill what is left
    of them and append it to ``report``."""
    try:
        yield
    finally:
        strays = wait_until_gone(marker=marker, directory=directory, timeout=settle)
        kill_strays(strays)
        report.extend(strays)

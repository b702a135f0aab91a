"""``ProcessRunner``: container processes in their own sessions, exits learnt from pidfds, no orphans.

A watchdog process kills every registered process group if the sandbox dies, even by SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

_WATCHDOG_SOURCE = """
import os, signal, sys
groups = set()
for line in sys.stdin:
    line = line.strip()
    if line[:1] == "+":
        groups.add(int(line[1:]))
    elif line[:1] == "-":
        groups.discard(int(line[1:]))
for group in groups:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
"""

#: How often the fallback (no pidfd) reaper looks for exited children, in seconds.
_POLL_INTERVAL = 0.05


@dataclass(eq=False)
class ChildProcess:
    """One running container process; ``pgid == pid`` because each child leads its own session."""

    pid: int
    popen: subprocess.Popen[bytes]
    on_exit: Callable[[int], None]
    pidfd: int | None = None
    exit_code: int | None = None
    exited: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def running(self) -> bool:
        return self.exit_code is None


def container_exit_code(returncode: int) -> int:
    """A container runtime's exit code: a death by signal N is reported as 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


class ProcessRunner:
    """Spawns and supervises container processes on the running event loop."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._children: dict[int, ChildProcess] = {}
        self._watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG_SOURCE],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._use_pidfd = hasattr(os, "pidfd_open")
        self._poller: asyncio.TimerHandle | None = None
        self._closed = False

    @property
    def children(self) -> list[ChildProcess]:
        return list(self._children.values())

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        log_path: Path,
        on_exit: Callable[[int], None],
    ) -> ChildProcess:
        """Start ``argv`` in a new session; ``on_exit(exit_code)`` runs on the loop once it is gone.

        Raises ``OSError`` (e.g. ``FileNotFoundError``) when the program cannot be executed.
        """
        if self._closed:
            raise RuntimeError("the process runner is shut down")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log_file:
            popen = subprocess.Popen(
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        child = ChildProcess(pid=popen.pid, popen=popen, on_exit=on_exit)
        self._children[child.pid] = child
        self._tell_watchdog(f"+{child.pid}\n")
        if self._use_pidfd:
            try:
                child.pidfd = os.pidfd_open(child.pid)
            except OSError:
                self._use_pidfd = False
        if child.pidfd is not None:
            self._loop.add_reader(child.pidfd, self._reap, child)
        else:
            self._ensure_poller()
        return child

    def signal_group(self, child: ChildProcess, sig: int) -> None:
        """Send ``sig`` to the child's whole process group (ignored once it is gone)."""
        if child.running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, sig)

    async def shutdown(self, *, grace: float = 2.0) -> None:
        """SIGTERM every group, SIGKILL what is left after ``grace`` seconds, reap everything."""
        self._closed = True
        children = [c for c in self._children.values() if c.running]
        for child in children:
            self.signal_group(child, signal.SIGTERM)
        if children:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(c.exited.wait() for c in children)), grace)
        for child in list(self._children.values()):
            self.signal_group(child, signal.SIGKILL)
        for child in list(self._children.values()):
            # Exit notifications may not have run yet; reap synchronously (the groups are dead).
            child.popen.wait()
            self._finish(child)
        if self._poller is not None:
            self._poller.cancel()
        self._close_watchdog()

    # -- exit handling --------------------------------------------------------------------------

    def _reap(self, child: ChildProcess) -> None:
        """The pidfd is readable: the child is a zombie.  Tear down its group, then reap it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
        child.popen.wait()
        self._finish(child)

    def _finish(self, child: ChildProcess) -> None:
        if child.pidfd is not None:
            self._loop.remove_reader(child.pidfd)
            os.close(child.pidfd)
            child.pidfd = None
        if child.exit_code is not None:
            return
        returncode = child.popen.returncode
        child.exit_code = container_exit_code(returncode if returncode is not None else -signal.SIGKILL)
        self._children.pop(child.pid, None)
        self._tell_watchdog(f"-{child.pid}\n")
        child.exited.set()
        try:
            child.on_exit(child.exit_code)
        except Exception:
            log.exception("exit callback for pid %d failed", child.pid)

    def _ensure_poller(self) -> None:
        if self._poller is None and not self._closed:
            self._poller = self._loop.call_later(_POLL_INTERVAL, self._poll)

    def _poll(self) -> None:
        self._poller = None
        for child in list(self._children.values()):
            if child.pidfd is None and child.popen.poll() is not None:
                self._reap(child)
        if any(c.pidfd is None for c in self._children.values()):
            self._ensure_poller()

    # -- watchdog -------------------------------------------------------------------------------

    def _tell_watchdog(self, line: str) -> None:
        stdin = self._watchdog.stdin
        if stdin is None or stdin.closed:
            return
        try:
            os.write(stdin.fileno(), line.encode())
        except OSError:
            log.warning("the sandbox's process watchdog is gone; orphans are no longer guarded against")

    def _close_watchdog(self) -> None:
        if self._watchdog.stdin is not None and not self._watchdog.stdin.closed:
            self._watchdog.stdin.close()
        try:
            self._watchdog.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._watchdog.kill()
            self._watchdog.wait()

"""Helpers of the subprocess tests: live processes by session or group, bounded waits."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

#: Fields of /proc/PID/stat after the command name: state, ppid, pgrp, session, ...
_PPID, _PGRP, _SESSION = 1, 2, 3


def live_processes(field: str, value: int) -> list[int]:
    """Live (non-zombie) processes whose ``field`` ("ppid", "pgrp" or "session") is ``value``."""
    index = {"ppid": _PPID, "pgrp": _PGRP, "session": _SESSION}[field]
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[index]) == value and fields[0] not in "ZX":
            pids.append(int(entry))
    return pids


def wait_until(cond: Callable[[], object], timeout: float, step: float = 0.05) -> bool:
    """Poll ``cond`` until it is true or ``timeout`` seconds have passed; its last value.
    Waits for events take :data:`CEILING` as ``timeout``; timed properties a bound
    scaled by :func:`patience`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


#: Ceiling (seconds) of every wait for a subprocess event (a record, an exit, a worker):
#: never reached unless something hangs, so a loaded machine only makes the tests slower.
CEILING = 1800.0


def patience() -> float:
    """How many times longer than on an idle machine a timed property may take here: the
    1-minute load average per core, at least 1 (a response time asserted as "within 2 s"
    on 2 idle cores becomes "within 2 s x patience()" on a loaded laptop)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1.0, load / (os.cpu_count() or 1))


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc`` and every live process of its process group, then reap it (the
    cleanup of a test that started ``proc`` with ``start_new_session=True``)."""
    for pid in [*live_processes("pgrp", proc.pid), proc.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    proc.communicate(timeout=CEILING)

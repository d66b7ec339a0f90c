"""Helpers of the subprocess tests: live processes by session or group, bounded waits."""

from __future__ import annotations

import os
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
    """Poll ``cond`` until it is true or ``timeout`` seconds have passed; its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())

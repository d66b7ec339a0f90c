"""What a command printed, as the hostile tests read it."""

from __future__ import annotations


def error_line(res) -> str:
    """The one line of error output of a CliRunner result (asserting there is exactly one,
    starting with ``error: ``)."""
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]

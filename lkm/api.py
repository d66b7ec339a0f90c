"""lkm from Python: run a spec and rank a new method against the benchmark, as the
``lkm run`` and ``lkm compare`` commands do, returning data frames instead of printing."""

from __future__ import annotations

__all__: list[str] = []

"""The picture of what imports what in docs/architecture.md, generated from the code.

    python scripts/import_graph.py --write docs/architecture.md   # rewrite the block
    python scripts/import_graph.py --check docs/architecture.md   # exit 1 if it is stale

Reads lkm's imports with grimp (the graph import-linter checks), collapses them to the
top-level packages and modules of lkm, drops every arrow implied by two others
(transitive reduction) and writes a Mermaid flowchart between the markers
``<!-- import-graph:begin -->`` and ``<!-- import-graph:end -->``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import grimp

BEGIN, END = "<!-- import-graph:begin -->", "<!-- import-graph:end -->"


def unit_edges(package: str = "lkm") -> tuple[list[str], set[tuple[str, str]]]:
    """The top-level units of ``package`` and the imports between them (``a`` imports ``b``)."""
    graph = grimp.build_graph(package, cache_dir=None)
    units = sorted(m.split(".")[1] for m in graph.find_children(package))
    edges = set()
    for a in units:
        for b in units:
            if a != b and graph.direct_import_exists(importer=f"{package}.{a}", imported=f"{package}.{b}",
                                                     as_packages=True):
                edges.add((a, b))
    return units, edges


def reduced(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """``edges`` without those implied by a longer path."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)

    def reachable(start: str, skip: tuple[str, str]) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            n = todo.pop()
            for m in succ.get(n, ()):
                if (n, m) != skip and m not in seen:
                    seen.add(m)
                    todo.append(m)
        return seen

    return {(a, b) for a, b in edges if b not in reachable(a, (a, b))}


def mermaid(package: str = "lkm") -> str:
    units, edges = unit_edges(package)
    lines = ["```mermaid", "flowchart TD"]
    lines += [f"  {u}[{package}.{u}]" for u in units]
    lines += [f"  {a} --> {b}" for a, b in sorted(reduced(edges))]
    lines.append("```")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="rewrite the block in this Markdown file")
    group.add_argument("--check", type=Path, help="exit 1 when the block in this file is stale")
    args = parser.parse_args()
    path = args.write or args.check
    text = path.read_text(encoding="utf-8")
    block = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.DOTALL)
    if not block.search(text):
        print(f"{path}: no {BEGIN} ... {END} block", file=sys.stderr)
        return 1
    new = block.sub(lambda _: f"{BEGIN}\n{mermaid()}{END}", text)
    if args.check:
        if new != text:
            print(f"{path}: the import graph is stale; run `python scripts/import_graph.py --write {path}`",
                  file=sys.stderr)
            return 1
        return 0
    path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

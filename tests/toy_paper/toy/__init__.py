"""Toy, Example — "A toy paper": the reproduction (``lkm reproduce toy``).

The sixth paper of docs/architecture.md's walkthrough ("How to add a paper"), followed
by tests/test_add_a_paper.py: LPL against SVM on two moons.
"""

from __future__ import annotations

from lkm.papers.toy import outputs  # noqa: F401  (registers the paper's outputs)
from lkm.papers.toy.claims import CLAIMS, PERTURBED, evaluate_claims, write_summary

from lkm.reproduction.runs import experiments

#: The paper's experiments (specs/ beside this file), in the order they run.
SPECS = experiments(__name__, "toy_moons")

#: Where the paper stands in the report and in `lkm reproduce all`.
ORDER = 6

__all__ = ["CLAIMS", "ORDER", "PERTURBED", "SPECS", "evaluate_claims", "write_summary"]

"""The reproduction framework: what every reproduced paper shares, with no paper named.

A paper package (:mod:`lkm.papers`) plugs in by defining ``ORDER``, ``SPECS``,
``evaluate_claims`` and ``write_summary`` (:mod:`.paper`). The framework gives it its
experiments and finished runs (:mod:`.runs`), paired comparisons (:mod:`.paired`),
claims tables decided by tests (:mod:`.claims`), the fragility check (:mod:`.perturbed`),
the numbers the paper prints and the named causes of where we differ (:mod:`.paper`),
the docs' generated tables (:mod:`.docs`) and the one report of every paper
(:mod:`.site`)."""

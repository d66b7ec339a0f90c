"""Studies: experiments that measure something other than a classifier's accuracy.

A study is a function ``(X, y, **params) -> list[dict]`` registered under a key with
:func:`study`. Each returned row is a flat dict of numbers and strings (one line of a
result table). A spec lists studies under ``studies:`` (``name``, ``study`` = the key,
``params``, ``sweep``); the runner plans one task per (dataset, study, parameter
setting) on the **whole dataset** (after the spec's ``preprocessing``, fitted on all
rows) -- not per split, since a study does not train and test anything -- and stores
one record per task with ``kind: "study"`` and the rows under ``rows``.

Parameter *names* are checked against the function's signature when a spec is
loaded; parameter *values* by the study's optional ``check`` function, which raises
``ValueError`` naming the parameter. A study may name the tables and figures
(registered with ``@table`` / ``@figure`` in :mod:`lkm.report`) that read its records;
a spec that lists a study but no ``outputs`` writes those.
"""

from __future__ import annotations

from lkm.studies import invariance  # noqa: F401  (registers knn_invariance)
from lkm.studies.registry import STUDIES, STUDY_INFO, StudyInfo, study, study_outputs, study_params

__all__ = ["STUDIES", "STUDY_INFO", "StudyInfo", "study", "study_outputs", "study_params"]

"""
Ranking a new method against the benchmark with ``lkm.api.compare``
===================================================================

``lkm.api.compare`` ranks a classifier against every method of lkm's cross-paper
benchmark -- the 14 methods of the five reproduced papers and 5 scikit-learn baselines on
26 real data sets -- while fitting only the new classifier: it runs on the benchmark's
exact splits (each set subsampled to at most 600 rows, stratified 5-fold CV) and is
joined to the published results that ship with lkm. The ranking follows Demšar
(*Statistical comparisons of classifiers over multiple data sets*, JMLR 2006): average
ranks, the Friedman test and the Nemenyi critical difference, with Wilcoxon–Holm and
Bayesian signed-rank tests against each method. Here the new method is scikit-learn's
ridge classifier with a fixed ``alpha`` (one fit per outer fold, no tuning), so the run
takes well under a minute.
"""

# %%
# Run and rank
# ------------
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

from lkm.api import compare

out = Path(tempfile.mkdtemp()) / "ridge"
result = compare("sklearn.linear_model.RidgeClassifier", {"alpha": 1.0}, name="Ridge", out=out)
print(f"{result.name}: rank {result.rank} of {result.n_methods} over {result.n_datasets} data sets "
      f"(average rank {result.average_ranks[result.name]:.2f}; Nemenyi CD {result.cd:.2f})")
print(result.pairwise[["b", "a wins / ties / losses", "mean a − b (points)", "Holm p"]].head(8).to_string(index=False))

# %%
# Average ranks
# -------------
# Methods whose average rank lies within the critical difference of Ridge's are not
# significantly different from it (Nemenyi, alpha = 0.05). ``result.folder`` also holds
# critical_difference.png, accuracy_time.png and the tables in Markdown, CSV and LaTeX.
ranks = result.average_ranks
names = list(ranks)[::-1]
colors = ["#c0392b" if name == result.name else "#7f8c8d" for name in names]
fig, ax = plt.subplots(figsize=(6, 5))
ax.barh(names, [ranks[name] for name in names], color=colors)
mine = ranks[result.name]
ax.axvspan(mine - result.cd, mine + result.cd, color="#c0392b", alpha=0.12, label="within the CD of Ridge")
ax.set_xlabel("average rank over the data sets (1 = best)")
ax.set_title("Ridge against the cross-paper benchmark")
ax.legend(loc="lower right")
fig.tight_layout()

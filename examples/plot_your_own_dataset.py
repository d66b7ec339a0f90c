"""
Your own data set: a CSV file in a spec and in Python
=====================================================

lkm reads a user's own file the way docs/specs.md describes: a ``datasets:`` entry with
``path:`` and ``target:`` (the label column; CSV, TSV, ARFF, svmlight, npz or an OpenML
cache), its sha256 pinned when the spec is read, so a changed file gets new task ids
and is refused where pinned. Here a real data set -- the chemical analyses of 178 Italian
wines from three cultivars (UCI *wine*, bundled with scikit-learn) -- is written to a CSV
file in a temporary folder, then (1) run through a spec with ``lkm.api.run``: localized
projection learning (Tsuji, Kudo and Tanaka, *Localized Projection Learning*, 2010)
against LIBSVM's SVM, and (2) loaded in Python with :func:`lkm.data.user.user_dataset`
and :func:`lkm.data.load_dataset` for scikit-learn's cross-validation.
"""

# %%
# Write the CSV file
# ------------------
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
from sklearn.datasets import load_wine
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from lkm.api import run
from lkm.data import load_dataset
from lkm.data.user import user_dataset
from lkm.methods import LocalizedProjectionLearning

folder = Path(tempfile.mkdtemp())
wine = load_wine(as_frame=True).frame.rename(columns={"target": "cultivar"})
csv = folder / "wine.csv"
wine.to_csv(csv, index=False)
print(f"{csv.name}: {len(wine)} rows, columns {', '.join(wine.columns[:4])}, ..., cultivar")

# %%
# (1) In a spec: ``path`` and ``target``
# --------------------------------------
spec = {
    "name": "my-wine",
    "datasets": [{"path": str(csv), "target": "cultivar", "name": "wine-csv"}],
    "preprocessing": "standardize",
    "protocol": {"kind": "kfold", "folds": 5, "seed": 0},
    "methods": [
        {"name": "LPL", "estimator": "lpl", "params": {"k": "auto"}},
        {"name": "SVM", "estimator": "svm", "params": {"C": 1.0}},
    ],
    "sweep": {"sigma": [1.0, 2.0, 4.0, 8.0]},
}
result = run(spec, folder / "run")
print(result.summary[["dataset", "method", "selected", "accuracy % (ours)"]].to_string(index=False))

# %%
# (2) In Python: the same file as an lkm data set
# -----------------------------------------------
info = user_dataset("wine-csv", csv, target="cultivar")
data = load_dataset(info)
print(f"{data.name}: X {data.X.shape}, classes {data.classes}, sha256 {info.files[0].sha256[:12]}...")
folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
ks = [3, 5, 9, 15, 25]
scores = [100 * cross_val_score(make_pipeline(StandardScaler(), LocalizedProjectionLearning(sigma=2.0, k=k)),
                                data.X, data.y, cv=folds).mean() for k in ks]
for k, score in zip(ks, scores, strict=True):
    print(f"LPL, k = {k:2d}: {score:.2f} %")

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(ks, scores, marker="o")
ax.set_xlabel("neighbours k of LPL")
ax.set_ylabel("5-fold CV accuracy (%)")
ax.set_title("wine.csv: LPL (sigma = 2) against k")
fig.tight_layout()

# %%
# ``lkm datasets add wine.csv --target cultivar`` registers the file under a name once,
# so specs can list it like a packaged set.

"""
Reading the shipped results with pandas
=======================================

lkm ships the records of every run behind its published tables: the *results pack*
(:func:`lkm.api.published_folder`; ``docs/runs`` in a clone), one run folder per spec,
every file checked against the pack's manifest. :func:`lkm.api.read_records` reads a run
folder's records -- one row per fit: data set, method, parameters, outer fold, accuracy,
seconds -- into a DataFrame. Here: the cross-paper benchmark (the methods of the five
papers -- Tsuji, Kudo, Tanaka 2010; Shin, Cho 2005; Li, Chen, Tang 2010; Cevikalp,
Larlus, Douze, Jurie 2007; Yang, King, Lyu 2008 -- and five scikit-learn baselines on 26
real data sets), pivoted to accuracy by data set and method, and the methods' accuracy
against their fit time.
"""

# %%
# The pack and the benchmark's records
# ------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from lkm.api import published_folder, read_records

pack = published_folder()
print("run folders in the pack:", len([p for p in pack.iterdir() if (p / "spec.yaml").is_file()]))
records = read_records(pack / "cross_paper")
ok = records[records["status"] == "ok"]
print(f"cross_paper: {len(records)} fits ({len(ok)} ok) of {records['method'].nunique()} methods "
      f"on {records['dataset'].nunique()} data sets")

# %%
# Accuracy by data set and method
# -------------------------------
# Mean over the 5 outer folds (each fold's setting was tuned by inner CV).
pivot = ok.pivot_table(index="dataset", columns="method", values="accuracy", aggfunc="mean") * 100
order = pivot.mean().sort_values(ascending=False).index
pivot = pivot[order]
print(pivot.iloc[:8, :6].round(1).to_string())

fig, ax = plt.subplots(figsize=(9, 7))
image = ax.imshow(pivot.to_numpy(), aspect="auto", cmap="viridis")
ax.set_xticks(range(len(order)), order, rotation=60, ha="right")
ax.set_yticks(range(len(pivot.index)), pivot.index)
fig.colorbar(image, ax=ax, label="accuracy (%)")
ax.set_title("cross-paper benchmark: mean accuracy over 5 outer folds")
fig.tight_layout()

# %%
# Accuracy against time
# ---------------------
# Median fit (inner-CV search + refit) + predict seconds per outer fold.
seconds = (ok["fit_seconds"] + ok["predict_seconds"]).groupby(ok["method"]).median()
fig, ax = plt.subplots(figsize=(6, 4.5))
ax.scatter(seconds[order], pivot.mean()[order], color="#2c3e50")
for method in order:
    ax.annotate(method, (seconds[method], pivot[method].mean()), fontsize=7, xytext=(3, 3),
                textcoords="offset points")
ax.set_xscale("log")
ax.set_xlabel("median seconds per outer fold")
ax.set_ylabel("mean accuracy over the data sets (%)")
ax.set_title("accuracy against time")
fig.tight_layout()
print(f"fastest: {seconds.idxmin()} ({seconds.min():.3g} s), slowest: {seconds.idxmax()} "
      f"({seconds.max():.3g} s); mean accuracy range {np.ptp(pivot.mean()):.1f} points")

"""The mathematics every layer above shares: kernels and squared distances
(:mod:`.kernels`), the tangent distance (:mod:`.tangent`), k-nearest neighbours
(:mod:`.neighbors`), preprocessing fitted on training rows (:mod:`.preprocessing`),
scores (:mod:`.metrics`), paired tests and rankings (:mod:`.stats`), the BLAS thread
cap (:mod:`.threads`), pseudo-inverse solves of PSD systems (:mod:`.psd_pinv`), and the
manifold estimators' linear algebra (:mod:`.manifold_solvers`), heat-kernel semigroup
algebra (:mod:`.heat_semigroup`) and k-NN graph Laplacian (:mod:`.graph_laplacian`).
Imports only :mod:`lkm.files` and :mod:`lkm.errors` of lkm."""

"""The mathematics every layer above shares: kernels and squared distances
(:mod:`.kernels`), the tangent distance (:mod:`.tangent`), k-nearest neighbours
(:mod:`.neighbors`), preprocessing fitted on training rows (:mod:`.preprocessing`),
scores (:mod:`.metrics`), paired tests and rankings (:mod:`.stats`) and the BLAS thread
cap (:mod:`.threads`). Imports only :mod:`lkm.files` and :mod:`lkm.errors` of lkm."""

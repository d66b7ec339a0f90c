"""`lkm bench`: lkm's speed measured against reference libraries in the same run —
speed ratios on one fold (:mod:`.speed`), time and memory against n (:mod:`.scaling`)
and the cluster engine against local workers (:mod:`.cluster`)."""

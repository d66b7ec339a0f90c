"""The execution engine: a validated spec becomes tasks (:mod:`.runner`), the tasks run
in worker processes (:mod:`.workers`) or on a dask cluster (:mod:`.cluster`), and every
finished task is appended to its run folder (:mod:`.store`) with the machine's
provenance (:mod:`.environment`)."""

"""The practical threshold of a side-by-side (interleaved) comparison: B is called slower only when it is confidently
more than this much slower than A; and the false-alarm rates every verdict and change point uses by default.
Stored-baseline thresholds live with the baselines (:mod:`harness.judging.baseline`)."""

INTERLEAVED = 0.02  # +2%
# the false-alarm rate of a verdict (of a session's family of verdicts, Holm-corrected), unless a baseline says another
ALPHA = 0.05
CHANGE_ALPHA = 0.05  # the false-alarm rate of the change points of one series of the history
# peak memory: a change counts only beyond both a fraction of the baseline and a number of MiB (the memory verdict,
# the census diff; a baseline may set its own memory_rel / memory_abs_mib)
MEMORY_REL = 0.02
MEMORY_ABS_MIB = 64

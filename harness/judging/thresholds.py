"""The practical threshold of a side-by-side (interleaved) comparison: B is called slower only when it is confidently
more than this much slower than A. Stored-baseline thresholds live with the baselines (:mod:`harness.judging.baseline`)."""

INTERLEAVED = 0.02  # +2%

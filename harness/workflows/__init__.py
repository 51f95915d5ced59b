"""What combines measurements into an answer: the confirmation of stored-baseline regressions, and the advice on
the fastest split."""

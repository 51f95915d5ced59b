"""``python -m harness bisect``: which package, which release, which commit changed a case's work or its time.

* :mod:`harness.bisect.plan`: the search, pure (which candidate to measure next, given what was measured);
* :mod:`harness.bisect.envs`: one environment per candidate, built once and cached (a venv on the base environment
  with the candidate installed by pip from an index, a wheel directory, or a commit of a checkout);
* :mod:`harness.bisect.steps`: one measurement of a candidate (a census run, or an interleaved comparison);
* :mod:`harness.bisect.search`: the loop that asks the plan and makes the steps;
* :mod:`harness.bisect.report`: report.json, report.md and the printed summary.

docs/bisect.md says how to use it.
"""

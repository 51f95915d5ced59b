"""A session of the suite's runs and what is judged from results dirs: the pytest session, census runs, same-machine
A/B rounds, and stored-baseline comparisons."""

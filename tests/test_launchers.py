"""Launchers: a pre-started worker that died while it waited is replaced by a fresh launch, and no worker is left."""

from types import SimpleNamespace

import pytest

from harness.measuring.resident import WorkerDied
from harness.sidebyside.launchers import Prestarted


class FakeWorker:
    def __init__(self, side, launch, hold, dies):
        self.side, self.launch, self.hold_cpus, self.dies = side, launch, hold, dies
        self.started = self.killed = False

    def release(self):
        if self.dies:
            raise WorkerDied(
                f"resident worker {self.side.upper()} (launch {self.launch}) while pre-starting: "
                "it was killed by SIGKILL"
            )

    def start(self, wait=True):
        if self.dies == "fresh":
            raise WorkerDied("fresh start failed")
        self.started = True

    def kill(self):
        self.killed = True


class FakeFactory:
    def __init__(self, dies):
        self.cfg = SimpleNamespace(hold_cpus=[0, 1])
        self.dies, self.made = dies, []

    def make(self, launch, hold=None, apart=None):
        ws = {s: FakeWorker(s, launch, hold, self.dies.get((s, launch, bool(hold)))) for s in ("a", "b")}
        self.made.append(ws)
        return ws


def test_a_prestarted_worker_killed_while_waiting_is_replaced_by_a_fresh_launch():
    launcher = Prestarted(FakeFactory({("b", 3, True): "killed"}))
    launcher.prepare_next(2, last=5)
    held = launcher.next
    workers = launcher.open(3)
    assert all(w.killed for w in held.values())  # both pre-started workers gone, the live one too
    assert all(w.started and not w.hold_cpus for w in workers.values())
    assert "killed by SIGKILL" in launcher.restarted[3]


def test_a_fresh_start_that_fails_is_raised_with_every_worker_killed():
    factory = FakeFactory({("b", 3, True): "killed", ("b", 3, False): "fresh"})
    launcher = Prestarted(factory)
    launcher.prepare_next(2, last=5)
    with pytest.raises(WorkerDied, match="fresh start failed"):
        launcher.open(3)
    assert all(w.killed or not w.started for ws in factory.made for w in ws.values())

"""The resident worker's pipe messages: each kind reads back from the very object it writes, key order included."""

import json

import pytest

from harness.measuring.resident import messages as m

BLOCK = {
    "event": "block",
    "k": 2,
    "gpu": None,
    "step_times_ms": [10.5, 11.0],
    "canary_ms": 1.2,
    "wall_s": 0.03,
    "cpu_s": 0.02,
    "started_at": 1700000000.5,
    "global_step": 4,
    "other_cpus": 0.1,
    "steal_cpus": 0.0,
    "phases_ms": {"forward": [1.0, 1.1]},
    "losses": [2.5, 2.4],
}
READY = {
    "event": "ready",
    "timing_s": {"import_s": 1.0},
    "host_probe": {"matmul_ms": 1.0},
    "cuda": None,
    "cpus": [0],
    "torch_threads": 1,
    "malloc": {"MALLOC_ARENA_MAX": "2"},
    "inject_work_layers": None,
    "inject_kind": None,
    "env": {"versions": {"torch": "x"}},
}
COMMANDS = [
    ({"cmd": "go"}, m.Go()),
    ({"cmd": "stop"}, m.Stop()),
    ({"cmd": "pin"}, m.Pin()),
    ({"cmd": "block", "k": 3}, m.RunBlock(3)),
    ({"cmd": "block", "k": 3, "micro": True}, m.RunBlock(3, micro=True)),
    ({"cmd": "block", "k": 3, "inject": 4.0}, m.RunBlock(3, 4.0)),
    ({"cmd": "block", "k": 2, "inject": 0.5, "micro": True}, m.RunBlock(2, 0.5, True)),
]
REPORTS = [
    ({"event": "held", "preload_s": 3.5}, m.Held(3.5)),
    (READY, m.Ready(**{k: v for k, v in READY.items() if k != "event"})),
    (BLOCK, m.BlockReport(**{k: v for k, v in BLOCK.items() if k != "event"})),
    (BLOCK | {"inject_ms": 0.7}, m.BlockReport(**{k: v for k, v in BLOCK.items() if k != "event"}, inject_ms=0.7)),
    ({"event": "pinned", "cpus": [0, 1]}, m.Pinned([0, 1])),
    ({"event": "stopped", "blocks": 7, "worker_total_s": 12.5}, m.Stopped(7, 12.5)),
    ({"event": "error", "status": "oom", "error": "CUDA out of memory"}, m.Failed("oom", "CUDA out of memory")),
]


@pytest.mark.parametrize("line, msg", COMMANDS)
def test_each_command_round_trips_with_todays_exact_object(line, msg):
    assert json.dumps(msg.to_json()) == json.dumps(line)  # the same bytes on the pipe, key order included
    assert m.read_command(json.loads(json.dumps(line))) == msg


@pytest.mark.parametrize("line, msg", REPORTS)
def test_each_report_round_trips_with_todays_exact_object(line, msg):
    assert json.dumps(msg.to_json()) == json.dumps(line)
    assert m.read_report(json.loads(json.dumps(line))) == msg and m.event_of(msg) == line["event"]


@pytest.mark.parametrize("line", [{"cmd": "block", "k": 0}, {"cmd": "block"}, {"cmd": "jump"}, {}])
def test_a_command_of_no_known_kind_reads_as_unknown(line):
    got = m.read_command(line)
    assert got == m.Unknown(line) and got.to_json() == line


def test_a_report_of_no_known_kind_reads_as_unknown_with_its_event():
    got = m.read_report({"event": "hello", "x": 1})
    assert got == m.Unknown({"event": "hello", "x": 1}) and m.event_of(got) == "hello"
    assert m.read_report({"event": "pinned"}) == m.Unknown({"event": "pinned"})  # a known event without its fields

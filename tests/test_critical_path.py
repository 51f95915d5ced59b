"""The critical-path model (harness/judging/critical_path.py, cost_path.py) on hand-made timelines, the timeline's
extraction from trace events (harness/measuring/timeline.py, on stand-in events), and ``python -m harness cost``
choosing the model by what the censuses carry. Pure: no torch."""

import contextlib
import io
import json

import pytest

from harness.commands.cli import main
from harness.errors import BadInput
from harness.judging import cost_model as cm
from harness.judging import cost_path as cp
from harness.judging import trace_speed as ts
from harness.judging.critical_path import Segment, Timeline, exposed_at, host_scale, per_op_overhead, simulate
from harness.measuring.timeline import STEP_MARK, extract

SYNC = "cudaStreamSynchronize"


def host_bound() -> Timeline:
    """GPU busy 15%: 60 ms of host work launching 5 ms of kernels, a short segment that queues the work a ``.item()``
    waits for, then 40 ms of host work launching 10 ms, up to the step's end."""
    return Timeline(
        (
            Segment(60.0, {"7": 5.0}),
            Segment(0.0, {}, SYNC, "aten::_local_scalar_dense", ("7",)),
            Segment(40.0, {"7": 10.0}),
        )
    )


def device_bound() -> Timeline:
    return Timeline((Segment(10.0, {"7": 100.0}, SYNC, "aten::_local_scalar_dense", ("7",)), Segment(5.0, {})))


@pytest.mark.parametrize("placement", ["early", "late"])
def test_on_a_host_bound_step_device_work_before_a_sync_is_exposed_and_after_it_hidden(placement):
    t = host_bound()
    base = simulate(t, placement).step_ms
    assert base == pytest.approx(100.0 + (5.0 if placement == "late" else 0.0))
    assert simulate(t.plus(device_ms=20.0, at=1), placement).step_ms == pytest.approx(
        base + 20.0
    )  # queued just before the sync
    assert simulate(t.plus(device_ms=20.0, at=2), "early").step_ms == pytest.approx(
        100.0
    )  # right after it: hidden by 40 ms of host
    assert simulate(t.plus(host_ms=10.0), placement).step_ms == pytest.approx(base + 10.0)  # host work: one for one
    run = simulate(t.plus(device_ms=20.0, at=1), placement)
    assert exposed_at(t, run)[0] == {
        "at": "aten::_local_scalar_dense",
        "sync": SYNC,
        "count": 1.0,
        "exposed_ms": pytest.approx(base - 100.0 + 20.0),
    }


def test_on_a_device_bound_step_device_work_adds_one_for_one_and_host_work_hides_until_it_delays_the_launches():
    t = device_bound()
    assert simulate(t).step_ms == pytest.approx(105.0)
    assert simulate(t.plus(device_ms=20.0)).step_ms == pytest.approx(125.0)
    assert simulate(t.plus(host_ms=50.0, at=0)).step_ms == pytest.approx(105.0)  # while the kernels run
    assert simulate(t.plus(host_ms=10.0, at=1)).step_ms == pytest.approx(
        115.0
    )  # after the sync: the next launches wait for it


def test_the_tail_after_the_last_sync_is_waited_for_in_the_next_step():
    t = Timeline(
        (Segment(10.0, {}, SYNC, None, ("7",)), Segment(10.0, {"7": 50.0}))
    )  # 50 ms of kernels after the sync, 20 ms host
    assert simulate(t).step_ms == pytest.approx(50.0)  # steady state: the device path, carried over the window's edge


def test_where_in_its_segment_the_work_was_launched_decides_whether_the_host_waits_for_it():
    """2 ms of device work in a 10 ms segment before a sync: launched at the segment's end, the host waits for almost
    all of it; launched at its start, not at all; recorded in no bin (an older census), the two placements span both."""

    def with_work(bins) -> Timeline:
        at = {"7": tuple(bins)} if bins else {}
        return Timeline((Segment(10.0, {"7": 2.0}, SYNC, None, ("7",), device_at=at), Segment(10.0, {})))

    end, start, unknown = with_work([0.0] * 7 + [2.0]), with_work([2.0] + [0.0] * 7), with_work(None)
    for placement in ("early", "late"):
        assert simulate(end, placement).step_ms == pytest.approx(20.0 + 2.0, abs=0.1)
        assert simulate(start, placement).step_ms == pytest.approx(20.0)
    assert simulate(unknown, "early").step_ms == pytest.approx(20.0)
    assert simulate(unknown, "late").step_ms == pytest.approx(22.0)
    # work a change adds without saying where (plus at a segment) is of no bin: it spans the segment
    more = start.plus(device_ms=3.0, at=0)
    assert simulate(more, "early").step_ms == pytest.approx(20.0) and simulate(more, "late").step_ms == pytest.approx(
        23.0
    )
    spread = end.plus(device_ms=2.0)  # spread by device time: it keeps the bins' shape
    assert spread.segments[0].device_at["7"][-1] == pytest.approx(4.0)
    assert simulate(spread, "early").step_ms == pytest.approx(24.0, abs=0.1)
    with pytest.raises(BadInput, match="bins"):
        Segment(1.0, {"7": 1.0}, device_at={"7": (1.0,)})


def test_the_host_scale_takes_the_profilers_overhead_out():
    t = host_bound()
    k, why = host_scale(t, 50.0)
    assert why is None and simulate(t.scaled(k)).step_ms == pytest.approx(50.0, rel=1e-6)
    assert host_scale(device_bound(), 50.0) == (0.0, "the device path alone is as long as the timed step")
    with_ops = Timeline(
        (Segment(60.0, {"7": 5.0}, ops=100), Segment(0.0, {}, SYNC, None, ("7",)), Segment(40.0, {"7": 10.0}, ops=100))
    )
    assert (
        per_op_overhead(with_ops, 80.0) == pytest.approx(0.1) and per_op_overhead(with_ops, 120.0) is None
    )  # 20 ms over 200 ops


def census(t: Timeline | None, ops: float = 1000.0, kernels: float = 100.0, kernel_ms: float = 15.0) -> dict:
    out = {"fits": True, "ops": ops, "python_calls": 2 * ops, "kernels": kernels, "kernel_ms": kernel_ms}
    if t is not None:
        out["timeline"] = {
            "n": t.n,
            "segments": [
                {
                    "host_ms": s.host_ms,
                    "device_ms": dict(s.device_ms),
                    "sync": s.sync,
                    "at": s.at,
                    "waits": list(s.waits) if s.waits is not None else None,
                    "wait_ms": s.wait_ms,
                    "ops": s.ops,
                }
                for s in t.segments
            ],
        }
    return out


def test_the_pair_is_predicted_by_the_model_the_censuses_allow():
    a, exposed, hidden = host_bound(), host_bound().plus(device_ms=20.0, at=1), host_bound().plus(device_ms=20.0, at=2)
    assert Timeline.of(census(a)) == a and Timeline.of(census(None)) is None
    rec = cp.predict_pair(census(a), census(exposed, kernel_ms=35.0), 100.0)
    assert rec["model"] == cp.CRITICAL and rec["lo"] <= 20.0 <= rec["hi"] and rec["host_part"] == pytest.approx(0.0)
    assert (
        rec["gpu_part"] == pytest.approx(rec["delta_pct"]) and rec["exposed_at"][0]["at"] == "aten::_local_scalar_dense"
    )
    rec = cp.predict_pair(census(a), census(hidden, kernel_ms=35.0), 100.0)
    assert rec["model"] == cp.CRITICAL and rec["lo"] <= 0.0 <= rec["hi"] and rec["delta_pct"] < 10.0
    placed = cp.predict_pair(census(a), census(None, kernel_ms=35.0), 100.0)
    assert (
        placed["model"] == cp.PLACED
        and placed["lo"] <= 0.0
        and placed["hi"] >= 20.0
        and "no timeline" in placed["note"]
    )
    old = cp.predict_pair(census(None), census(None, ops=1100.0), 100.0)
    assert (
        old["model"] == cp.TWO_PATH
        and "older census" in old["note"]
        and cp.pair_line(old).startswith("two-path: predicted +")
    )
    line = cp.pair_line(rec)
    assert line.startswith("critical path: predicted ") and "host waits" in line


def test_bs_host_time_comes_from_the_counts_and_its_trace_is_said_where_it_disagrees():
    a = host_bound()
    rec = cp.predict_pair(census(a), census(a.plus(host_ms=10.0)), 100.0)  # host work the counts miss, or a busier host
    assert (
        rec["delta_pct"] == pytest.approx(0.0)
        and 9.5 <= rec["traced_pct"] <= 10.0
        and "B's traced host time gives +9." in rec["note"]
    )
    reach = cp.TRACE_COST * rec["traced_pct"]  # past the trace: uncounted host work costs more than its trace
    assert rec["hi"] == pytest.approx(reach) and rec["lo"] == pytest.approx(-reach)  # wide, not narrow and wrong
    more = cp.predict_pair(
        census(a), census(a.plus(host_ms=10.0), ops=1100.0), 100.0
    )  # the counts see it: +10% ops, python calls
    assert (
        more["delta_pct"] == pytest.approx(more["host_part"], abs=0.01)
        and more["lo"] <= 10.0 <= more["hi"]
        and "note" not in more
    )


def test_bs_trace_is_read_at_as_host_speed_where_both_censuses_carry_their_host_probe():
    a, b = host_bound(), host_bound().scaled(0.8)  # the same work, B's census traced on a host 1.25 times as fast
    fast, slow = {"host_probe": {"launch_us": 8.0}}, {"host_probe": {"launch_us": 10.0}}
    unread = cp.predict_pair(census(a), census(b), 100.0)
    read = cp.predict_pair(census(a) | slow, census(b) | fast, 100.0)
    assert unread["traced_pct"] < -15.0 and unread["lo"] < -15.0 and "host_speed" not in unread
    assert (
        read["host_speed"] == pytest.approx(0.8)
        and abs(read["traced_pct"]) < 1.0
        and read["hi"] - read["lo"] < (unread["hi"] - unread["lo"]) / 4
    )
    hidden = cp.predict_pair(census(a) | fast, census(a.plus(host_ms=10.0)) | fast, 100.0)  # equal hosts, unseen work
    assert hidden["hi"] >= 9.5 and "at A's host speed gives +9." in hidden["note"]
    assert abs(hidden["delta_pct"]) < 0.5  # the probes track the host too loosely to move the point to the trace
    assert "probes agree (x1.00), so most likely host work the census does not count" in hidden["note"]
    busy = cp.predict_pair(census(a) | fast, census(a.plus(host_ms=10.0)) | slow, 100.0)  # B traced on a slower host
    assert "the host probes differ (x1.25)" in busy["note"] and busy["lo"] < busy["traced_pct"]


def test_the_probe_next_to_the_traced_window_is_read_before_the_one_before_training():
    a, b = host_bound(), host_bound().scaled(0.8)  # B's census traced on a host 1.25 times as fast
    start = {"host_probe": {"launch_us": 9.0}}  # taken before training: alike on both sides, off for the window
    ca = census(a) | start | {"window_probe": {"launch_us": 10.0}}
    cb = census(b) | start | {"window_probe": {"launch_us": 8.0}}
    assert ts.host_speed(ca, cb) == pytest.approx(0.8) and ts.host_speed(census(a) | start, cb) == pytest.approx(1.0)
    assert abs(cp.predict_pair(ca, cb, 100.0)["traced_pct"]) < 1.0
    assert ts.host_speed(census(a), cb) is None


def with_aten(c: dict, aten_ms: float, ops: float = 1000.0) -> dict:
    """``c`` whose timeline carries ``aten_ms`` per step and ``ops`` aten ops per step, all in its first segment."""
    segs = [dict(s, ops=ops * c["timeline"]["n"] if i == 0 else 0.0) for i, s in enumerate(c["timeline"]["segments"])]
    return c | {"timeline": c["timeline"] | {"segments": segs, "aten_ms": aten_ms}}


def test_bs_trace_is_read_at_as_host_speed_by_its_time_in_aten_ops_before_any_probe():
    a = host_bound()
    b = host_bound().plus(host_ms=10.0).scaled(1.25)  # 10 ms of host work between ops, traced on a slower host
    ca, cb = with_aten(census(a), 50.0), with_aten(census(b), 62.5)  # the same ops, each 1.25 times as long
    probes = {"window_probe": {"launch_us": 8.0}}  # alike on both sides: they missed the slower host
    assert ts.speed_by(ca | probes, cb | probes) == (pytest.approx(1.25), "aten")
    rec = cp.predict_pair(ca | probes, cb | probes, 100.0)
    assert rec["host_speed_by"] == "aten" and 9.0 < rec["traced_pct"] < 11.0 and rec["lo"] < 0 < 9.0 < rec["hi"]
    assert "the host times per aten op differ (x1.25)" in rec["note"]
    by_probe = cp.predict_pair(census(a) | probes, census(b) | probes, 100.0)  # the probes read B's trace as it is
    assert by_probe["host_speed_by"] == "window_probe" and by_probe["traced_pct"] > 30.0


def test_host_work_between_ops_is_read_at_full_cost_where_the_profilers_overhead_is_per_op():
    # A's trace is twice its timed host time: 0.1 ms of the profiler per recorded op; B adds 10 ms of host work
    # between ops, which the profiler does not inflate: read in proportion to the host time it would shrink to 5 ms
    traced = Timeline(
        (
            Segment(120.0, {"7": 5.0}, ops=600.0),
            Segment(0.0, {}, SYNC, "aten::_local_scalar_dense", ("7",)),
            Segment(80.0, {"7": 10.0}, ops=400.0),
        )
    )
    rec = cp.predict_pair(census(traced), census(traced.plus(host_ms=10.0)), 100.0)
    assert 4.0 < rec["traced_pct"] < 6.0 and 9.0 < rec["traced_per_op_pct"] < 11.0
    assert rec["lo"] < 0.0 < 10.0 < rec["hi"] and "gives +4." in rec["note"] and "to +10.0" in rec["note"]
    # the time per aten op says the hosts were alike: the work the counts miss is the point, read per op
    same_host = {"timeline": census(traced)["timeline"] | {"aten_ms": 100.0}}
    ca, cb = census(traced) | same_host, census(traced.plus(host_ms=10.0))
    cb["timeline"]["aten_ms"] = 100.0
    alike = cp.predict_pair(ca, cb, 100.0)
    assert alike["host_speed_by"] == "aten" and alike["delta_pct"] == pytest.approx(10.0, abs=0.5)
    assert alike["host_part"] == pytest.approx(alike["delta_pct"]) and alike["lo"] < 10.0 < alike["hi"]
    assert "so most likely host work the census does not count" in alike["note"]
    assert alike["note"].endswith("the point is B's trace read per aten op")
    small = census(traced.plus(host_ms=2.0))  # closer to the counts than the yardstick's own spread: not moved
    small["timeline"]["aten_ms"] = 100.0
    assert abs(cp.predict_pair(ca, small, 100.0)["delta_pct"]) < 0.5


def test_the_device_path_is_the_devices_busy_time_and_never_longer_than_the_traced_window():
    t = Timeline(
        (Segment(10.0, {"7": 60.0, "9": 50.0}, SYNC, "aten::_local_scalar_dense", None, 55.0), Segment(5.0, {}))
    )
    assert t.window_ms == 70.0 and t.device_ms == 110.0  # two streams side by side: their sum is no path
    assert t.device_path_ms == pytest.approx(60.0)  # replayed with no host time, the streams run together
    recorded = census(t) | {"timeline": census(t)["timeline"] | {"device_busy_ms": 62.0}}
    assert Timeline.of(recorded).device_path_ms == 62.0 and Timeline.of(recorded).device_scaled(0.5).busy_ms == 31.0


def test_where_the_device_work_alone_is_longer_than_the_timed_step_the_prediction_says_why_and_spans_both_paths():
    a, b = device_bound(), device_bound().plus(device_ms=20.0, at=0)  # 20% more device work, the same host work
    rec = cp.predict_pair(census(a, kernel_ms=100.0), census(b, kernel_ms=120.0), 50.0)  # timed: half the device work
    assert rec["reason"].startswith("A's census does not explain its timed step: its device work alone takes 100.0 ms")
    assert rec["lo"] <= 0.0 and rec["hi"] >= 20.0  # from the host path's change (none) to the device path's
    assert rec["reason"] in cp.pair_line(rec) and "the device path alone is as long" not in rec["note"]
    explained = cp.predict_pair(census(a, kernel_ms=100.0), census(b, kernel_ms=120.0), 105.0)
    assert "reason" not in explained and explained["lo"] > 0.0  # within the tolerance: the device path is the step
    placed = cp.predict_pair(census(a, kernel_ms=100.0), census(None, kernel_ms=120.0), 50.0)
    assert placed["model"] == cp.PLACED and placed["reason"] == rec["reason"] and placed["lo"] <= 0.0


def kernels(c: dict, ms: dict, calls: dict, tokens: float = 512.0) -> dict:
    """``c`` with its kernels' times and counts by name and its tokens per step."""
    return c | {"kernel_ms_by_name": ms, "kernels_by_name": calls, "tokens": {"real": tokens, "padded": tokens}}


def test_bs_device_work_is_read_at_as_gpu_speed_where_the_kernels_both_run_equally_often_say_so():
    a = device_bound()  # 100 ms of kernels: 60 of gemm, 40 of norm
    b = device_bound().plus(device_ms=20.0, at=0).device_scaled(1.25)  # 20 ms more, on a GPU 1.25 times as slow
    ca = kernels(census(a, kernel_ms=100.0), {"gemm": 60.0, "norm": 40.0}, {"gemm": 10, "norm": 5})
    slow = {"gemm": 75.0, "norm": 50.0, "copy": 25.0}
    cb = kernels(census(b, kernel_ms=150.0), slow, {"gemm": 10, "norm": 5, "copy": 5})
    speed = ts.device_speed(ca, cb)
    assert speed.ratio == pytest.approx(1.25) and speed.even and not speed.alike and speed.cover == 1.0
    rec = cp.predict_pair(ca, cb, 105.0)
    assert 15.0 < rec["delta_pct"] < 25.0 and "read at A's GPU speed" in rec["note"]  # not the trace's +50%
    assert rec["hi"] >= 45.0 and rec["device_speed"] == pytest.approx(1.25)  # the interval spans B as traced
    assert ts.device_speed(ca, kernels(cb, slow, cb["kernels_by_name"], tokens=640.0)) is None  # other work per kernel
    uneven = kernels(cb, {"gemm": 90.0, "norm": 40.0, "copy": 25.0}, cb["kernels_by_name"])  # gemm alone moved
    rec = cp.predict_pair(ca, uneven, 105.0)
    assert not ts.device_speed(ca, uneven).even and "scattered by" in rec["note"] and rec["delta_pct"] > 40.0
    assert rec["lo"] < 25.0  # the interval spans B's device work read at A's speed too
    few = kernels(ca, {"gemm": 10.0}, {"gemm": 10})  # the shared kernels cover too little of A's kernel time
    assert ts.device_speed(few, kernels(cb, {"gemm": 12.5}, {"gemm": 10})) is None


def test_the_interleaved_comparisons_prediction_names_its_model_beside_the_measured_change():
    a, b = census(host_bound()), census(host_bound().plus(device_ms=20.0, at=1), kernel_ms=35.0)
    rec = cp.beside_measured(a, b, 100.0, {"ratio": 1.2, "lo": 1.18, "hi": 1.22})
    assert rec["model"] == cp.CRITICAL and rec["measured_pct"] == pytest.approx(20.0) and rec["lo"] <= 20.0 <= rec["hi"]
    assert cm.beside_line(rec).startswith("critical path: predicted +") and cm.beside_line(rec).endswith(
        "measured +20.0% [+18.0%, +22.0%]"
    )
    assert cp.beside_measured(a, None, 100.0, None) == {"reason": "no prediction: no census of side B"}
    assert cp.beside_measured(census(None), census(None, ops=1100.0), 100.0, None)["model"] == cp.TWO_PATH


def test_the_bisects_predicted_cost_is_the_critical_paths_where_both_censuses_carry_timelines():
    """Device work queued before a sync on a host-bound step: the two-path model prices it at nothing, the bisect's
    hook at what the sync waits for, named by its model in the report's line."""
    from harness.bisect.report import predicted_text
    from harness.bisect.search import predicted_cost
    from harness.bisect.steps import CensusProbe

    a, b = census(host_bound()), census(host_bound().plus(device_ms=20.0, at=1), kernel_ms=35.0)
    got = predicted_cost(CensusProbe(a, 100.0, "python"), CensusProbe(b, None, "python"))
    assert got["model"] == cp.CRITICAL and got["lo"] <= 20.0 <= got["hi"] and got["gpu_part"] > 10.0
    assert cm.prediction_record(a, 100.0, b)["delta_pct"] < 1.0  # what the bisect said before
    assert predicted_text(got).endswith("of the step, critical path")
    old = predicted_cost(
        CensusProbe(census(None), 100.0, "python"), CensusProbe(census(None, ops=1100.0), None, "python")
    )
    assert old["model"] == cp.TWO_PATH and "older census" in predicted_text(old, note=True)


def run_cli(*args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        rc = main(["cost", *args])
    return rc, buf.getvalue()


def results(path, c: dict) -> str:
    path.mkdir()
    rows = [
        {"workload": "tiny-qwen3", "decomposition_id": "4x1", "status": "ok", "census": c, "step_time_median_ms": None},
        {
            "workload": "tiny-qwen3",
            "decomposition_id": "4x1",
            "status": "ok",
            "census": None,
            "step_time_median_ms": 100.0,
        },
    ]
    (path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_cost_uses_the_critical_path_where_both_censuses_carry_timelines_and_says_it_falls_back(tmp_path):
    a, b = host_bound(), host_bound().plus(device_ms=20.0, at=1)
    rc, out = run_cli("--diff", results(tmp_path / "a", census(a)), results(tmp_path / "b", census(b, kernel_ms=35.0)))
    assert rc == 0 and "  critical path: predicted +" in out, out
    rc, out = run_cli("--model", str(tmp_path / "a"))
    assert (
        rc == 0
        and "    timeline: 1 syncs per step, host 100.0 ms traced (x1.00 at the timed step), device 15.0 ms" in out
    ), out
    rc, out = run_cli(
        "--diff", results(tmp_path / "c", census(None)), results(tmp_path / "d", census(None, ops=1100.0))
    )
    assert rc == 0 and "  two-path: predicted +" in out and "no timeline in A's census" in out, out


class Ev:
    """A stand-in for a raw Kineto event: its accessors return what it was made with."""

    def __init__(self, kind: str, label: str, start: int, end: int, corr: int = 0, stream: int = 7, thread: int = 1):
        self.kind = kind
        for name, value in (
            ("name", label),
            ("start_ns", start),
            ("end_ns", end),
            ("duration_ns", end - start),
            ("correlation_id", corr),
            ("device_resource_id", stream),
            ("start_thread_id", thread),
        ):
            setattr(self, name, lambda v=value: v)


def test_the_timeline_cuts_the_host_at_its_blocking_calls_and_places_each_launch_in_its_segment():
    ms = 1_000_000
    events = [
        Ev("cpu_op", "aten::mm", 0, 10 * ms),
        Ev("cuda_runtime", "cudaLaunchKernel", 1 * ms, 2 * ms, 1),
        Ev("kernel", "gemm", 2 * ms, 6 * ms, 1),
        Ev("cpu_op", "aten::_local_scalar_dense", 10 * ms, 20 * ms),
        Ev("cuda_runtime", "cudaMemcpyAsync", 11 * ms, 12 * ms, 2),
        Ev("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 11 * ms, 12 * ms, 2),
        Ev("cuda_runtime", SYNC, 12 * ms, 15 * ms, 3),
        Ev("cpu_op", "aten::mm", 3 * ms, 4 * ms, thread=2),
        Ev("cuda_runtime", "cudaLaunchKernel", 3 * ms, 4 * ms, 6, thread=2),
        Ev("kernel", "gemm", 6 * ms, 7 * ms, 6),  # autograd's thread: its launch goes to the segment it starts in
        Ev("cpu_op", "aten::add", 20 * ms, 30 * ms),
        Ev("cuda_runtime", "cudaLaunchKernel", 21 * ms, 22 * ms, 4),
        Ev("kernel", "add", 22 * ms, 24 * ms, 4, stream=9),
        Ev("cuda_runtime", "cudaDeviceSynchronize", 30 * ms, 31 * ms, 5),
        Ev("user_annotation", "Optimizer.step#AdamW.step", 20 * ms, 29 * ms),
        Ev("kernel", "Optimizer.step#AdamW.step", 22 * ms, 29 * ms, 4),
    ]
    t = extract(events, 2, True, lambda e: e.kind)
    segs = t["segments"]
    assert [s["sync"] for s in segs] == [
        "cudaMemcpyAsync",
        SYNC,
        None,
    ]  # the closing edge's device sync is not the step's
    assert [s["host_ms"] for s in segs] == [11.0, 0.0, 15.0] and [s["wait_ms"] for s in segs] == [1.0, 3.0, 0.0]
    assert segs[0]["device_ms"] == {"7": 6.0} and segs[2]["device_ms"] == {
        "9": 2.0
    }  # the copy belongs to the segment it ends
    # (the optimizer's range mirrored onto the device, labelled a kernel, is no device work)
    # when in its segment each launch was made: the gemms early (bin 0), the blocking copy at the segment's end
    assert segs[0]["device_at"] == {"7": [5.0, 0, 0, 0, 0, 0, 0, 1.0]} and segs[2]["device_at"] == {
        "9": [2.0, *[0] * 7]
    }
    assert segs[0]["at"] == segs[1]["at"] == "aten::_local_scalar_dense" and segs[0]["waits"] == segs[1]["waits"] == [
        "7"
    ]
    assert (
        [s["ops"] for s in segs] == [3, 0, 1] and t["syncs"] == 1.0 and t["host_ms"] == 13.0 and t["device_ms"] == 4.0
    )
    # the host's time in the outermost aten ops of both threads (10 + 10 + 10 + 1 ms), less the 4 ms of waits in them
    assert t["aten_ms"] == 13.5
    cpu = extract([e for e in events if e.kind == "cpu_op"], 2, False, lambda e: e.kind)
    assert [(s["host_ms"], s["sync"], s["device_ms"]) for s in cpu["segments"]] == [(30.0, None, {})]
    assert cpu["aten_ms"] == 15.5


def test_the_timeline_records_the_devices_busy_time_over_every_stream_and_per_step_from_the_censuss_marks():
    ms = 1_000_000
    events = [
        Ev("cpu_op", "aten::mm", 0, 10 * ms),
        Ev("cuda_runtime", "cudaLaunchKernel", 1 * ms, 2 * ms, 1),
        Ev("kernel", "gemm", 2 * ms, 6 * ms, 1),
        Ev("cuda_runtime", "cudaLaunchKernel", 3 * ms, 4 * ms, 2),
        Ev("kernel", "norm", 4 * ms, 8 * ms, 2, stream=9),  # overlaps the gemm on another stream
        Ev("user_annotation", STEP_MARK, 5 * ms, 5 * ms),
        Ev("gpu_user_annotation", STEP_MARK, 5 * ms, 5 * ms),  # its mirror on the device is no mark
        Ev("user_annotation", STEP_MARK, 11 * ms, 11 * ms),
        Ev("cuda_runtime", "cudaDeviceSynchronize", 12 * ms, 13 * ms, 3),
    ]
    t = extract(events, 2, True, lambda e: e.kind)
    assert t["device_ms"] == 4.0 and t["device_busy_ms"] == 3.0  # 8 ms of work, 6 ms busy, over 2 steps
    assert t["steps"] == [{"wall_ms": 5.0, "busy_ms": 3.0}, {"wall_ms": 7.0, "busy_ms": 3.0}]
    no_marks = extract([e for e in events if e.name() != STEP_MARK], 2, True, lambda e: e.kind)
    assert "steps" not in no_marks and no_marks["device_busy_ms"] == 3.0
    assert Timeline.of({"timeline": t}).device_path_ms == 3.0 <= Timeline.of({"timeline": t}).window_ms

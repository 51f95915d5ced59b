"""The run record as the worker and the runner make it: typed from where it is measured (the worker's part of a
:class:`Run`, the runner's header over it), written once with ``Run.to_json``, in the order and with the nulls that
``runs.jsonl`` has always held. No training: the parts are built by hand."""

import json

from harness.measuring.runner import RunRequest, _headed, _series_records
from harness.measuring.worker import Timing, WorkerRequest, failed, finished, with_timing
from harness.results.census import Census
from harness.results.run import ORDER, Run


def _measured(**over):
    """The keys of a finished CPU run (no device memory, no GPU samples, no profile, no census, synthetic data)."""
    return {
        "train_runtime_s": 2.5,
        "train_loss": 1.25,
        "step_times_ms": [30.0, 20.0, 21.0],
        "warmup_steps": 1,
        "step_time_median_ms": 20.5,
        "phases_ms": None,
        "losses": [2.0, 1.5, None],
        "tokens_per_s": 100.0,
        "peak_reserved_bytes": None,
        "peak_allocated_bytes": None,
        "gpu_samples": None,
        "profile": None,
        "host_probe": {"matmul_ms": 1.0},
        "env": {"hostname": "h"},
        "census": None,
        "data_digest": None,
        "unk_share": None,
        "inject_work_fired": None,
    } | over


def test_a_finished_runs_record_writes_every_measured_key_nulls_included_in_the_runners_order(tiny):
    """The worker's part (``finished``) with its times, under the runner's header: the keys of ``Run.ORDER`` in that
    order, the measurements the run has none of written as null, and the JSON reads back as the same Run."""
    timing = Timing(startup_s=0.5, import_s=3.0, train_s=2.5, worker_total_s=7.0)
    part = with_timing(finished(**_measured()), timing)
    part = Run.from_json(json.loads(json.dumps(part.to_json())))  # the hop: the worker writes it, the runner reads it
    req = RunRequest(tiny, tiny.decompositions[0], 2)
    rec = _headed(part, req, "r1", "s1", "cpu", "2026-01-01T00:00:00+0000", 9.0, 0)
    out = rec.to_json()
    assert list(out) == [k for k in ORDER if k in out]
    assert list(out)[:3] == ["format", "run_id", "session_id"] and list(out)[-1] == "timing_s"
    assert out["status"] == "ok" and out["repeat"] == 2 and out["decomposition_id"] == tiny.decompositions[0].id
    for key in ("peak_reserved_bytes", "gpu_samples", "census", "data_digest", "unk_share", "inject_work_fired"):
        assert key in out and out[key] is None
    assert out["timing_s"] == {"startup_s": 0.5, "import_s": 3.0, "train_s": 2.5, "worker_total_s": 7.0}
    assert Run.from_json(json.loads(json.dumps(out))).to_json() == out


def test_a_census_runs_census_and_injected_work_are_written_as_the_worker_counted_them():
    census = Census(fits=False, device="cpu", logging_steps=2, n=4, reason="window does not fit")
    fired = {"calls": 12, "layers": 14, "casts_per_call": 1.0, "kind": "casts", "per_step": None}
    out = finished(**_measured(census=census, inject_work_fired=fired, data_digest="abc")).to_json()
    assert out["census"] == census.to_json() and out["inject_work_fired"] == fired and out["data_digest"] == "abc"
    assert list(out).index("census") < list(out).index("data_digest") < list(out).index("inject_work_fired")


def test_a_failed_worker_writes_its_status_message_and_traceback():
    out = with_timing(failed("oom", "OutOfMemoryError: CUDA out of memory", "Traceback ..."), Timing()).to_json()
    assert out == {
        "format": 1,
        "status": "oom",
        "error": "OutOfMemoryError: CUDA out of memory",
        "traceback": "Traceback ...",
        "timing_s": {},
    }


def test_a_series_gives_one_record_per_item_the_unfinished_ones_with_the_process_status(tiny):
    items = (RunRequest(tiny, tiny.decompositions[0], 1), RunRequest(tiny, tiny.decompositions[-1], 1, census=True))
    req = RunRequest(tiny, tiny.decompositions[0], 1, series=items)
    outer = _headed(
        Run(status="timeout", error="no result after the 60 s timeout"), req, "p", "s", "cpu", "2026", 60.0, -9
    )
    outer = Run.from_json({**outer.to_json(), "log": "w.log"})
    done = [with_timing(finished(**_measured()), Timing(item_s=4.0))]
    first, second = (r.to_json() for r in _series_records(req, outer, done))
    assert (first["run_id"], first["series_of"], first["status"], first["wall_s"]) == ("p-0", "p", "ok", 4.0)
    assert (second["run_id"], second["status"], second["wall_s"], second["started_at"]) == (
        "p-1",
        "timeout",
        0.0,
        "2026",
    )
    assert second["error"] == "not finished: the probe process ended first (no result after the 60 s timeout)"
    assert second["decomposition_id"] == tiny.decompositions[-1].id and second["log"] == "w.log"
    assert list(second)[-2:] == ["log", "series_of"]


def test_a_workers_request_reads_the_runners_file_and_a_series_items_override_its_switches(tiny):
    req = RunRequest(
        tiny, tiny.decompositions[0], 1, inject_work=2, series=(RunRequest(tiny, tiny.decompositions[-1], 1),)
    )
    written = req.as_item() | {"force_cpu": True, "launched_at": 5.0, "series": [r.as_item() for r in req.series]}
    got = WorkerRequest.from_json(json.loads(json.dumps(written)))
    assert (got.decomposition, got.inject_work, got.force_cpu, got.fault, got.sample_interval_s) == (
        tiny.decompositions[0].id,
        2,
        True,
        None,
        0.5,
    )
    (item,) = got.items()
    assert (item.decomposition, item.inject_work, item.force_cpu, item.series) == (
        tiny.decompositions[-1].id,
        0,
        True,
        (),
    )


def test_a_workers_times_are_written_in_the_order_they_are_taken_without_the_stages_not_reached():
    timing = Timing(worker_total_s=3.0, startup_s=1.0, import_s=2.0)
    assert list(timing.to_json()) == ["startup_s", "import_s", "worker_total_s"]
    assert Timing.from_json(timing.to_json()) == timing and Timing.from_json(None) == Timing()

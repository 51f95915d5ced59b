"""The census: counts of a step's work (harness/measuring/census.py), their diff and the LoRA FLOPs
(harness/judging/census_diff.py).

The slow tests run five real tiny-qwen3 census trainings on CPU in two worker processes (four of them one after
another in one process, which pays the imports once), and one more in the long run; the rest is pure and fast. This
process imports torch only in the test of the batch token counts.
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.judging import census_diff as cd
from harness.judging import census_window as cw
from harness.judging import flops
from harness.judging.config_diff import config_changes
from harness.measuring.runner import RunRequest, run_one
from harness.spec import Workload
from harness.spec_folder import load_workload
from tests.test_user_data import jsonl, local_toml

ROOT = Path(__file__).resolve().parent.parent
STEPS = 12  # warm-up 3 -> window steps 5-8 (one logging period of 4), Python calls in steps 9-12
INJECTED = {
    "aten::to",
    "aten::_to_copy",
    "aten::empty_strided",
    "aten::copy_",
}  # one cast: to -> _to_copy -> empty_strided + copy_


def census_request(
    steps: int = STEPS, inject_work: int = 0, w: Workload | None = None, split: str = "1x4"
) -> RunRequest:
    w = w or load_workload(ROOT / "workloads", "tiny-qwen3", steps)
    return RunRequest(w, w.decomposition(split), 1, census=True, inject_work=inject_work)


def census_run(
    tmp: Path, steps: int = STEPS, inject_work: int = 0, w: Workload | None = None, split: str = "1x4"
) -> dict:
    rec = run_one(census_request(steps, inject_work, w, split), tmp, "census", 600, "cpu")
    assert rec["status"] == "ok", rec.get("stderr_tail")
    return rec


def census_series(tmp: Path, requests: list[RunRequest]) -> list[dict]:
    """The census runs of ``requests`` one after another in one worker process (the imports paid once); their
    records."""
    rec = run_one(replace(requests[0], series=tuple(requests)), tmp, "census", 600, "cpu")
    assert rec["status"] == "ok" and all(r["status"] == "ok" for r in rec["series"]), rec.get("stderr_tail")
    return rec["series"]


def chat_request(tmp: Path, reply: str) -> RunRequest:
    """A census of tiny-qwen3 4x1 on a local JSONL of 4 chats whose assistant replies are ``reply``: every step
    trains on the same 4 rows, each padded to 128 tokens (``pad_to_multiple_of``)."""
    tmp.mkdir()
    rows = [
        {"messages": [{"role": "user", "content": f"w{i} w2"}, {"role": "assistant", "content": reply}]}
        for i in range(4)
    ]
    # the word-level tokenizer: each word of a reply is one token, so the replies' words are the steps' tokens
    toml = local_toml(jsonl(tmp / "chat.jsonl", rows)).replace(
        'init = "random"', 'init = "random"\ntokenizer = "words"'
    )
    (tmp / "mine.toml").write_text(toml)
    return census_request(w=Workload.load(tmp / "mine.toml"), split="4x1")


@pytest.fixture(scope="module")
def censuses(tmp_path_factory):
    """Every census run of the slow tests, in two worker processes: a plain run alone; and in one process a plain run,
    one with inject_work=1 (all tiny-qwen3 1x4 on CPU), then two that differ only in their data (replies of 4 words, and
    of 1). Each plain run is the first of its process, so the two are alike but for the process."""
    tmp = tmp_path_factory.mktemp("census")
    plain, inject, long, short = census_series(
        tmp / "series",
        [
            census_request(),
            census_request(inject_work=1),
            chat_request(tmp / "long", "w3 w4 w5 w6"),
            chat_request(tmp / "short", "w3"),
        ],
    )
    return {
        "plain": [plain, census_run(tmp / "plain")],
        "inject": inject,
        "chats": {"long": long["census"], "short": short["census"]},
    }


@pytest.fixture(scope="module")
def runs(censuses):
    """Two plain census runs, each in a fresh process, and one with inject_work=1, all tiny-qwen3 1x4 on CPU."""
    return {"plain": censuses["plain"], "inject": censuses["inject"]}


@pytest.fixture(scope="module")
def chats(censuses):
    """Two census runs that differ only in their data: replies of 4 words, and of 1."""
    return censuses["chats"]


# ---- real runs (slow) ---------------------------------------------------------------------------
@pytest.mark.slow
def test_census_keys_on_cpu(runs):
    rec = runs["plain"][0]
    assert rec["census"] is not None and rec["inject_work"] == 0 and rec["inject_work_fired"] is None
    c = rec["census"]
    assert c["fits"] and c["device"] == "cpu" and c["steps"] == [5, 8] and c["n"] == 4 and c["logging_steps"] == 4
    assert c["ops"] == pytest.approx(sum(c["ops_by_name"].values()), abs=0.01) and c["window"]["ops"] == c["ops"] * 4
    assert all(k.startswith("aten::") for k in c["ops_by_name"])
    for k in ("kernels", "kernels_by_name", "syncs", "alloc", "kernel_ms", "kernel_ms_by_name"):
        assert c[k] is None, k
    assert c["cpu_op_ms"] > 0 and 0 < len(c["cpu_op_ms_by_name"]) <= 20
    # One logging period in the window: the loss logging's `tr_loss -= tr_loss` runs once, i.e. 0.25 per step.
    assert c["ops_by_name"]["aten::sub_"] == 0.25
    assert c["python_calls"] > 0 and c["python_steps"] == [9, 12]
    assert c["python_method"] == ("sys.monitoring" if sys.version_info >= (3, 12) else "sys.setprofile")
    assert (
        c["attention_backend"] == "flash"
        and "aten::_scaled_dot_product_flash_attention_for_cpu" in c["attention_names"]
    )
    cfg = c["config"]
    assert cfg["attn_implementation"] == "sdpa" and cfg["checkpointing"]["kwargs"] == {"use_reentrant": False}
    assert cfg["args"]["max_steps"] == STEPS and "output_dir" not in cfg["args"] and "logging_dir" not in cfg["args"]
    assert cfg["peft"]["default"]["r"] == 8 and isinstance(cfg["peft"]["default"]["target_modules"], list)
    assert c["overhead"]["profiled_ms"] > 0 and c["overhead"]["python_counted_ms"] > 0
    # the host probe again next to the window, beside the run's own (read after the model's build)
    assert c["window_probe"]["launch_us"] > 0 and c["window_probe"]["python_ns"] > 0
    assert c["host_probe"]["launch_us"] > 0
    # the step's timeline (harness/measuring/timeline.py): on the CPU no device, no sync, the window one segment
    # of host work
    tl = c["timeline"]
    assert tl["n"] == 4 and tl["syncs"] == 0 and tl["device_ms"] == 0 and tl["host_ms"] > 0
    assert [(s["sync"], s["device_ms"]) for s in tl["segments"]] == [(None, {})] and tl["segments"][0]["ops"] > 0
    assert 0 < tl["aten_ms"] < 2 * tl["host_ms"]  # the host's time in the outermost aten ops
    # the census marks each step's end in the trace: per step, its wall time and the device's busy time (none here)
    assert tl["device_busy_ms"] == 0 and len(tl["steps"]) == 4 and all(s["busy_ms"] == 0 for s in tl["steps"])
    assert sum(s["wall_ms"] for s in tl["steps"]) == pytest.approx(4 * tl["host_ms"], rel=0.01)
    # synthetic rows are max_length (128) tokens without padding, 4 of them per step
    assert c["tokens"] == {"real": 512.0, "padded": 512.0} and c["window"]["tokens"] == {"real": 2048, "padded": 2048}
    # no device memory on the CPU: no peaks (as in the run record); the host allocations by outermost aten op
    # are summarised
    mem = c["memory"]
    assert mem["peak_reserved_bytes"] is None is mem["peak_allocated_bytes"] and rec["peak_reserved_bytes"] is None
    assert 0 < len(mem["allocated_by_op"]) <= 20 and all(
        k.startswith("aten::") or k == "(outside aten ops)" for k in mem["allocated_by_op"]
    )
    assert 0 < sum(mem["allocated_by_op"].values()) <= mem["allocated_per_step"] + 1


@pytest.mark.slow
def test_census_is_deterministic_on_cpu(runs):
    """Two fresh runs: identical op counts by name, and identical Python call counts."""
    cs = [r["census"] for r in runs["plain"]]
    for c in cs[1:]:
        assert c["ops_by_name"] == cs[0]["ops_by_name"] and c["tokens"] == cs[0]["tokens"]
        assert cd.verdict(cs[0], c).outcome == "pass", cd.verdict(cs[0], c).lines
        assert cd.diff(cs[0], c).tokens is None
    calls = [c["window"]["python_calls"] for c in cs]
    assert len(set(calls)) == 1, (
        f"Python calls per window differ across runs: {calls} (spread {max(calls) - min(calls)})"
    )


@pytest.mark.slow
def test_injected_work_shows_exactly_in_the_diff(runs):
    """inject_work=1 adds one cast per LoRA forward; the diff names exactly the cast's ops, K per step each, where
    K is the hook's own count per step (14 LoRA layers x 4 micro-batches forward, plus the checkpoint recompute,
    which stops early, before the last LoRA layer of each decoder layer: 56 + 48 = 104)."""
    base, cur = runs["plain"][0], runs["inject"]
    fired = cur["inject_work_fired"]
    assert fired["layers"] == 14 and fired["casts_per_call"] == 1
    k = fired["per_step"]
    assert k == cur["census"]["counters"]["inject_work"] and k == int(k) and 56 < k <= 112
    assert fired["calls"] == k * STEPS  # every step does the same work
    d = cd.diff(base["census"], cur["census"])
    assert {c.name: c.delta for c in d.ops} == {name: k for name in INJECTED}
    assert d.counters["ops"].delta == 4 * k and set(d.counters) <= {"ops", "python_calls"}
    assert not d.kernels and not d.syncs and not d.alloc and d.attention is None and d.config == []
    v = cd.verdict(base["census"], cur["census"])
    assert v.outcome == "changed"
    assert v.lines[0].startswith(
        f"aten ops per optimizer step {cd.num(base['census']['ops'])} -> {cd.num(cur['census']['ops'])} "
        f"(+{int(4 * k)}): "
    )
    assert f"aten::_to_copy +{int(k)}" in v.lines[0]
    # The casts are discarded: training computes exactly the same losses.
    assert cur["losses"] == base["losses"]


@pytest.mark.slow
@pytest.mark.long
def test_a_workload_too_short_for_the_windows_gets_a_census_run_long_enough(tmp_path, runs):
    c = census_run(tmp_path, steps=6)["census"]  # 6 steps: the windows need 12 (steps 5-8, then 9-12)
    assert (
        c["fits"] and c["steps"] == [5, 8] and c["python_steps"] == [9, 12] and c["config"]["args"]["max_steps"] == 12
    )
    plain = runs["plain"][0]["census"]
    assert (c["ops"], c["python_calls"], c["ops_by_name"]) == (
        plain["ops"],
        plain["python_calls"],
        plain["ops_by_name"],
    )


@pytest.mark.slow
def test_shorter_replies_are_fewer_real_tokens_per_step_in_the_diff(chats):
    """Data alone changes the work: 3 words fewer in each of a step's 4 replies are 12 real tokens fewer per step;
    every row is still padded to 128, so the padded tokens (and the aten ops, of the same shapes) stay."""
    long, short = chats["long"]["tokens"], chats["short"]["tokens"]
    assert long["padded"] == short["padded"] == 4 * 128
    assert short["real"] == long["real"] - 12 and 0 < short["real"] and long["real"] < long["padded"]
    v = cd.verdict(chats["long"], chats["short"])
    assert v.outcome == "changed" and v.diff.tokens == (long, short) and not v.diff.ops and "ops" not in v.diff.counters
    assert (
        f"tokens per optimizer step: real {cd.num(long['real'])} -> {cd.num(short['real'])}, padded 512 -> 512"
        in v.lines
    ), v.lines


def test_batch_tokens_count_the_mask_or_what_precedes_the_right_padding():
    torch = pytest.importorskip("torch")
    from harness.measuring.callbacks import batch_tokens

    ids = torch.tensor([[5, 6, 2, 0, 0], [5, 6, 7, 8, 2]])
    assert batch_tokens({"input_ids": ids, "attention_mask": (ids != 0).int()}, 0) == (8, 10)
    # padding-free (no mask): the pad token doubles as end of sequence; only the trailing pads at position 0 are padding
    flat = {"input_ids": torch.tensor([[5, 2, 7, 8, 2, 2, 2]]), "position_ids": torch.tensor([[0, 1, 0, 1, 2, 0, 0]])}
    assert batch_tokens(flat, 2) == (5, 7)
    assert batch_tokens({"input_ids": ids}, 0) == (8, 10) and batch_tokens({"input_ids": ids}, None) == (10, 10)


def test_the_profilers_memory_events_change_no_count():
    """The census profiles with ``profile_memory=True``; its memory events are split off before the counting, so every
    count is what the profiler without them gives, and the allocations land on the outermost aten op."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from harness.measuring.census_counts import summarize
    from harness.measuring.census_memory import allocations, split

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16))
    opt = torch.optim.AdamW(model.parameters())
    x = torch.randn(8, 16)

    def window(memory: bool) -> list:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=memory) as p:
            for _ in range(3):
                model(x.to(torch.float64).to(torch.float32)).sum().backward()
                opt.step()
                opt.zero_grad()
        return list(p.profiler.kineto_results.events())

    window(False)  # the optimizer's state is made in the first step, outside the windows compared
    plain, (mem, rest) = window(False), split(window(True))
    assert mem and all(e.name() == "[memory]" for e in mem) and not any(e.name() == "[memory]" for e in rest)
    a, b = summarize(plain, 3, False), summarize(rest, 3, False)
    assert (
        a["ops_by_name"] == b["ops_by_name"]
        and a["ops"] == b["ops"]
        and a["attention_backend"] == b["attention_backend"]
    )
    got = allocations(mem, rest, 3, False)
    # the cast's float64 copy of x (8 x 16 x 8 bytes) is allocated under aten::to,
    # not under its inner aten::empty_strided
    assert got["allocated_by_op"]["aten::to"] >= 8 * 16 * 8 and "aten::empty_strided" not in got["allocated_by_op"]


# ---- pure ---------------------------------------------------------------------------------------
def census(**over):
    base = {
        "fits": True,
        "device": "cuda",
        "n": 4,
        "steps": [5, 8],
        "logging_steps": 4,
        "ops": 100.0,
        "ops_by_name": {"aten::mm": 60.0, "aten::add": 40.0},
        "kernels": 50.0,
        "kernels_by_name": {"gemm": 30.0, "add_kernel": 20.0},
        "syncs": {"cudaStreamSynchronize": 0.25, "memcpy_dtoh": 0.25},
        "alloc": {"cudaMalloc": 0.0, "cudaFree": 0.0},
        "kernel_ms": 10.0,
        "kernel_ms_by_name": {"gemm": 8.0, "add_kernel": 2.0},
        "python_calls": 1000.0,
        "attention_backend": "flash",
        "config": {"args": {"lr": 1e-4, "optim": "adamw_torch"}, "attn_implementation": "sdpa"},
    }
    for k, v in over.items():
        base[k] = v
    return base


def test_identical_censuses_pass():
    v = cd.verdict(census(), census())
    assert v.outcome == "pass" and v.lines == [] and not v.diff.counts_changed


def test_diff_names_the_changed_ops_and_kernels_largest_first():
    cur = census(
        ops=312.0,
        ops_by_name={"aten::mm": 60.0, "aten::add": 40.0, "aten::_to_copy": 196.0, "aten::copy_": 16.0},
        kernels=246.0,
        kernels_by_name={"gemm": 30.0, "add_kernel": 20.0, "copy_kernel": 196.0},
        kernel_ms=11.0,
        kernel_ms_by_name={"gemm": 8.0, "add_kernel": 2.0, "copy_kernel": 1.0},
    )
    d = cd.diff(census(), cur)
    assert [(c.name, c.base, c.cur, c.delta) for c in d.ops] == [
        ("aten::_to_copy", None, 196.0, 196.0),
        ("aten::copy_", None, 16.0, 16.0),
    ]
    assert [c.name for c in d.kernels] == ["copy_kernel"] and set(d.counters) == {"ops", "kernels"}
    assert d.time_total == (10.0, 11.0, pytest.approx(0.1)) and d.time[0].name == "copy_kernel"
    v = cd.verdict(census(), cur)
    assert v.outcome == "changed"
    assert v.lines == [
        "aten ops per optimizer step 100 -> 312 (+212): aten::_to_copy +196, aten::copy_ +16",
        "kernel launches per optimizer step 50 -> 246 (+196): copy_kernel +196",
    ]
    assert (
        cd.time_line(v.diff)
        == "kernel time per optimizer step 10.00 -> 11.00 ms (+10.0%, not judged): copy_kernel +1.00"
    )


def test_timing_alone_is_not_judged():
    v = cd.verdict(census(), census(kernel_ms=20.0, kernel_ms_by_name={"gemm": 18.0, "add_kernel": 2.0}))
    assert v.outcome == "pass" and v.lines == []
    assert "+100.0%, not judged" in cd.time_line(v.diff)


def test_moved_names_with_equal_total_syncs_python_and_attention():
    cur = census(
        ops_by_name={"aten::mm": 59.0, "aten::add": 41.0},
        syncs={"cudaStreamSynchronize": 1.25, "memcpy_dtoh": 1.25},
        python_calls=1200.0,
        attention_backend="math",
        alloc={"cudaMalloc": 2.0, "cudaFree": 0.0},
    )
    v = cd.verdict(census(), cur)
    assert v.outcome == "changed"
    assert v.lines == [
        "aten ops per optimizer step 100 (total unchanged): aten::add +1, aten::mm -1",
        "Python calls per optimizer step 1,000 -> 1,200 (+200, +20.0%)",
        "syncs per optimizer step: cudaStreamSynchronize 0.25 -> 1.25, memcpy_dtoh 0.25 -> 1.25",
        "allocator calls per optimizer step: cudaMalloc 0 -> 2",
        "attention backend flash -> math",
    ]


def test_tolerances_absolute_and_relative():
    cur = census(python_calls=1004.0, ops=101.0, ops_by_name={"aten::mm": 61.0, "aten::add": 40.0})
    assert cd.verdict(census(), cur).outcome == "changed"
    assert cd.verdict(census(), cur, tolerances=1).outcome == "changed"  # python calls +4 > 1
    assert cd.verdict(census(), cur, tolerances={"python_calls": "0.5%", "ops": 1}).outcome == "pass"
    assert cd.verdict(census(), cur, tolerances={"python_calls": "0.3%", "ops": 1}).outcome == "changed"


def test_config_changes_are_listed_not_judged():
    cur = census(config={"args": {"lr": 2e-4, "optim": "adamw_torch", "new_key": True}, "attn_implementation": "sdpa"})
    v = cd.verdict(census(), cur)
    assert v.outcome == "pass"
    assert v.diff.config == [("args.lr", 1e-4, 2e-4), ("args.new_key", "<absent>", True)]
    assert v.lines == ["config changed (2 keys): args.lr: 0.0001 -> 0.0002; args.new_key: '<absent>' -> True"]


def test_a_librarys_bookkeeping_is_no_config_change():
    """peft_version moves with every release (the versions say so), and a release's new setting at its off value changes
    nothing: neither is listed; a new setting that is on, or a value that moved, is."""
    base = {"peft": {"default": {"peft_version": "0.21.0", "r": 16}}, "args": {"lr": 2e-4}}
    cur = {
        "peft": {"default": {"peft_version": "0.22.0", "r": 16, "kasa_config": None, "use_qalora": False}},
        "args": {"lr": 2e-4},
    }
    assert config_changes(base, cur) == []
    cur["peft"]["default"].update(r=8, use_dora=True)
    assert config_changes(base, cur) == [("peft.default.r", 16, 8), ("peft.default.use_dora", "<absent>", True)]


def test_cpu_censuses_compare_cpu_op_time():
    cpu = {k: None for k in ("kernels", "kernels_by_name", "syncs", "alloc", "kernel_ms", "kernel_ms_by_name")}
    a = census(**cpu, cpu_op_ms=100.0, cpu_op_ms_by_name={"aten::mm": 80.0})
    b = census(**cpu, cpu_op_ms=90.0, cpu_op_ms_by_name={"aten::mm": 70.0})
    d = cd.diff(a, b)
    assert d.time_key == "cpu_op_ms" and not d.counts_changed
    assert (
        cd.time_line(d)
        == "aten self CPU time per optimizer step 100.00 -> 90.00 ms (-10.0%, not judged): aten::mm -10.00"
    )


def test_missing_or_unfit_census_is_unknown():
    v = cd.verdict(None, census())
    assert v.outcome == "unknown" and v.lines == ["base: no census"]
    v = cd.verdict(
        census(), {"fits": False, "reason": "window does not fit: steps 5-8 ... need max_steps >= 8, the run has 6"}
    )
    assert v.outcome == "unknown" and v.lines == [
        "current: window does not fit: steps 5-8 ... need max_steps >= 8, the run has 6"
    ]
    v = cd.verdict(census(), census(device="cpu"))
    assert v.outcome == "unknown" and v.lines[0].startswith("devices differ (cuda -> cpu)")


def test_tokens_per_step_are_exact_and_a_census_without_them_is_no_change():
    a, b = census(tokens={"real": 1024.0, "padded": 1024.0}), census(tokens={"real": 980.0, "padded": 1024.0})
    v = cd.verdict(a, b)
    assert v.outcome == "changed" and v.diff.counts_changed and v.diff.tokens == (a["tokens"], b["tokens"])
    assert v.lines == ["tokens per optimizer step: real 1,024 -> 980, padded 1,024 -> 1,024"]
    assert cd.verdict(a, census(tokens={"real": 1024.0, "padded": 1024.0})).outcome == "pass"
    # one token more in a window of 4 steps is a change, under the judge's tolerances too (they leave tokens exact)
    assert (
        cd.verdict(a, census(tokens={"real": 1024.0, "padded": 1024.25}), {"python_calls": "0.1%"}).outcome == "changed"
    )
    # a census that did not count them (the committed baselines, recorded before) compares as before, on either side
    old = json.loads((ROOT / "baselines" / "h200" / "qwen3-1.7b-lora.json").read_text())["decompositions"]["1x4"][
        "census"
    ][0]["census"]
    for base, cur in (
        (old, dict(old, tokens=b["tokens"])),
        (dict(old, tokens=a["tokens"]), old),
        (census(), b),
        (census(tokens={"real": 1.0}), b),
    ):
        v = cd.verdict(base, cur)
        assert v.outcome == "pass" and v.diff.tokens is None and not any("tokens" in ln for ln in v.lines), v.lines
    assert "tokens" not in old and cd.normalize(old)["tokens"] is None and cd.normalize(b)["tokens"] == b["tokens"]


GIB = 2**30


def mem(reserved, allocated=None, by_op=None) -> dict:
    return {"memory": {"peak_reserved_bytes": reserved, "peak_allocated_bytes": allocated, "allocated_by_op": by_op}}


def test_a_peak_memory_move_beyond_the_memory_tolerance_is_one_line_not_a_work_change():
    a = census(**mem(int(5.75 * GIB), 4 * GIB, {"aten::mm": 2 * GIB, "aten::empty_strided": GIB, "aten::add": 2**20}))
    b = census(
        **mem(
            int(4.60 * GIB),
            4 * GIB,
            {"aten::mm": GIB, "aten::empty_strided": GIB, "aten::to": 64 * 2**20, "aten::add": 2**20},
        )
    )
    v = cd.verdict(a, b)
    assert [(c.name, c.base, c.cur) for c in v.diff.memory] == [
        ("peak_reserved_bytes", int(5.75 * GIB), int(4.60 * GIB))
    ]
    assert v.diff.changed and not v.diff.counts_changed and v.outcome == "pass", (
        "memory is the memory verdict's to judge"
    )
    assert v.lines == [
        "peak reserved memory: 5.75 GiB -> 4.60 GiB (-20%); allocated per optimizer step, moved most: "
        "aten::mm -1.00 GiB, aten::to +64.00 MiB"
    ]


def test_a_peak_memory_drift_within_the_tolerance_or_a_side_without_one_is_no_change():
    base = census(**mem(4 * GIB, 3 * GIB))
    drift = census(
        **mem(int(4 * GIB * 1.01), 3 * GIB + 100 * 2**20)
    )  # 1% (41 MiB): under both; 100 MiB is 3.3%, over both
    d = cd.diff(base, drift)
    assert [c.name for c in d.memory] == ["peak_allocated_bytes"] and cd.lines(d) == [
        "peak allocated memory: 3.00 GiB -> 3.10 GiB (+3%)"
    ]
    small = census(**mem(GIB // 2, None))  # 3% of 0.5 GiB is 15 MiB: under 64 MiB, so no change
    assert not cd.diff(small, census(**mem(GIB // 2 + 15 * 2**20, None))).memory
    for a, b in (
        (base, census(**mem(None))),
        (census(), base),
        (base, census()),
        (census(**mem(None)), census(**mem(None))),
    ):
        d = cd.diff(a, b)
        assert d.memory == [] and not d.changed and cd.lines(d) == [], (a.get("memory"), b.get("memory"))
    assert cd.normalize(census())["memory"] is None


def test_a_census_takes_its_run_records_peaks():
    rec = {"peak_reserved_bytes": 5 * GIB, "peak_allocated_bytes": 4 * GIB}
    assert cd.with_memory(census(), rec)["memory"] == rec
    assert cd.with_memory(census(**mem(3 * GIB, 2 * GIB, {"aten::mm": 1.0})), rec)["memory"] == {
        **rec,
        "allocated_by_op": {"aten::mm": 1.0},
    }
    assert cd.with_memory(census(), {"peak_reserved_bytes": None}) == census() and cd.with_memory(None, rec) is None


def test_window_plan():
    assert cw.window_plan(3, 4, 20).to_json() == {
        "start": 4,
        "n": 4,
        "logging_steps": 4,
        "max_steps": 20,
        "fits": True,
        "python_fits": True,
    }
    p = cw.window_plan(3, 4, 10)
    assert p.fits and not p.python_fits and "steps 9-12 need max_steps >= 12" in p.python_reason and p.reason is None
    p = cw.window_plan(3, 4, 6)
    assert (
        not p.fits
        and p.reason.startswith("window does not fit: steps 5-8")
        and "max_steps >= 8, the run has 6" in p.reason
        and p.to_json()["reason"] == p.reason
    )
    assert (cw.window_plan(0, 1, 20).start, cw.window_plan(0, 1, 20).n) == (1, 3)  # step 1 is never in the window
    assert (cw.window_plan(5, 2, 20).start, cw.window_plan(5, 2, 20).n) == (6, 4)
    assert (cw.window_plan(5, 10, 40).start, cw.window_plan(5, 10, 40).n) == (10, 10)


def test_a_census_run_goes_on_past_a_workload_too_short_for_its_windows():
    assert (
        cw.census_max_steps(3, 4, 12) is None and cw.census_max_steps(3, 4, 100) is None
    )  # the workload's own suffice
    assert (
        cw.census_max_steps(3, 4, 10) == 12 and cw.census_max_steps(3, 4, 6) == 12
    )  # both windows, then it ends itself
    assert cw.census_max_steps(2, 5, 8) == 15  # warm-up 2 -> step 5, then two windows of 5


TINY = {
    "vocab_size": 2048,
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
}


def test_lora_flops_per_token_by_hand():
    # One tiny-qwen3 layer: q 128x128, k 128x64, v 128x64, o 128x128, gate/up 128x384, down 384x128 -> 196,608 weights.
    p_layers, p_head = 2 * 196_608, 128 * 2048
    p_lora = 2 * 8 * ((128 + 128) + 2 * (128 + 64) + (128 + 128) + 2 * (128 + 384) + (384 + 128))
    parts = flops.lora_flops_parts(TINY, 8, "all-linear", checkpointing=True)
    assert parts.p_base == p_layers + p_head and parts.p_lora == p_lora == 38_912
    fwd, bwd, rec = (
        2 * (p_layers + p_head) + 2 * p_lora,
        2 * (p_layers + p_head) + 4 * p_lora,
        2 * p_layers + 2 * p_lora,
    )
    assert flops.lora_flops_per_token(TINY, 8, "all-linear", checkpointing=True) == fwd + bwd + rec == 3_719_168
    assert flops.lora_flops_per_token(TINY, 8, "all-linear", checkpointing=False) == fwd + bwd
    attn = 4 * 2 * 128 * 4 * 32  # 4 * layers * seq * heads * head_dim
    assert flops.lora_flops_per_token(TINY, 8, "all-linear", True, seq_len=128) == fwd + bwd + rec + 4 * attn
    # Only q and v adapted: P_lora = 2 layers * 8 * ((128 + 128) + (128 + 64)).
    assert flops.lora_flops_parts(TINY, 8, ["q_proj", "v_proj"], False).p_lora == 2 * 8 * (256 + 192)
    assert flops.lora_flops_parts(TINY, 8, r".*\.(q_proj|v_proj)", False).p_lora == 2 * 8 * (256 + 192)
    with pytest.raises(ValueError, match="dense decoders only"):
        flops.lora_flops_per_token({**TINY, "num_experts": 8}, 8)
    with pytest.raises(ValueError, match="has no intermediate_size"):
        flops.lora_flops_per_token({k: v for k, v in TINY.items() if k != "intermediate_size"}, 8)


@pytest.mark.parametrize(
    "name, model",
    [
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA L4", "L4"),
        ("Tesla T4", "T4"),
        ("l4", "L4"),
        ("h100", "H100 SXM"),
        ("h100-pcie", "H100 PCIe"),
        ("h200-nvl", "H200 NVL"),
        ("a100-80gb", "A100"),
        ("l4-gcp", None),
        ("NVIDIA GeForce RTX 4090", None),
        ("cpu", None),
        (None, None),
    ],
)
def test_peak_flops_come_from_one_table_by_the_full_name(name, model):
    """Each variant has its own peak (the H100 PCIe is not the SXM), by its full name or its short name; a GPU the table
    does not know, or a machine class a runner named itself, has none: MFU is then unknown, never another GPU's peak."""
    from harness.judging import peak_flops

    got = peak_flops.peak(name)
    assert (got[0] if got else None) == model


def test_mfu():
    assert flops.mfu(989.5e12 * 0.5, 1.0, 989.5e12) == pytest.approx(0.5)
    assert flops.mfu(1e12, 0.0, 989.5e12) is None


def test_the_pure_module_does_not_import_torch():
    import subprocess

    code = "import sys, harness.judging.census_diff; assert 'torch' not in sys.modules"
    assert (
        subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}).returncode
        == 0
    )


@pytest.mark.slow
def test_compare_flags_the_injected_work_by_name(runs, tmp_path):
    """End to end through the CLI: `compare` of a plain census run (A) and one with one extra cast per LoRA
    forward (B) fails the work verdict and names exactly the extra operators, +K each, K = the hook's count."""
    import json
    import subprocess

    for side, recs in (("a", [runs["plain"][0]]), ("b", [runs["inject"]])):
        (tmp_path / side).mkdir()
        (tmp_path / side / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = subprocess.run(
        [sys.executable, "-m", "harness", "compare", "a", "b"], cwd=tmp_path, capture_output=True, text=True
    )
    assert res.returncode == 1, res.stdout + res.stderr
    k = runs["inject"]["inject_work_fired"]["per_step"]
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("work ") and "WORK CHANGED" in ln)
    assert f"(+{4 * k:,.0f})" in line and all(f"{op} +{k:,.0f}" in line for op in INJECTED), line
    same = subprocess.run(
        [sys.executable, "-m", "harness", "compare", "a", "a"], cwd=tmp_path, capture_output=True, text=True
    )
    assert same.returncode == 0 and "the work per optimizer step is the same" in same.stdout, same.stdout


def test_gpu_user_annotations_are_not_kernels():
    """torch 2.11 leaves the optimizer's record_function range on the device timeline unlabelled; it is no kernel."""
    c = {
        "fits": True,
        "device": "cuda",
        "kernels": 11.0,
        "kernels_by_name": {"Optimizer.step#AdamW.step": 1.0, "void k<(lambda()#1)>(int)": 10.0},
        "kernel_ms": 10.0,
        "kernel_ms_by_name": {"Optimizer.step#AdamW.step": 6.0, "void k<(lambda()#1)>(int)": 4.0},
    }
    n = cd.normalize(c)
    assert (
        n["kernels"] == 10.0 and n["kernel_ms"] == 4.0 and list(n["kernels_by_name"]) == ["void k<(lambda()#1)>(int)"]
    )
    assert cd.normalize(n) == n and c["kernels"] == 11.0  # idempotent, and the input is left alone
    assert not cd.is_annotation(
        "void at::native::vectorized_elementwise_kernel<4, lambda(float)#1>"
    ) and cd.is_annotation("ProfilerStep#6")


def _leaf() -> int:
    return 1


def _calls(n: int) -> None:
    for _ in range(n):
        _leaf()


def _counted(bookkeeping: int) -> int:
    """Python calls counted around 10 calls of the step's own, and ``bookkeeping`` calls of the harness's, made as the
    trainer mixin makes them (its thread's id in UNCOUNTED_THREADS)."""
    import threading

    from harness.measuring.census import UNCOUNTED_THREADS, PythonCalls

    py = PythonCalls()
    py.start()
    _calls(10)
    me = threading.get_ident()
    UNCOUNTED_THREADS.add(me)
    try:
        _calls(bookkeeping)
    finally:
        UNCOUNTED_THREADS.discard(me)
    return py.stop()


def test_the_harness_s_own_bookkeeping_is_not_counted_as_the_step_s_python_calls():
    """The tokens the harness counts per batch are not the step's work: a census counts the same Python calls with or
    without that bookkeeping. With ``sys.monitoring`` every thread counts, so another thread's few calls may fall in
    the window: the bound allows them and still fails if any of the 51 bookkeeping calls were counted."""
    plain, with_bookkeeping = _counted(0), _counted(50)
    assert plain >= 11 and abs(with_bookkeeping - plain) < 25

"""A user's own inputs: a local JSONL is part of the work (its digest is in the hash, so an edited file is refused
against the old baseline, naming the data), every local input is checked at collection (one line, no hub call), and a
broken workload, named with --workload or not, is a failure of its own (exit 1) while the other workloads run."""

import json
import re
import socket
import threading
from pathlib import Path

import pytest

from harness.inputs import check_inputs, data_digest, digest
from harness.judging import baseline as bl
from harness.results.run import Run
from harness.spec import SpecError, Workload

ROOT = Path(__file__).resolve().parent.parent
TINY = (ROOT / "workloads" / "tiny-qwen3.toml").read_text()
CHATS = [
    {"messages": [{"role": "user", "content": f"w{i} w2"}, {"role": "assistant", "content": "w3 w4"}]} for i in range(6)
]


def local_toml(data: Path, name: str = "mine", extra: str = "") -> str:
    """tiny-qwen3 renamed, on local data ``data``."""
    text = re.sub(
        r"\[data\]\n.*?\n\n", f'[data]\nsource = "local"\nid = "{data}"\nnum_samples = 4\n{extra}\n', TINY, flags=re.S
    )
    return text.replace('name = "tiny-qwen3"', f'name = "{name}"')


def jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def mine(tmp_path, rows=CHATS, extra: str = "") -> Workload:
    data = jsonl(tmp_path / "chat.jsonl", rows)
    path = tmp_path / "mine.toml"
    path.write_text(local_toml(data, extra=extra))
    return Workload.load(path)


# ---- the data in the work ----------------------------------------------------------------------------------------
def test_a_local_files_digest_enters_the_hash(tmp_path):
    w = mine(tmp_path)
    assert w.data.digest == data_digest(str(tmp_path / "chat.jsonl")) and w.data.digest.startswith("sha256:")
    assert w.to_dict()["data"]["digest"] == w.data.digest
    assert Workload.from_dict(w.to_dict()).hash == w.hash  # what the worker rebuilds from its request
    shorter = [{"messages": [m | {"content": "w3"} for m in r["messages"]]} for r in CHATS]
    assert mine(tmp_path, shorter).hash != w.hash
    tiny = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    assert "digest" not in tiny.to_dict()["data"] and tiny.data.digest is None  # synthetic: no file, hash unchanged


def test_a_relative_data_path_is_read_from_the_workloads_project_whatever_the_current_directory(tmp_path, monkeypatch):
    """Two checkouts of one project, loaded from a third directory: each reads its own data/chat.jsonl, their hashes are
    one (the path as written is hashed, never where the checkout lies), and the worker is sent the resolved path."""
    for copy in ("a", "b"):
        (tmp_path / copy / "workloads").mkdir(parents=True)
        (tmp_path / copy / "data").mkdir()
        jsonl(tmp_path / copy / "data" / "chat.jsonl", CHATS)
        (tmp_path / copy / "workloads" / "mine.toml").write_text(local_toml(Path("data/chat.jsonl")))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    a, b = (Workload.load(Path("..") / copy / "workloads" / "mine.toml") for copy in ("a", "b"))
    check_inputs(a)
    assert a.hash == b.hash and a == b and a.to_dict()["data"]["id"] == "data/chat.jsonl" and "root" not in a.to_dict()
    assert a.for_worker()["data"]["id"] == str(tmp_path / "elsewhere" / ".." / "a" / "data" / "chat.jsonl")
    assert Workload.from_dict(a.for_worker()).data.digest == a.data.digest
    toml = 'root = "/"\n' + local_toml(Path("data/chat.jsonl"), "root")  # a key of its own, at the top
    (tmp_path / "a" / "workloads" / "root.toml").write_text(toml)
    with pytest.raises(SpecError, match="root.toml: unknown field 'root'; "):
        Workload.load(tmp_path / "a" / "workloads" / "root.toml")


def test_a_hub_datasets_revision_enters_the_hash_and_only_a_hub_dataset_takes_one():
    hub = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml").to_dict()
    hub["data"] = {"source": "hub", "id": "org/chats", "messages_column": "messages"}
    unpinned = Workload.from_dict(hub)
    assert (
        "revision" not in unpinned.to_dict()["data"]
    )  # without one, the hash is the one it had before the key existed
    pinned = Workload.from_dict({**hub, "data": {**hub["data"], "revision": "3f2a9c1"}})
    assert pinned.hash != unpinned.hash and Workload.from_dict(pinned.to_dict()).hash == pinned.hash
    local = {**hub, "data": {"source": "local", "id": "data/chat.jsonl", "revision": "main"}}
    with pytest.raises(
        SpecError, match="data.revision pins a hub dataset's version: set data.source = 'hub' or remove it"
    ):
        Workload.from_dict(local)


def test_a_pinned_digest_refuses_other_content(tmp_path):
    w = mine(tmp_path)
    pinned = local_toml(tmp_path / "chat.jsonl", extra=f'digest = "{w.data.digest}"\n')
    (tmp_path / "pinned.toml").write_text(pinned)
    assert Workload.load(tmp_path / "pinned.toml").hash == w.hash
    jsonl(tmp_path / "chat.jsonl", CHATS[:5])
    with pytest.raises(
        SpecError, match=r"pinned.toml: data.digest pins sha256:[0-9a-f]{12} but .*chat.jsonl now holds"
    ) as err:
        Workload.load(tmp_path / "pinned.toml")
    # the way out is written in the line: the new content's whole digest, to pin it
    assert f'take the new content with data.digest = "{data_digest(str(tmp_path / "chat.jsonl"))}"' in str(err.value)


def test_a_folders_digest_ignores_the_cache_files_datasets_writes(tmp_path):
    import datasets

    folder = tmp_path / "saved"
    datasets.Dataset.from_list(CHATS).save_to_disk(str(folder))
    before = digest(folder)
    (folder / "cache-0123abcd.arrow").write_bytes(b"indices")
    assert digest(folder) == before
    (folder / "extra.txt").write_text("more")
    assert digest(folder) != before


def test_an_edited_jsonl_under_a_recorded_baseline_is_refused_naming_the_data(tmp_path, fake_runs):
    w = mine(tmp_path)
    bl.write(tmp_path / "baselines", bl.from_runs(w, "cpu", [Run.from_json(r) for r in fake_runs(w, [100] * 5)], "cmd"))
    assert bl.load(tmp_path / "baselines", "cpu", w).data.workload.spec["data"]["digest"] == w.data.digest
    shorter = [{"messages": [m | {"content": "w3"} for m in r["messages"]]} for r in CHATS]
    edited = mine(tmp_path, shorter)
    with pytest.raises(bl.BaselineError) as err:
        bl.load(tmp_path / "baselines", "cpu", edited)
    line = str(err.value)
    assert f"data.digest: the content of {tmp_path / 'chat.jsonl'} changed (sha256:" in line and "\n" not in line, line
    assert "train." not in line and "model." not in line  # the data alone changed


def test_an_edited_jsonl_is_refused_at_collection_not_judged(perf_project, fake_runs):
    data = jsonl(perf_project.path / "chat.jsonl", CHATS)
    (perf_project.path / "workloads" / "mine.toml").write_text(local_toml(data))
    w = Workload.load(perf_project.path / "workloads" / "mine.toml")
    bl.write(
        perf_project.path / "baselines",
        bl.from_runs(w, "cpu", [Run.from_json(r) for r in fake_runs(w, [100] * 5)], "cmd"),
    )
    ok = perf_project.runpytest_subprocess(
        "perftests", "--gpu=cpu", "--workload", "mine", "--collect-only", "-p", "no:cacheprovider"
    )
    assert ok.ret == 0, ok.stdout.str()
    jsonl(data, CHATS[:5])
    result = perf_project.runpytest_subprocess(
        "perftests", "--gpu=cpu", "--workload", "mine", "--collect-only", "-p", "no:cacheprovider"
    )
    assert result.ret == 1
    lines = [ln for ln in result.outlines if ln.startswith("not run, bad workload:")]
    assert (
        lines
        and "is for another version of mine" in lines[0]
        and f"data.digest: the content of {data} changed" in lines[0]
        and "record a new baseline with `pytest perftests --gpu=cpu --workload mine --repeats 5 --census "
        "--update-baselines`"
        in lines[0]
    ), lines


def test_a_baseline_of_another_hash_is_refused_before_any_run(perf_project, tiny, fake_runs):
    bl.write(
        perf_project.path / "baselines",
        bl.from_runs(tiny, "cpu", [Run.from_json(r) for r in fake_runs(tiny, [100] * 5)], "cmd"),
    )
    result = perf_project.runpytest_subprocess("perftests", "--gpu=cpu", "--steps", "6", "--results-dir", "out")
    assert result.ret == 1 and not (perf_project.path / "out" / "runs.jsonl").exists()
    result.stdout.fnmatch_lines(
        ["*fail * not run: baseline * is for another version of tiny-qwen3*train.max_steps: 20 -> 6*"]
    )
    recording = perf_project.runpytest_subprocess(
        "perftests", "--gpu=cpu", "--steps", "6", "--update-baselines", "--collect-only"
    )
    assert recording.ret == 0, recording.stdout.str()  # recording a new baseline is the way out


def test_the_missing_baseline_hint_is_a_command_that_records_one(tmp_path, tiny):
    with pytest.raises(bl.MissingBaseline) as err:
        bl.load(tmp_path, "cpu", tiny)
    assert "`pytest perftests --gpu=cpu --workload tiny-qwen3 --repeats 5 --census --update-baselines`" in str(
        err.value
    )


def test_the_worker_refuses_data_edited_after_loading(tmp_path):
    from harness.measuring.build import check_digest

    w = mine(tmp_path)
    check_digest(w)
    jsonl(tmp_path / "chat.jsonl", CHATS[:5])
    with pytest.raises(SpecError, match=r"mine: data.digest: .*chat.jsonl changed since the workload was loaded"):
        check_digest(w)
    (tmp_path / "chat.jsonl").unlink()
    with pytest.raises(SpecError, match=r"data.id = .*chat.jsonl': no such file or folder"):
        check_digest(w)


@pytest.mark.slow
def test_a_run_on_local_data_records_the_digest_it_trained_on(tmp_path):
    import dataclasses

    from harness.measuring.runner import RunRequest, run_one

    w = mine(tmp_path, CHATS * 2)
    w = dataclasses.replace(
        w.with_overrides(max_steps=2),
        measure=dataclasses.replace(w.measure, warmup_steps=1),
        decompositions=w.decompositions[-1:],
    )
    rec = run_one(RunRequest(w, w.decompositions[0], 1), tmp_path / "out", "s", 300, "cpu")
    assert rec["status"] == "ok", rec.get("error")
    assert rec["data_digest"] == w.data.digest == rec["workload_spec"]["data"]["digest"]


# ---- every input checked before any training ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "rows, extra, expected",
    [
        ([CHATS[0], "not an object"], "", r"chat.jsonl line 2 is a JSON str, not an object of columns"),
        (
            CHATS,
            'messages_column = "conversation"\n',
            r"data.messages_column = 'conversation' is not a column of .*chat.jsonl \(its columns: messages\)",
        ),
        (CHATS[:1] + [{"text": "w1"}], "", r"data.num_samples = 4 but .*chat.jsonl has only 2 rows"),
        (
            [{"body": "w1"}] * 6,
            "",
            r"data.messages_column: .*chat.jsonl has none of the columns TRL reads "
            r"\(messages, text, prompt\), only body",
        ),
        (
            CHATS,
            "chat_template = \"{{ messages[5]['content'] }}\"\n",
            r"data.chat_template cannot render the first conversation of .*chat.jsonl "
            r"\(UndefinedError: list object has no element 5\)",
        ),
        (
            CHATS,
            "chat_template = \"{{ messages[0]['text'] }}\"\n",
            r"data.chat_template renders the first conversation of .*chat.jsonl as empty text",
        ),
    ],
)
def test_bad_local_data_is_one_line_naming_the_file_and_the_key(tmp_path, rows, extra, expected):
    w = mine(tmp_path, rows, extra)
    with pytest.raises(SpecError) as err:
        check_inputs(w)
    assert re.search(expected, str(err.value)) and "\n" not in str(err.value), str(err.value)


def test_a_line_that_is_not_json_names_its_line(tmp_path):
    w = mine(tmp_path)
    with (tmp_path / "chat.jsonl").open("a") as fh:
        fh.write('{"messages": [\n')
    with pytest.raises(SpecError, match=r"chat.jsonl line 7 is not JSON"):
        check_inputs(w)


def test_a_local_model_folder_is_checked(tmp_path):
    from harness.inputs import check_model
    from harness.spec_sections import ModelSpec

    def spec(hub_id):  # a stand-in of [model]: check_model reads init and hub_id only
        return type("M", (), {"init": "pretrained", "hub_id": hub_id})()

    with pytest.raises(SpecError, match=r"model.hub_id = '.*/nowhere': no such folder"):
        check_model(spec(str(tmp_path / "nowhere")))
    (tmp_path / "model").mkdir()
    with pytest.raises(SpecError, match=r"model.hub_id = '.*/model': .*config.json is missing"):
        check_model(spec(str(tmp_path / "model")))
    (tmp_path / "model" / "config.json").write_text("{not json")
    with pytest.raises(SpecError, match=r"config.json is not valid JSON"):
        check_model(spec(str(tmp_path / "model")))
    check_model(spec("Qwen/Qwen3-1.7B"))  # a hub id: left to the worker
    check_model(ModelSpec(model_type="qwen3"))  # random weights: nothing to read


class Listener:
    """A TCP port that stands for the hub (HF_ENDPOINT): it counts the connections it gets."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.connections, self.stop = 0, False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


@pytest.fixture
def hub(monkeypatch):
    listener = Listener()
    monkeypatch.setenv("HF_ENDPOINT", listener.endpoint)
    yield listener
    listener.close()


@pytest.mark.parametrize("case", ["missing file", "wrong column", "bad template"])
@pytest.mark.parametrize("offline", [True, False], ids=["offline", "hub-endpoint"])
def test_bad_local_input_fails_at_collection_without_the_hub(perf_project, hub, monkeypatch, case, offline):
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    (perf_project.path / "data").mkdir()
    data = jsonl(perf_project.path / "data" / "chat.jsonl", CHATS)
    extra, expected = {
        "missing file": ("", "data.id = 'data/gone.jsonl': no such file or folder"),
        "wrong column": ('messages_column = "conversation"\n', "data.messages_column = 'conversation' is not a column"),
        "bad template": ("chat_template = \"{{ messages[0]['content'] + 1 }}\"\n", "data.chat_template cannot render"),
    }[case]
    text = local_toml(
        Path("data/gone.jsonl") if case == "missing file" else data.relative_to(perf_project.path), extra=extra
    )
    (perf_project.path / "workloads" / "mine.toml").write_text(text)
    for args in (("--workload", "mine"), ()):
        result = perf_project.runpytest_subprocess(
            "perftests", "--gpu=cpu", "--collect-only", "-p", "no:cacheprovider", *args, timeout=300
        )
        assert result.ret == 1, result.stdout.str()
        out = result.stdout.str()
        assert "workloads/mine.toml: " in out and expected in out, out
        assert "Traceback" not in out
    assert hub.connections == 0


# ---- a broken workload is its own failure ------------------------------------------------------------------------
def broken(perf_project) -> Path:
    path = perf_project.path / "workloads" / "typo.toml"
    path.write_text(TINY.replace('name = "tiny-qwen3"', 'name = "typo"').replace("r = 8", "rank = 8"))
    return path


def test_a_typo_in_another_file_does_not_block_a_named_workload(perf_project):
    broken(perf_project)
    result = perf_project.runpytest_subprocess(
        "perftests", "--gpu=cpu", "--workload", "tiny-qwen3", "--collect-only", "-q"
    )
    assert result.ret == 0, result.stdout.str()
    assert "typo" not in result.stdout.str()
    named = perf_project.runpytest_subprocess("perftests", "--gpu=cpu", "--workload", "typo", "--collect-only")
    assert named.ret == 1 and any(
        ln.startswith("not run, bad workload: workloads/typo.toml: unknown field 'rank' in [lora]")
        for ln in named.outlines
    ), named.stdout.str()
    unknown = perf_project.runpytest_subprocess("perftests", "--gpu=cpu", "--workload", "typpo", "--collect-only")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR  # no file declares it: a typo of the command line, refused
    unknown.stderr.fnmatch_lines(["ERROR: --workload typpo: no such workload in *workloads; known: tiny-qwen3; *"])


def test_a_command_loads_its_workload_beside_a_broken_file(tmp_path):
    from harness.spec_folder import load_workload

    (tmp_path / "tiny-qwen3.toml").write_text(TINY)
    (tmp_path / "typo.toml").write_text(
        TINY.replace('name = "tiny-qwen3"', 'name = "typo"').replace("r = 8", "rank = 8")
    )
    assert load_workload(tmp_path, "tiny-qwen3", steps=4).train.max_steps == 4
    with pytest.raises(SpecError, match=r"typo.toml: unknown field 'rank' in \[lora\]"):
        load_workload(tmp_path, "typo")
    with pytest.raises(
        SpecError, match=r"no workload 'nope' in .*; known: tiny-qwen3; 1 file\(s\) do not load, first: .*typo.toml"
    ):
        load_workload(tmp_path, "nope")


def test_without_a_filter_the_broken_workload_is_one_item_and_one_summary_line(perf_project):
    path = broken(perf_project)
    result = perf_project.runpytest_subprocess("perftests", "--gpu=cpu", "--collect-only", "-q")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*test_run[[]tiny-qwen3-1x4[]]*",
            "workloads/typo.toml::bad-workload",
            f"not run, bad workload: {path.relative_to(perf_project.path)}: unknown field 'rank' in [[]lora]*",
        ]
    )


@pytest.mark.slow
def test_the_other_workloads_run_beside_a_broken_one(cut_splits):
    """Named with --workload, as the nightly names them: the broken one fails its item and its verdict, the other is
    trained and judged, and the session fails (exit 1)."""
    perf_project = cut_splits(("4x1",))
    broken(perf_project)
    result = perf_project.runpytest_subprocess(
        "perftests", "--gpu=cpu", "--repeats", "1", "--steps", "4", "-p", "no:cacheprovider",
        "--workload", "typo", "--workload", "tiny-qwen3",
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1 and outcomes["passed"] >= 1, outcomes
    result.stdout.fnmatch_lines(
        [
            "*bad-workload typo * fail * not run: workloads/typo.toml: unknown field 'rank'*",
            "FAILED workloads/typo.toml::bad-workload*",
        ]
    )
    report = (perf_project.path / "perf-results" / "report.md").read_text()
    assert "**FAILED: bad-workload typo**" in report and "not run: workloads/typo.toml: unknown field" in report
    data = json.loads((perf_project.path / "perf-results" / "report.json").read_text())
    assert [r["workload"] for r in data["rows"]] == ["tiny-qwen3"]


def test_doctor_lists_each_broken_workload_in_one_line_and_the_others(tmp_path):
    from harness.commands import doctor as doc

    (tmp_path / "tiny-qwen3.toml").write_text(TINY)
    (tmp_path / "typo.toml").write_text(
        TINY.replace('name = "tiny-qwen3"', 'name = "typo"').replace("r = 8", "rank = 8")
    )
    (tmp_path / "gone.toml").write_text(local_toml(tmp_path / "gone.jsonl", name="gone"))
    lines: list[str] = []
    assert doc.doctor(workloads_dir=tmp_path, baselines_dir=tmp_path, project=tmp_path, out=lines.append) == 2
    text = "\n".join(lines).splitlines()
    assert f"workloads ({tmp_path}): 2 cannot run (BROKEN below), the others can" in text
    assert any(ln.startswith("  typo.toml: BROKEN, not run: ") and "unknown field 'rank'" in ln for ln in text), text
    assert any(
        ln.startswith("  gone.toml: BROKEN, not run: ") and "data.id = " in ln and "no such file" in ln for ln in text
    ), text
    assert any(ln.startswith("  tiny-qwen3: runs here") for ln in text), text


@pytest.mark.parametrize(
    "name, short",
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H200 NVL", "h200-nvl"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA A100-SXM4-40GB", "a100"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA A100-PCIE-40GB", "a100-pcie"),
        ("NVIDIA GH200 480GB", "gh200"),
        ("NVIDIA L4", "l4"),
        ("Tesla T4", "t4"),
    ],
)
def test_the_variants_of_a_gpu_that_run_differently_never_share_a_name(name, short):
    """SXM, PCIe and NVL parts (and the A100's 40 and 80 GB) run at other clocks, power or memory: each its own
    baselines."""
    from harness.measuring.env import short_gpu_name

    assert short_gpu_name(name) == short


def test_a_runner_names_its_machine_class_and_a_bad_name_is_one_line(monkeypatch):
    """HARNESS_MACHINE files results, baselines and the runner label under the team's own name for a class of
    machines."""
    from harness.errors import BadInput
    from harness.measuring import env

    monkeypatch.setenv(env.MACHINE_ENV, "l4-gcp")
    monkeypatch.setattr(env, "gpu_names", lambda: ["NVIDIA L4"])
    assert env.detect_gpu() == "l4-gcp" and env.resolve_gpu("auto", env.detect_gpu()) == "l4-gcp"
    assert env.machine_class(None) == "cpu"  # a machine without a GPU is the CPU, whatever the variable says
    monkeypatch.setenv(env.MACHINE_ENV, "L4 GCP")
    with pytest.raises(BadInput, match="HARNESS_MACHINE='L4 GCP': not a machine class name"):
        env.detect_gpu()
    monkeypatch.delenv(env.MACHINE_ENV)
    assert env.detect_gpu() == "l4"


def test_a_q_summary_line_keeps_the_bad_files_name_and_what_is_wrong(perf_project, monkeypatch):
    """On an 80-column terminal, -q trims each summary line: the file is named relative to where pytest started, and the
    item of a broken workload (whose id is the file) says what is wrong first."""
    broken(perf_project)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    item = perf_project.runpytest_subprocess(
        "perftests", "--gpu=cpu", "-q", "-k", "no-such-test", "-p", "no:cacheprovider"
    )
    item.stdout.fnmatch_lines(["FAILED workloads/typo.toml::bad-workload - Failed: unknown field 'rank' in *"])
    named = perf_project.runpytest_subprocess(
        "perftests", "--gpu=cpu", "-q", "--workload", "typo", "-p", "no:cacheprovider", "--results-dir", "out"
    )
    named.stdout.fnmatch_lines(["FAILED workloads/typo.toml::bad-workload - Failed: unknown field 'rank' in *"])


def test_relative_line_names_a_file_under_the_root_relative_to_it(tmp_path):
    from harness.broken import relative_line

    assert (
        relative_line(f"{tmp_path}/workloads/a.toml: lora.r must be a positive integer", tmp_path)
        == "workloads/a.toml: lora.r must be a positive integer"
    )
    assert relative_line("/elsewhere/a.toml: bad", tmp_path) == "/elsewhere/a.toml: bad"
    assert relative_line("baseline of x: bad", tmp_path) == "baseline of x: bad"

"""Each bad workload input of issue 33 ("Why") gives one line naming the file and the key, or is refused before any
training; the keys it may now hold (hub subset and columns, a chat template string, data-loader workers, QLoRA) are
accepted and used. docs/workloads.md lists every key. No test here trains: they load, build configs and tokenizers."""

import dataclasses
import re
import sys
import types
from pathlib import Path

import pytest

from harness.spec import DataSpec, QuantizationSpec, SpecError, Workload
from harness.spec_folder import load_workloads
from harness.spec_sections import ModelSpec

ROOT = Path(__file__).resolve().parent.parent
TINY = (ROOT / "workloads" / "tiny-qwen3.toml").read_text()
QWEN_KEYS = dict(
    vocab_size=2048,
    hidden_size=128,
    intermediate_size=384,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    tie_word_embeddings=True,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
    max_position_embeddings=512,
)


def write(tmp_path, text: str, name: str = "x.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def edited(old: str, new: str) -> str:
    assert old in TINY, old
    return TINY.replace(old, new, 1)


def refusal(path: Path) -> str:
    with pytest.raises(SpecError) as err:
        Workload.load(path)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{path}: "), line
    return line


def saved_config(folder: Path, model_type: str, **keys) -> Path:
    """A model folder holding only its config.json, as a download would (the architecture is read from it)."""
    from transformers import AutoConfig

    AutoConfig.for_model(model_type, **keys).save_pretrained(folder)
    return folder


def pretrained(hub_id: str, config: bool = True) -> str:
    """tiny-qwen3 with pretrained weights from ``hub_id``; without its [model.config] table when ``config`` is false."""
    text = edited('init = "random"', f'init = "pretrained"\nhub_id = "{hub_id}"')
    if not config:
        text = re.sub(r"\[model\.config\].*?\n\n", "\n", text, flags=re.S).replace('model_type = "qwen3"\n', "")
    return text


# ---- types and ranges --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("r = 8", "r = 8.5", "lora.r must be a positive integer, got 8.5"),
        ('bias = "none"', 'bias = "bogus"', "lora.bias must be one of 'none', 'all', 'lora_only', got 'bogus'"),
        ('devices = ["cpu"]', 'devices = "cpu"', "devices must be a list of 'cpu', 'gpu' or GPU names such as 'h200'"),
        ("max_steps = 20", 'max_steps = "20"', "train.max_steps must be a positive integer, got '20'"),
        ("learning_rate = 2e-4", 'learning_rate = "2e-4"', "train.learning_rate must be a positive number, got '2e-4'"),
        ("packing = false", "packing = 1", "train.packing must be true or false, got 1"),
        ("dropout = 0.0", "dropout = 1.5", "lora.dropout must be a number in [0, 1), got 1.5"),
        ("effective = 4", 'effective = "4"', "batch.effective must be a positive integer, got '4'"),
        ("num_samples = 64", "num_samples = 0", "data.num_samples must be a positive integer, got 0"),
        ('precision = "fp32"', 'precision = "fp8"', "train.precision must be one of 'fp16', 'bf16', 'fp32', got 'fp8'"),
        ("[lora]\n", "[lora]\nrank = 8\n", "unknown field 'rank' in [lora]; did you mean lora.r?"),
        ("[lora]\n", "[lora]\nlora_alpha = 8\n", "unknown field 'lora_alpha' in [lora]; did you mean lora.alpha?"),
        (
            "[train]\n",
            "[train]\nmax_seq_length = 8\n",
            "unknown field 'max_seq_length' in [train]; did you mean train.max_length?",
        ),
        ("[lora]\n", "[lora]\nfoo = 8\n", "unknown field 'foo' in [lora]; known: r, alpha"),
        ("[data]\n", "[data]\nsplits = 'x'\n", "unknown field 'splits' in [data]; did you mean data.split?"),
        (
            'decompositions = ["1x4", "2x2", "4x1"]',
            'decompositions = ["1x4", "2*2"]',
            "batch.decompositions: '2*2' is not MICROxGA or MICROxGAxWORLD",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_file_and_key(tmp_path, old, new, expected):
    line = refusal(write(tmp_path, edited(old, new)))
    assert expected in line, line


def test_whole_numbers_for_a_float_are_one_workload(tmp_path):
    a = Workload.load(write(tmp_path, edited("dropout = 0.0", "dropout = 0"), "a.toml"))
    assert a.lora.dropout == 0.0 and isinstance(a.lora.dropout, float)
    assert a.hash == Workload.load(ROOT / "workloads" / "tiny-qwen3.toml").hash


# ---- the architecture --------------------------------------------------------------------------------------------
def test_a_typo_in_model_config_is_refused_with_the_close_key(tmp_path):
    line = refusal(write(tmp_path, edited("hidden_size = 128", "hidden_sise = 128")))
    assert "model.config.hidden_sise is not a qwen3 config key; did you mean hidden_size?" in line
    assert "model.model_type 'qwen4' is not a transformers model type; did you mean qwen3" in refusal(
        write(tmp_path, edited('model_type = "qwen3"', 'model_type = "qwen4"'))
    )


def test_pretrained_weights_of_the_same_architecture_keep_the_hash(tmp_path):
    random = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    folder = saved_config(tmp_path / "qwen", "qwen3", **QWEN_KEYS)
    w = Workload.load(write(tmp_path, pretrained(str(folder), config=False)))
    assert w.architecture()["source"] == "model" and w.hash == random.hash
    with_config = Workload.load(
        write(tmp_path, pretrained(str(folder)), "y.toml")
    )  # [model.config] checked against it, equal
    assert with_config.hash == random.hash


def test_another_model_under_a_qwen_config_is_refused_and_alone_changes_the_hash(tmp_path):
    """The Llama hub_id under a Qwen [model.config] of issue 33: refused; without [model.config] it has its own hash."""
    llama = saved_config(
        tmp_path / "llama",
        "llama",
        vocab_size=2048,
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    line = refusal(write(tmp_path, pretrained(str(llama))))
    assert f"model.model_type = 'qwen3' but '{llama}' is a 'llama' model" in line
    w = Workload.load(write(tmp_path, pretrained(str(llama), config=False), "y.toml"))
    assert (
        w.architecture()["model_type"] == "llama"
        and w.hash != Workload.load(ROOT / "workloads" / "tiny-qwen3.toml").hash
    )


def test_a_model_config_that_is_not_the_models_is_one_line(tmp_path):
    folder = saved_config(tmp_path / "qwen", "qwen3", **dict(QWEN_KEYS, num_hidden_layers=4))
    line = refusal(write(tmp_path, pretrained(str(folder))))
    assert f"[model.config] is not the architecture of '{folder}': " in line
    assert "num_hidden_layers = 2 here, 4 in the model" in line and "leave [model.config] out" in line


def test_offline_a_given_config_is_hashed_then_checked_by_the_worker(tmp_path):
    later = tmp_path / "not-downloaded-yet"  # neither a folder nor in the hub cache when the workload loads
    w = Workload.load(write(tmp_path, pretrained(str(later))))
    assert (
        w.architecture()["source"] == "given" and w.hash == Workload.load(ROOT / "workloads" / "tiny-qwen3.toml").hash
    )
    saved_config(later, "qwen3", **dict(QWEN_KEYS, hidden_size=256))  # what the worker then finds
    from harness.measuring.build import check_architecture

    with pytest.raises(SpecError) as err:
        check_architecture(w)
    assert "hidden_size = 128 here, 256 in the model" in str(err.value) and "\n" not in str(err.value)


def test_offline_without_model_config_says_what_to_do(tmp_path):
    line = refusal(write(tmp_path, pretrained(str(tmp_path / "nowhere"), config=False)))
    assert "its config cannot be resolved" in line and "give [model.config]" in line and "local folder" in line


def test_hub_id_without_pretrained_is_refused(tmp_path):
    assert "model.hub_id and model.revision load pretrained weights" in refusal(
        write(tmp_path, edited('init = "random"', 'init = "random"\nhub_id = "a/b"'))
    )


# ---- data ----------------------------------------------------------------------------------------------------------
LOCAL = '[data]\nsource = "local"\nid = "{id}"\nnum_samples = 4\n{extra}'


def with_data(tmp_path, extra: str = "", rows: list | None = None) -> Workload:
    import json

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows or []))
    text = re.sub(r"\[data\]\n.*?\n\n", LOCAL.format(id=data, extra=extra) + "\n", TINY, flags=re.S)
    return Workload.load(write(tmp_path, text, "data.toml"))


CHATS = [
    {"conversation": [{"role": "user", "content": "w1 w2"}, {"role": "assistant", "content": "w3"}], "body": "w4 w5"}
] * 6


def test_a_chat_template_string_is_applied_to_the_tokenizer(tmp_path):
    from harness.measuring.build import build_tokenizer

    template = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} {% endfor %}"
    w = with_data(tmp_path, f'messages_column = "conversation"\nchat_template = "{template}"\n', CHATS)
    tok = build_tokenizer(w)
    assert tok.chat_template == template
    assert tok.apply_chat_template(CHATS[0]["conversation"], tokenize=False) == "[user] w1 w2 [assistant] w3 "
    assert w.hash != with_data(tmp_path, 'messages_column = "conversation"\n', CHATS).hash
    assert (
        build_tokenizer(dataclasses.replace(w, data=dataclasses.replace(w.data, chat_template=False))).chat_template
        is None
    )


@pytest.mark.parametrize(
    "extra, expected",
    [
        ('chat_template = "{% for m in messages %}"\n', "data.chat_template is not a valid Jinja template"),
        ('chat_template = "plain words"\n', "data.chat_template has no Jinja tag"),
        (
            'text_column = "body"\nchat_template = "{{ messages }}"\n',
            "with data.text_column the rows are plain text and it would be ignored",
        ),
        ('name = "subset"\n', "data.name (a subset) applies to hub datasets only"),
        ('text_column = "a"\nmessages_column = "b"\n', "exclude each other"),
    ],
)
def test_data_keys_that_would_be_ignored_are_refused(tmp_path, extra, expected):
    with pytest.raises(SpecError) as err:
        with_data(tmp_path, extra, CHATS)
    assert expected in str(err.value) and "data.toml: " in str(err.value), str(err.value)
    line = refusal(
        write(
            tmp_path, edited('source = "synthetic"', 'source = "synthetic"\nchat_template = "{{ messages }}"'), "s.toml"
        )
    )
    assert "synthetic data has none, so it would be ignored" in line


def test_hub_subset_and_column_mapping_are_accepted():
    d = DataSpec(source="hub", id="org/data", name="subset-a", split="train[:10%]", text_column="body")
    assert (d.name, d.text_column, d.conversational) == ("subset-a", "body", False)
    assert DataSpec(source="hub", id="org/data", messages_column="conversation").conversational


def test_local_columns_are_mapped_to_what_trl_reads(tmp_path):
    from harness.measuring.build import build_dataset, build_tokenizer

    w = with_data(tmp_path, 'messages_column = "conversation"\n', CHATS)
    ds = build_dataset(w, build_tokenizer(w))
    assert ds.column_names == ["messages"] and len(ds) == 4
    w = with_data(tmp_path, 'text_column = "body"\nchat_template = false\n', CHATS)
    assert build_dataset(w, build_tokenizer(w)).column_names == ["text"]
    for extra, expected in (
        ('text_column = "nope"\n', "data.text_column = 'nope' is not a column of"),
        ('messages_column = "conversation"\nchat_template = false\n', "data.chat_template = false but the rows"),
    ):
        w = with_data(tmp_path, extra, CHATS)
        with pytest.raises(SpecError, match=re.escape(expected)):
            build_dataset(w, build_tokenizer(w))


def test_data_loader_workers_are_configurable(tmp_path):
    import torch

    from harness.measuring.build import sft_config

    w = Workload.load(write(tmp_path, edited("cpu_threads = 1", "cpu_threads = 1\ndataloader_num_workers = 2")))
    assert sft_config(w, w.decompositions[0], str(tmp_path / "o"), torch.device("cpu")).dataloader_num_workers == 2
    assert w.hash != Workload.load(ROOT / "workloads" / "tiny-qwen3.toml").hash
    assert "train.dataloader_num_workers must be an integer >= 0, got -1" in refusal(
        write(tmp_path, edited("cpu_threads = 1", "cpu_threads = 1\ndataloader_num_workers = -1"), "n.toml")
    )


# ---- QLoRA ---------------------------------------------------------------------------------------------------------
def qlora():
    return load_workloads(ROOT / "workloads")["qwen3-1.7b-qlora"]


def test_the_qlora_workload_is_the_lora_one_with_4bit_weights():
    ws = load_workloads(ROOT / "workloads")
    q, lo = ws["qwen3-1.7b-qlora"], ws["qwen3-1.7b-lora"]
    assert q.quantization == QuantizationSpec(bnb_4bit_compute_dtype="bf16") and "cpu" not in q.devices
    assert [d.id for d in q.decompositions] == ["1x4", "2x2", "4x1"] and q.train.precision == "bf16"
    assert (
        dataclasses.replace(
            q,
            name=lo.name,
            description=lo.description,
            quantization=None,
            devices=lo.devices,
            train=dataclasses.replace(q.train, precision=lo.train.precision),
        )
        == lo
    )
    assert q.hash != lo.hash and q.architecture() == lo.architecture()


def test_qlora_under_fp16_is_refused_before_any_training(tmp_path):
    text = (
        (ROOT / "workloads" / "qwen3-1.7b-qlora.toml").read_text().replace('precision = "bf16"', 'precision = "fp16"')
    )
    assert "train.precision = 'fp16' cannot train a QLoRA adapter" in refusal(write(tmp_path, text, "q.toml"))


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("bnb_4bit_quant_type", "int3", "quantization.bnb_4bit_quant_type must be one of 'nf4', 'fp4', got 'int3'"),
        (
            "bnb_4bit_compute_dtype",
            "float16",
            "quantization.bnb_4bit_compute_dtype must be one of 'fp16', 'bf16', 'fp32'",
        ),
        ("load_in_4bit", False, "only 4-bit is supported"),
    ],
)
def test_bad_quantization_keys_are_one_line(tmp_path, key, value, expected):
    text = (ROOT / "workloads" / "qwen3-1.7b-qlora.toml").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith(key + " ="))
    toml_value = f'"{value}"' if isinstance(value, str) else str(value).lower()
    assert expected in refusal(write(tmp_path, text.replace(line, f"{key} = {toml_value}")))


def fake_bitsandbytes(monkeypatch, backends):
    """bitsandbytes as this process sees it: importable with ``backends``, or (None) not installed."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: (None if backends is None else object()) if name == "bitsandbytes" else real(name, *a),
    )
    if backends is None:
        monkeypatch.setitem(sys.modules, "bitsandbytes", None)  # import fails as if absent
    else:
        monkeypatch.setitem(
            sys.modules, "bitsandbytes", types.SimpleNamespace(supported_torch_devices=set(backends), __version__="9.9")
        )


def test_qlora_where_bitsandbytes_cannot_run_is_one_line(monkeypatch):
    import torch

    from harness.measuring import quantized

    w = qlora()
    fake_bitsandbytes(monkeypatch, None)
    for device in ("cpu", "h200"):
        with pytest.raises(
            SpecError,
            match=r"^qwen3-1.7b-qlora: \[quantization\] 4-bit weights need bitsandbytes, "
            rf"which is not installed here \({device}\): pip install bitsandbytes",
        ):
            w.check_device(device)
    with pytest.raises(SpecError, match="not installed here"):
        quantized.bnb_config(w, torch.device("cuda"), {})
    fake_bitsandbytes(monkeypatch, {"cuda"})  # a build without its CPU backend
    w.check_device("cpu")  # installed: what it can run on is the worker's question
    with pytest.raises(SpecError) as err:
        quantized.bnb_config(w, torch.device("cpu"), {})
    assert str(err.value) == (
        "qwen3-1.7b-qlora: [quantization] bitsandbytes 9.9 has no backend for cpu (it has: cuda): "
        "run it on a CUDA GPU, or remove [quantization]"
    )


def test_qlora_config_follows_the_workload(monkeypatch):
    """With bitsandbytes importable, the BitsAndBytesConfig carries the table's values (built on the CPU, never
    loaded)."""
    import torch

    from harness.measuring import quantized
    from harness.measuring.build import DTYPES

    fake_bitsandbytes(monkeypatch, {"cuda"})
    w = qlora()
    w.check_device("h200")
    cfg = quantized.bnb_config(w, torch.device("cuda"), DTYPES)
    assert (cfg.load_in_4bit, cfg.bnb_4bit_quant_type, cfg.bnb_4bit_use_double_quant, cfg.bnb_4bit_compute_dtype) == (
        True,
        "nf4",
        True,
        torch.bfloat16,
    )
    bf = dataclasses.replace(
        w,
        quantization=dataclasses.replace(w.quantization, bnb_4bit_compute_dtype=None, bnb_4bit_quant_type="fp4"),
        train=dataclasses.replace(w.train, precision="fp32"),
    )
    cfg = quantized.bnb_config(bf, torch.device("cuda"), DTYPES)
    assert (cfg.bnb_4bit_quant_type, cfg.bnb_4bit_compute_dtype) == (
        "fp4",
        torch.float32,
    )  # compute dtype: train.precision


def test_qlora_without_bitsandbytes_is_refused_at_collection(perf_project):
    import importlib.util
    import shutil

    if importlib.util.find_spec("bitsandbytes") is not None:
        pytest.skip("bitsandbytes is installed here")
    shutil.copy(ROOT / "workloads" / "qwen3-1.7b-qlora.toml", perf_project.path / "workloads")
    result = perf_project.runpytest_subprocess(
        "perftests", "--gpu=cpu", "--workload", "qwen3-1.7b-qlora", "--collect-only"
    )
    assert result.ret != 0
    lines = [ln for ln in result.outlines if "[quantization]" in ln]
    assert (
        lines
        and "bad workload: qwen3-1.7b-qlora: [quantization] 4-bit weights need bitsandbytes, which is not installed"
        in lines[0]
    ), result.stdout.str()
    assert "Traceback" not in result.stdout.str()


@pytest.mark.long
def test_qlora_trains_where_bitsandbytes_runs_on_the_cpu(tmp_path):
    """The whole QLoRA path (random weights saved and loaded back in 4 bits, prepare_model_for_kbit_training, TRL's
    LoRA) for a few steps of the tiny model, where bitsandbytes with its CPU backend is installed."""
    bnb = pytest.importorskip("bitsandbytes")
    if "cpu" not in set(getattr(bnb, "supported_torch_devices", ())):
        pytest.skip("this bitsandbytes has no CPU backend")
    from harness.measuring.runner import RunRequest, run_one

    w = Workload.load(
        write(
            tmp_path,
            edited("max_steps = 20", "max_steps = 3").replace("warmup_steps = 3", "warmup_steps = 1")
            + '\n[quantization]\nbnb_4bit_compute_dtype = "fp32"\n',
        )
    )
    rec = run_one(RunRequest(w, w.decompositions[0], 1), tmp_path / "out", "s", 600, "cpu")
    assert rec["status"] == "ok", rec.get("error")
    assert len(rec["losses"]) == 3 and all(x > 0 for x in rec["losses"])


# ---- the documentation ---------------------------------------------------------------------------------------------
def test_docs_list_every_key():
    from harness.spec import _SECTIONS

    doc = (ROOT / "docs" / "workloads.md").read_text()
    keys = [f"{s}.{f.name}" for s, cls in _SECTIONS.items() for f in dataclasses.fields(cls)]
    keys += ["name", "description", "devices", "batch.effective", "batch.decompositions"]
    missing = [k for k in keys if f"`{k}`" not in doc]
    assert not missing, f"document these workload keys in docs/workloads.md: {missing}"
    assert len(doc.splitlines()) <= 220
    assert ModelSpec.__doc__ and all(cls.__doc__ for cls in _SECTIONS.values())


def test_the_docs_examples_load():
    """Each TOML example of docs/workloads.md, laid over tiny-qwen3 (on a GPU), loads; a pretrained one needs the
    hub."""
    import tomllib

    doc = (ROOT / "docs" / "workloads.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", doc, flags=re.S)
    assert len(blocks) >= 5
    for block in blocks:
        part = tomllib.loads(block)
        if part.get("model", {}).get("init") == "pretrained":
            continue
        base = tomllib.loads(TINY)
        for key, value in part.items():
            base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) and key != "data" else value
        base["devices"] = ["gpu"]
        Workload.from_dict(base, where="docs/workloads.md")

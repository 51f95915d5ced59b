"""model.tokenizer: a team's chat text reaches a random-weight model as real token ids (the built-in byte-level
tokenizer, or a tokenizer folder of its own), the tokenizer is part of the workload's hash (a folder by its content),
and the built-in word-level tokenizer on real text is said in the report: its data is synthetic in all but length."""

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

from harness.inputs import check_inputs, digest
from harness.results.run import Run
from harness.spec import SpecError, Workload, changed_fields
from harness.spec_tokenizer import text_unread

ROOT = Path(__file__).resolve().parent.parent
TINY = (ROOT / "workloads" / "tiny-qwen3.toml").read_text()
CHATS = [
    {
        "messages": [
            {"role": "user", "content": f"How do I reverse a list in Python? Example {i}."},
            {"role": "assistant", "content": "Use reversed(items), or items[::-1] for a reversed copy."},
        ]
    }
    for i in range(6)
]


def workload(tmp_path, tokenizer: str | None = None, data: bool = True, vocab: int | None = None) -> Workload:
    """tiny-qwen3 (random weights) on a JSONL of English chats (``data``) or on synthetic rows, with
    ``model.tokenizer`` where given and ``model.config.vocab_size`` = ``vocab`` where given."""
    text = TINY
    if data:
        rows = tmp_path / "chat.jsonl"
        rows.write_text("".join(json.dumps(r) + "\n" for r in CHATS))
        text = re.sub(
            r"\[data\]\n.*?\n\n", f'[data]\nsource = "local"\nid = "{rows}"\nnum_samples = 4\n\n', text, flags=re.S
        )
    if tokenizer is not None:
        text = text.replace('init = "random"\n', f'init = "random"\ntokenizer = "{tokenizer}"\n')
    if vocab is not None:
        text = text.replace("vocab_size = 2048", f"vocab_size = {vocab}")
    path = tmp_path / "mine.toml"
    path.write_text(text)
    return Workload.load(path)


def saved_tokenizer(folder: Path, extra_words: int = 0) -> Path:
    """A word-level tokenizer of the chats' English words, built offline and saved with save_pretrained."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = sorted({w for r in CHATS for m in r["messages"] for w in re.findall(r"\w+|[^\w\s]+", m["content"])})
    specials = ["<pad>", "<|im_start|>", "<|im_end|>", "<unk>"]
    words += [f"extra{i}" for i in range(extra_words)]
    vocab = {t: i for i, t in enumerate(specials + words + ["user", "assistant"])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|im_end|>", unk_token="<unk>")
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    fast.save_pretrained(folder)
    return folder


def trainer_ids(w: Workload, tmp_path) -> tuple[list[list[int]], object, float | None]:
    """The input ids the trainer of ``w`` gets (its tokenized training rows), its tokenizer and the worker's <unk>
    share, built as the worker builds them, without training."""
    import torch

    from harness.measuring.worker import Timing, WorkerRequest, build_trainer

    req = WorkerRequest(w.to_dict(), w.decompositions[-1].id, force_cpu=True, phases=False)
    threads = torch.get_num_threads()
    try:
        built = build_trainer(req, Timing(), str(tmp_path / "out"), sampler=False)
    finally:
        torch.set_num_threads(threads)  # the worker sets train.cpu_threads for its process
    ds = built.trainer.train_dataset
    return [list(ids) for ids in ds["input_ids"]], built.trainer.processing_class, built.unk_share


# ---- the text reaches the model ------------------------------------------------------------------------------------
def test_real_chat_text_reaches_a_random_model_as_bytes(tmp_path):
    w = workload(tmp_path)
    assert (
        w.model.tokenizer is None and w.tokenizer == "bytes" and not text_unread(w.model, w.data)
    )  # the default for real text
    ids, tok, unk = trainer_ids(w, tmp_path)
    assert len(ids) == 4 and all(len(row) > 40 for row in ids)
    assert unk == 0.0 and not any(tok.unk_token_id in row for row in ids)
    text = tok.decode(ids[0])
    assert "How do I reverse a list in Python?" in text and "items[::-1]" in text
    assert set(ids[0]) - {1, 2} <= set(range(4, 260))  # the specials of the chat template, then bytes


def test_the_word_level_tokenizer_leaves_only_the_length_and_says_so(tmp_path):
    w = workload(tmp_path, "words")
    assert text_unread(w.model, w.data)
    ids, tok, unk = trainer_ids(w, tmp_path)
    words = [i for row in ids for i in row if i not in (tok.pad_token_id, tok.eos_token_id, 1)]
    assert words and set(words) == {tok.unk_token_id} and unk is not None and unk > 0.5


def test_a_local_tokenizer_folder_is_read_offline_and_its_words_are_not_unk(tmp_path):
    folder = saved_tokenizer(tmp_path / "tok")
    w = workload(tmp_path, str(folder))
    assert w.tokenizer == str(folder) and w.model.tokenizer_digest == digest(folder)
    check_inputs(w)
    ids, tok, unk = trainer_ids(w, tmp_path)
    assert unk == 0.0 and len(tok) == len(json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"])
    assert "reversed" in tok.decode(ids[0])


# ---- the hash ------------------------------------------------------------------------------------------------------
def test_the_tokenizer_enters_the_hash_and_the_former_defaults_keep_theirs(tmp_path):
    synthetic = Workload.load(ROOT / "workloads" / "tiny-qwen3.toml")
    assert synthetic.tokenizer == "words" and "tokenizer" not in synthetic.to_dict()["model"]
    assert workload(tmp_path, "words", data=False).hash == synthetic.hash  # written out at its former default
    assert workload(tmp_path, "bytes", data=False).hash != synthetic.hash
    pretrained = dataclasses.replace(
        synthetic, model=dataclasses.replace(synthetic.model, init="pretrained", hub_id="o/m")
    )
    assert pretrained.tokenizer == "model" and pretrained.hash == synthetic.hash
    by_bytes, by_words = workload(tmp_path), workload(tmp_path, "words")
    assert by_bytes.hash != by_words.hash and by_bytes.to_dict()["model"]["tokenizer"] == "bytes"
    assert Workload.from_dict(by_bytes.to_dict()).hash == by_bytes.hash  # what the worker rebuilds from its request
    assert Workload.from_dict(by_words.to_dict()).tokenizer == "words"
    # a spec stored before the key ran the word-level tokenizer: the baseline refusal names the change
    old = by_words.to_dict()
    del old["model"]["tokenizer"]
    assert changed_fields(old, by_bytes.to_dict()) == ["model.tokenizer: 'words' -> 'bytes-v1'"]


def test_a_tokenizer_folder_is_hashed_by_its_content(tmp_path):
    folder = saved_tokenizer(tmp_path / "tok")
    w = workload(tmp_path, str(folder))
    moved = shutil.copytree(folder, tmp_path / "elsewhere")
    assert workload(tmp_path, str(moved)).hash == w.hash
    assert w.hash not in (workload(tmp_path).hash, workload(tmp_path, "words").hash)
    saved_tokenizer(folder, extra_words=3)
    edited = workload(tmp_path, str(folder))
    assert edited.hash != w.hash and Workload.from_dict(edited.to_dict()).hash == edited.hash
    assert changed_fields(w.to_dict(), edited.to_dict()) == [
        f"model.tokenizer: a folder of content {w.model.tokenizer_digest[:19]} -> a folder of content "
        f"{edited.model.tokenizer_digest[:19]}"
    ]
    from harness.measuring.build import build_tokenizer

    saved_tokenizer(folder)  # changed again after the workload was loaded: the worker refuses it
    with pytest.raises(SpecError, match=r"model.tokenizer_digest: .*tok changed since the workload was loaded"):
        build_tokenizer(edited)


# ---- refusals, one line each ---------------------------------------------------------------------------------------
def test_a_tokenizer_folder_that_is_not_there_or_holds_none_is_refused_at_load(tmp_path):
    with pytest.raises(SpecError) as err:
        workload(tmp_path, str(tmp_path / "nowhere"))
    assert re.fullmatch(r".*mine\.toml: model\.tokenizer = '.*nowhere': no such folder.*", str(err.value))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpecError) as err:
        workload(tmp_path, str(tmp_path / "empty"))
    line = str(err.value)
    assert "mine.toml: model.tokenizer = " in line and "holds no tokenizer (no tokenizer.json" in line, line


def test_a_tokenizer_that_does_not_fit_the_model_is_refused(tmp_path):
    with pytest.raises(SpecError) as err:
        workload(tmp_path, vocab=128)
    line = str(err.value)
    assert "mine.toml: model.tokenizer = 'bytes' (the default" in line and "vocab_size is 128" in line, line
    assert workload(tmp_path, data=False, vocab=128).tokenizer == "words"  # synthetic rows draw ids below vocab_size
    folder = saved_tokenizer(tmp_path / "tok", extra_words=300)
    w = workload(tmp_path, str(folder), vocab=300)
    with pytest.raises(SpecError, match=r"model.tokenizer = '.*tok' has \d+ token ids but model.config.vocab_size"):
        check_inputs(w)
    with pytest.raises(SpecError, match=r"model.tokenizer = 'model' is the pretrained model's own tokenizer"):
        workload(tmp_path, "model")


# ---- the report ----------------------------------------------------------------------------------------------------
def test_the_report_says_the_data_is_synthetic_in_all_but_length(tmp_path, fake_runs):
    from harness.judging import baseline as bl
    from harness.judging.judge import Judge
    from harness.reporting import report

    w = workload(tmp_path, "words")
    cases = tuple((w.name, d.id) for d in w.decompositions)
    missing = {w.name: bl.MissingBaseline("no baseline")}
    data = report.build(
        Judge(
            {w.name: w},
            cases,
            tuple(Run.from_json(r) for r in fake_runs(w, [100.0] * 3, unk_share=0.97)),
            missing,
            "cpu",
        )
    )
    (unread,) = data.data_unread
    assert unread["workload"] == w.name and unread["unk_share"] == 0.97 and unread["tokenizer"] == "words"
    assert "synthetic in all but length" in unread["line"] and "97% of the tokens" in unread["line"]
    report.write(data, tmp_path / "out")
    assert f"**data:** {unread['line']}" in (tmp_path / "out" / "report.md").read_text()
    assert json.loads((tmp_path / "out" / "report.json").read_text())["data_unread"][0]["unk_share"] == 0.97
    unknown = report.build(Judge({w.name: w}, cases, (), missing, "cpu")).data_unread[0]
    assert unknown["unk_share"] is None and "share of <unk> tokens is not known" in unknown["line"]
    b = workload(tmp_path)
    assert report.build(Judge({b.name: b}, cases, (), missing, "cpu")).data_unread == ()

"""What a session's report says of a workload whose text does not reach the model: on hub or local data, the built-in
word-level tokenizer (``model.tokenizer = 'words'``) turns the text into ``<unk>`` ids, so the data is synthetic in all
but length. The report shows the line at its top (:mod:`harness.reporting.report`), with the share of ``<unk>`` ids the
runs recorded (``unk_share``, the worker's)."""

from __future__ import annotations

from harness.spec_tokenizer import text_unread


def unread(judge) -> list[dict]:
    """The workloads whose rows' text does not reach the model (:func:`harness.spec_tokenizer.text_unread`): each with
    its data, the largest share of ``<unk>`` ids its runs recorded (None where none did) and a line for the reader."""
    out = []
    for name, w in judge.workloads.items():
        if not text_unread(w.model, w.data):
            continue
        shares = [r.unk_share for r in judge.records if r.workload == name and r.unk_share is not None]
        share = max(shares) if shares else None
        said = (
            f"{share:.0%} of the tokens the trainer got are <unk>"
            if share is not None
            else "the share of <unk> tokens is not known: no run recorded it"
        )
        line = (
            f"{name}: the data is synthetic in all but length: the built-in word-level tokenizer (model.tokenizer = "
            f"'words') knows only the words w0 ... w255, so the text of {w.data.id} does not reach the model ({said}); "
            "set model.tokenizer = 'bytes' or a tokenizer folder"
        )
        out.append({"workload": name, "data": w.data.id, "tokenizer": w.tokenizer, "unk_share": share, "line": line})
    return out

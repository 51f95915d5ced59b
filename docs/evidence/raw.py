"""The raw data of an evidence page: one gzipped JSONL per experiment (``<experiment>.jsonl.gz``).

Each line is one record of an original file, under the file's path relative to the experiment's folder:

* ``{"file": "lease-a/run/blocks.jsonl", "record": {...}}``: one line of a JSONL file (``"sep": "default"`` when the
  line was written with ``json.dumps``' default separators rather than the compact ones);
* ``{"file": "lease-a/run/report.json", "json": {...}, "indent": 1}``: a whole JSON file;
* ``{"file": "lease-a/nvidia-smi.txt", "text": "..."}``: a small text file.

``load(path)`` gives ``{file: list of records | dict | str}``; ``expand(path, dest)`` writes the files again under
``dest`` (a JSONL file line by line, a JSON file with its indent), so that ``python -m harness recover``, ``report``,
``compare`` or ``history`` can be run on them as on the original results dirs:

    python docs/evidence/raw.py list docs/evidence/which-block-length/h200-4x1-k1-three-leases.jsonl.gz
    python docs/evidence/raw.py expand docs/evidence/which-block-length/h200-4x1-k1-three-leases.jsonl.gz /tmp/k1

``pack`` makes such a file from a results dir (``python docs/evidence/raw.py pack OUT.jsonl.gz DIR [NAME=DIR ...]``).
Worker logs and terminal logs are not evidence and are left out by ``pack``.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

COMPACT = (",", ":")
SKIP_SUFFIXES = (".log", ".png", ".pyc")


def records(path: str | Path) -> Iterator[dict]:
    """The lines of an experiment file, in order."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def load(path: str | Path) -> dict[str, list | dict | str]:
    """``{file: content}``: a JSONL file as its list of records, a JSON file as its object, a text file as its text."""
    out: dict[str, list | dict | str] = {}
    for r in records(path):
        f = r["file"]
        if "record" in r:
            out.setdefault(f, []).append(r["record"])
        elif "json" in r:
            out[f] = r["json"]
        else:
            out[f] = r["text"]
    return out


def expand(path: str | Path, dest_dir: str | Path) -> list[Path]:
    """Write every file of the experiment under ``dest_dir``; returns the paths written."""
    dest = Path(dest_dir)
    lines: dict[str, list[str]] = {}
    written: list[Path] = []
    for r in records(path):
        f = r["file"]
        if "record" in r:
            sep = None if r.get("sep") == "default" else COMPACT
            lines.setdefault(f, []).append(json.dumps(r["record"], separators=sep))
            continue
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        if "json" in r:
            target.write_text(json.dumps(r["json"], indent=r.get("indent")) + r.get("end", "\n"))
        else:
            target.write_text(r["text"])
        written.append(target)
    for f, ls in lines.items():
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(x + "\n" for x in ls))
        written.append(target)
    return sorted(written)


def _json_record(name: str, text: str) -> dict:
    obj = json.loads(text)
    for indent in (1, 2, None, 4):
        for end in ("\n", ""):
            if json.dumps(obj, indent=indent) + end == text:
                return {"file": name, "json": obj, "indent": indent, **({"end": end} if end != "\n" else {})}
    return {"file": name, "json": obj, "indent": 1}


def _jsonl_records(name: str, text: str) -> Iterator[dict]:
    for line in text.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if json.dumps(obj, separators=COMPACT) == line:
            yield {"file": name, "record": obj}
        else:
            yield {"file": name, "record": obj, "sep": "default"}


def file_records(src: Path, name: str) -> Iterator[dict]:
    """The records of one original file ``src``, stored under ``name``."""
    text = src.read_text(encoding="utf-8")
    if src.suffix == ".jsonl":
        yield from _jsonl_records(name, text)
    elif src.suffix == ".json":
        yield _json_record(name, text)
    else:
        yield {"file": name, "text": text}


def pack(out: str | Path, sources: Iterable[tuple[str | Path, str]]) -> int:
    """Write ``out`` from ``(source file, name)`` pairs; returns the number of files packed."""
    n = 0
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as raw:
        for src, name in sources:
            for r in file_records(Path(src), str(name)):
                raw.write((json.dumps(r, separators=COMPACT, ensure_ascii=False) + "\n").encode("utf-8"))
            n += 1
    return n


def tree(root: str | Path, prefix: str = "") -> list[tuple[Path, str]]:
    """``(file, name)`` pairs of every file under ``root`` but logs and images, named ``prefix/<path below root>``."""
    root = Path(root)
    files = [p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix not in SKIP_SUFFIXES]
    return [(p, str(Path(prefix) / p.relative_to(root)) if prefix else str(p.relative_to(root))) for p in files]


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "list":
        for f, v in load(argv[1]).items():
            kind = f"{len(v)} records" if isinstance(v, list) else "json" if isinstance(v, dict) else f"{len(v)} chars"
            print(f"{f}  ({kind})")
        return 0
    if len(argv) == 3 and argv[0] == "expand":
        for p in expand(argv[1], argv[2]):
            print(p)
        return 0
    if len(argv) >= 3 and argv[0] == "pack":
        pairs = [tuple(a.split("=", 1)) if "=" in a else ("", a) for a in argv[2:]]
        print(pack(argv[1], [x for name, d in pairs for x in tree(d, name)]), "files")
        return 0
    print("usage: raw.py list FILE | expand FILE DEST | pack OUT DIR [NAME=DIR ...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The repository's layout: docs/ stays small (evidence as compressed data, not logs), every evidence page states its
question, answer, date, commit and command, and nothing in the repository is named after the work round that made it
(a result is named by the question it answers and its date). Reads the tracked files only (``git ls-files``)."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_DOCS_FILES = 400
MAX_DOCS_BYTES = 13 * 2**20  # the raw data of every experiment, one compressed JSONL each (a census with its
# timeline is about 150 kB before compression), and the pages
LABELS = ("Question", "Answer", "Date", "Commit", "Command")

# built from pieces, so that this file does not name what it looks for
WORD = "sess" + "ion"
ROUND_TEXT = re.compile(rf"\b{WORD}s? ?\d+|\b{WORD}\d+", re.I)
ROUND_PATH_PART = re.compile(r"(^|[-_/])" + "s" + r"\d{1,2}([-_/.]|$)", re.I)
SKIPPED_SUFFIXES = (".gz",)


def tracked(*paths: str) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", *paths], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [p for p in out.split("\0") if p and (ROOT / p).is_file()]


def text_of(path: str) -> str | None:
    """The file's text, or None for a binary or compressed file."""
    if path.endswith(SKIPPED_SUFFIXES):
        return None
    data = (ROOT / path).read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


# a shallow clone (CI's checkout) holds no older commits to look the pages' commits up in
FULL_HISTORY = (
    subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    == "false"
)


def test_docs_stay_small():
    files = tracked("docs")
    size = sum((ROOT / p).stat().st_size for p in files)
    assert len(files) <= MAX_DOCS_FILES, (
        f"docs/ tracks {len(files)} files, more than {MAX_DOCS_FILES}: pack raw data into one .jsonl.gz per experiment"
    )
    assert size <= MAX_DOCS_BYTES, f"docs/ holds {size / 2**20:.1f} MiB, more than {MAX_DOCS_BYTES / 2**20:.0f} MiB"


def test_every_evidence_page_states_question_answer_date_commit_and_command():
    pages = sorted((ROOT / "docs" / "evidence").glob("*/README.md"))
    assert pages, "no evidence pages"
    problems = []
    for page in pages:
        lines = page.read_text().splitlines()
        for label in LABELS:
            hits = [ln for ln in lines if ln.startswith(f"**{label}:**")]
            if not hits or not hits[0][len(label) + 5 :].strip():
                problems.append(f"{page.parent.name}: no '**{label}:**' line")
        date = next((ln for ln in lines if ln.startswith("**Date:**")), "")
        if date and not re.match(r"\*\*Date:\*\* \d{4}-\d{2}-\d{2}\b", date):
            problems.append(f"{page.parent.name}: the date is not YYYY-MM-DD: {date}")
        commit = next((ln for ln in lines if ln.startswith("**Commit:**")), "")
        m = re.match(r"\*\*Commit:\*\* ([0-9a-f]{7,40})\b", commit)
        if commit and not m:
            problems.append(f"{page.parent.name}: the commit is not a hash: {commit}")
        elif (
            m
            and FULL_HISTORY
            and subprocess.run(
                ["git", "cat-file", "-e", f"{m.group(1)}^{{commit}}"], cwd=ROOT, capture_output=True
            ).returncode
        ):
            problems.append(f"{page.parent.name}: commit {m.group(1)} is not in this repository")
    assert not problems, "\n".join(problems)


def test_the_evidence_index_links_every_page():
    index = (ROOT / "docs" / "evidence" / "README.md").read_text()
    linked = set(re.findall(r"\]\(([a-z0-9-]+)/\)", index))
    folders = {p.parent.name for p in (ROOT / "docs" / "evidence").glob("*/README.md")}
    assert not folders - linked, f"docs/evidence/README.md does not list {sorted(folders - linked)}: add a row per page"
    assert not linked - folders, f"docs/evidence/README.md lists {sorted(linked - folders)}, which have no page"


def test_nothing_is_named_after_a_work_round():
    me = Path(__file__).resolve().relative_to(ROOT).as_posix()
    offenders = []
    for path in tracked():
        if path == me:
            continue
        if ROUND_TEXT.search(path) or ROUND_PATH_PART.search(path):
            offenders.append(f"{path}: its path")
            continue
        text = text_of(path)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            m = ROUND_TEXT.search(line)
            if m:
                offenders.append(f"{path}:{n}: {m.group(0)!r}")
                break
    assert not offenders, (
        f"{len(offenders)} tracked files name a work round (name a result by its question and date):\n"
        + "\n".join(offenders)
    )

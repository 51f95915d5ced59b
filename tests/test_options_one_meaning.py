"""Each option name has one meaning: every option string that ``python -m harness`` (each command, nested ones such as
``store alerts`` included) and the pytest plugin declare is declared with one help text, one type, one action, one set
of choices and one nargs. Its default may differ from command to command (argparse's "(default: ...)" is not part of
the meaning)."""

from __future__ import annotations

import argparse
import re
from collections import defaultdict

from harness import plugin
from harness.commands import cli

_ACTIONS = {
    argparse._StoreAction: "store",
    argparse._AppendAction: "append",
    argparse._StoreTrueAction: "store_true",
    argparse._StoreFalseAction: "store_false",
    argparse._StoreConstAction: "store_const",
    argparse._CountAction: "count",
}


def _help(text: str | None) -> str:
    return re.sub(r" \(default: %\(default\)s\)$", "", text or "")


def _meaning(help_: str | None, type_, action: str, choices, nargs) -> tuple:
    return (_help(help_), getattr(type_, "__name__", type_), action, tuple(choices or ()), nargs)


def _commands(p: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command, option string, meaning) of every option of ``p`` and of its subcommands, nested ones included."""
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _commands(sub, (*path, name))
        elif a.option_strings and not isinstance(a, argparse._HelpAction):
            meaning = _meaning(a.help, a.type, _ACTIONS.get(type(a), type(a).__name__), a.choices, a.nargs)
            for flag in a.option_strings:
                yield " ".join(path), flag, meaning


class _Group:
    def __init__(self, seen: list):
        self.seen = seen

    def addoption(self, *flags, **kw):
        action = kw.get("action", "store")
        meaning = _meaning(kw.get("help"), kw.get("type"), action, kw.get("choices"), kw.get("nargs"))
        self.seen += [("pytest", f, meaning) for f in flags]


class _Parser:
    def __init__(self):
        self.seen: list = []

    def getgroup(self, *args, **kwargs):
        return _Group(self.seen)


def declarations() -> list[tuple[str, str, tuple]]:
    """Every option declaration of the command line and of the pytest plugin."""
    pytest_parser = _Parser()
    plugin.pytest_addoption(pytest_parser)
    return [*_commands(cli.parser()), *pytest_parser.seen]


def two_meanings(decls) -> dict[str, dict[tuple, list[str]]]:
    """Each option string declared with more than one meaning -> {meaning: the commands that declare it so}."""
    by_flag: dict[str, dict[tuple, list[str]]] = defaultdict(lambda: defaultdict(list))
    for where, flag, meaning in decls:
        by_flag[flag][meaning].append(where)
    return {f: dict(m) for f, m in by_flag.items() if len(m) > 1}


def test_every_option_name_has_one_meaning():
    clashes = two_meanings(declarations())
    said = [
        f"{flag}: " + "; ".join(f"{', '.join(where)}: {m[0][:60]!r} ({m[2]}, {m[1]})" for m, where in meanings.items())
        for flag, meanings in sorted(clashes.items())
    ]
    assert not said, "options declared with two meanings (declare them once, or rename one):\n" + "\n".join(said)


def test_the_walk_reaches_nested_commands_and_the_plugin():
    decls = declarations()
    where = {(w, f) for w, f, _ in decls}
    assert {("store alerts", "--false-alerts-per-year"), ("baseline update", "--gpu"), ("pytest", "--repeats")} <= where
    assert {("interleave", "--budget-minutes"), ("advise", "--total-budget-minutes"), ("cost", "--model")} <= where


def test_a_second_meaning_is_found():
    rate = "family-wise false-alarm rate"
    decls = [
        ("interleave", "--alpha", _meaning(rate, float, "store", None, None)),
        ("report", "--alpha", _meaning(rate + " (default: %(default)s)", float, "store", None, None)),
        ("store alerts", "--alpha", _meaning("false timing alerts in 365 nights", float, "store", None, None)),
        ("census", "--workload", _meaning("a workload by name", None, "append", None, None)),
        ("interleave", "--workload", _meaning("a workload by name", None, "store", None, None)),
    ]
    clashes = two_meanings(decls)
    assert set(clashes) == {"--alpha", "--workload"}
    assert sorted(map(sorted, clashes["--alpha"].values())) == [["interleave", "report"], ["store alerts"]]


def test_a_command_that_takes_one_workload_refuses_a_second_in_one_line(capsys):
    argv = ["interleave", "--workload", "a", "--workload", "b", "--decomposition", "4x1", "--gpu", "cpu"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --workload given 2 times (a, b); this command takes one --workload"]

"""The nightly's settings, in the one file a team owns: ``nightly.toml`` in the repository root.

Which GPU runners the scheduled night runs on, which workloads each one runs, the A/B of pinned against latest (its
workload, splits and budget), the budgets of the bisect and of the confirmation, the pull-request check's labels,
splits and budget (``[pr]``, read by ``.github/scripts/pr-plan.py``) and the alerts' webhook (``[alerts]``, read by
``python -m harness alert``). The workflow (``.github/workflows/nightly.yml``) reads it through
``.github/scripts/night-plan.py``; ``python -m harness doctor`` says what it means on the machine at hand. A manual
run's inputs, where given, replace the file's values for that run (:meth:`Nightly.with_inputs`).

Only the standard library: the workflow's first job reads the GPU list on a hosted runner that has the checkout and
Python, nothing installed.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from harness.errors import BadInput

FILE = "nightly.toml"
FORMAT = 1
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a runner label suffix, a workload name: nothing a shell would expand
SPLIT = re.compile(r"[1-9][0-9]*x[1-9][0-9]*")
BUDGETS = {"bisect_minutes", "confirm_minutes"}  # the keys of [budgets]
GPU_KEYS = {"workloads"}  # the keys of a [gpu.NAME] table
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # an environment variable's name


class NightlyError(BadInput):
    """``nightly.toml`` (or a manual run's input) that the nightly cannot run with: one line naming the file and key."""


def _names(value, where: str, pattern: re.Pattern = NAME, empty: bool = False) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and pattern.fullmatch(v) for v in value):
        kind = "splits such as 4x1" if pattern is SPLIT else "names of letters, digits, '.', '_' and '-'"
        raise NightlyError(f"{where} must be a list of {kind}, got {value!r}")
    if not value and not empty:
        raise NightlyError(f"{where} is empty: name at least one")
    if len(set(value)) != len(value):
        raise NightlyError(f"{where} names one twice: {list(value)}")
    return tuple(value)


def _minutes(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 360:
        raise NightlyError(
            f"{where} must be a number of minutes above 0 and at most 360 (the job's timeout), got {value!r}"
        )
    return float(value)


@dataclass(frozen=True)
class AB:
    """Pinned (A) against latest (B), block-interleaved on each runner, on a night whose latest releases differ."""

    workload: str
    decompositions: tuple[str, ...] = ("4x1",)
    budget_minutes: float = 4.0
    where: str = FILE

    def __post_init__(self):
        if not isinstance(self.workload, str) or not NAME.fullmatch(self.workload):
            raise NightlyError(f"{self.where}: ab.workload must be a workload's name, got {self.workload!r}")
        object.__setattr__(
            self, "decompositions", _names(self.decompositions, f"{self.where}: ab.decompositions", SPLIT)
        )
        object.__setattr__(self, "budget_minutes", _minutes(self.budget_minutes, f"{self.where}: ab.budget_minutes"))


@dataclass(frozen=True)
class PR:
    """The pull-request check (.github/workflows/pr-check.yml): base pins (A) against the pull request's (B) on each
    GPU."""

    label: str = "perf-check"  # a maintainer's label that starts the check
    accept_label: str = (
        "perf-accepted"  # a maintainer's label that accepts a measured regression: the status passes, saying so
    )
    decompositions: tuple[str, ...] = ("4x1",)
    budget_minutes: float = 4.0  # device minutes per interleaved split; it stops sooner once its verdict is clear
    where: str = FILE

    def __post_init__(self):
        for key in ("label", "accept_label"):
            value = getattr(self, key)
            if not isinstance(value, str) or not NAME.fullmatch(value):
                raise NightlyError(
                    f"{self.where}: pr.{key} must be a label of letters, digits, '.', '_' and '-', got {value!r}"
                )
        if self.label == self.accept_label:
            raise NightlyError(f"{self.where}: pr.label and pr.accept_label are both {self.label!r}: name two labels")
        object.__setattr__(
            self, "decompositions", _names(self.decompositions, f"{self.where}: pr.decompositions", SPLIT)
        )
        object.__setattr__(self, "budget_minutes", _minutes(self.budget_minutes, f"{self.where}: pr.budget_minutes"))


@dataclass(frozen=True)
class Alerts:
    """Where the night's flagged cases go beside its issues: a webhook (``python -m harness alert``), one JSON POST per
    job that flagged one, to the URL held by the environment variable ``webhook_env``. The file names the variable,
    never the URL: the URL is a secret of the repository, which the workflow's step gives that variable."""

    webhook: bool = True  # false: the alert posts nothing, whatever the environment holds
    webhook_env: str = "PERF_WEBHOOK_URL"
    where: str = FILE

    def __post_init__(self):
        if not isinstance(self.webhook, bool):
            raise NightlyError(f"{self.where}: alerts.webhook must be true or false, got {self.webhook!r}")
        env = self.webhook_env
        if not isinstance(env, str) or not ENV_NAME.fullmatch(env):
            raise NightlyError(
                f"{self.where}: alerts.webhook_env must be an environment variable's name such as PERF_WEBHOOK_URL "
                f"(letters, digits and '_'), got {env!r}"
            )


def _keys(cls) -> set[str]:
    """The keys of a table read into ``cls``: its fields, less the file it came from."""
    return {f.name for f in fields(cls)} - {"where"}


@dataclass(frozen=True)
class Tables:
    """``nightly.toml`` as read, before its values are checked: the format, the GPUs and workloads as given, and each
    table (empty where the file has none)."""

    format: object = FORMAT
    gpus: object = None
    workloads: object = None
    ab: dict = field(default_factory=dict)
    budgets: dict = field(default_factory=dict)
    gpu: dict = field(default_factory=dict)
    pr: dict = field(default_factory=dict)
    alerts: dict = field(default_factory=dict)
    where: str = FILE

    def __post_init__(self):
        if self.format != FORMAT:
            raise NightlyError(
                f"{self.where}: format {self.format!r} is not one this suite reads ({FORMAT}); update the suite"
            )
        if self.gpus is None or self.workloads is None:
            raise NightlyError(
                f"{self.where}: needs gpus (the GPU runners, by label suffix) and workloads (the workloads they run)"
            )
        tables = (
            ("ab", self.ab),
            ("budgets", self.budgets),
            ("gpu", self.gpu),
            ("pr", self.pr),
            ("alerts", self.alerts),
        )
        for name, table in tables:
            if not isinstance(table, dict):
                raise NightlyError(f"{self.where}: {name} must be a table ([{name}])")

    @classmethod
    def of(cls, data: dict, where: str) -> Tables:
        """The tables of ``data`` (its top-level keys checked first: unknown ones named)."""
        _check_keys(data, _keys(cls), "", where)
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data}, where=where)


@dataclass(frozen=True)
class Inputs:
    """A manual run's inputs (the workflow_dispatch form), each stripped; None where left empty."""

    gpus: str | None = None
    workloads: str | None = None
    ab_workload: str | None = None
    ab_decompositions: str | None = None
    ab_budget: str | None = None
    bisect_budget: str | None = None

    @classmethod
    def of(cls, inputs: dict | None) -> Inputs:
        got = {k: str(v).strip() for k, v in (inputs or {}).items() if v is not None and str(v).strip()}
        return cls(**{f.name: got.get(f.name) for f in fields(cls)})


@dataclass(frozen=True)
class Nightly:
    """What the scheduled night runs; the defaults are the ones the project's measurements chose (docs/nightly.md)."""

    gpus: tuple[str, ...]
    workloads: tuple[str, ...]
    ab: AB | None = None
    bisect_minutes: float = 8.0
    confirm_minutes: float = 4.0
    per_gpu: dict[str, tuple[str, ...]] = field(
        default_factory=dict
    )  # a GPU's own workloads, in place of ``workloads``
    where: str = FILE
    pr: PR = field(default_factory=PR)  # the pull-request check; without a [pr] table, the A/B's splits and budget
    alerts: Alerts = field(default_factory=Alerts)  # the webhook beside the issues

    def __post_init__(self):
        object.__setattr__(self, "gpus", _names(self.gpus, f"{self.where}: gpus"))
        object.__setattr__(self, "workloads", _names(self.workloads, f"{self.where}: workloads", empty=True))
        object.__setattr__(
            self, "bisect_minutes", _minutes(self.bisect_minutes, f"{self.where}: budgets.bisect_minutes")
        )
        object.__setattr__(
            self, "confirm_minutes", _minutes(self.confirm_minutes, f"{self.where}: budgets.confirm_minutes")
        )
        per = {g: _names(w, f"{self.where}: gpu.{g}.workloads", empty=True) for g, w in self.per_gpu.items()}
        object.__setattr__(self, "per_gpu", per)

    def workloads_on(self, gpu: str) -> tuple[str, ...]:
        """The workloads ``gpu``'s jobs run, by name (whatever their ``devices``: the nightly names what it runs)."""
        return self.per_gpu.get(gpu, self.workloads)

    def only(self, gpu: str, workloads: tuple[str, ...], ab: bool = True) -> Nightly:
        """These settings with ``gpu`` running ``workloads`` only, and without the A/B unless ``ab``: what a night keeps
        of settings that name a workload or an A/B it cannot run."""
        return replace(self, per_gpu={**self.per_gpu, gpu: tuple(workloads)}, ab=self.ab if ab else None)

    def with_inputs(self, inputs: dict) -> Nightly:
        """This night's settings: a manual run's non-empty inputs (the workflow_dispatch form) over the file's."""
        i, n = Inputs.of(inputs), self
        if i.gpus is not None:
            try:
                gpus = json.loads(i.gpus)
            except json.JSONDecodeError:
                gpus = None
            if not isinstance(gpus, list):
                raise NightlyError(f'the gpus input must be a JSON list such as ["l4", "h200"], got {i.gpus!r}')
            n = replace(n, gpus=tuple(gpus), where="the gpus input")
        if i.workloads is not None:
            n = replace(n, workloads=_names(i.workloads.split(), "the workloads input"), per_gpu={})
        if i.ab_workload or i.ab_decompositions or i.ab_budget:
            budget = _number(i.ab_budget, "the ab_budget input") if i.ab_budget else None
            workload = i.ab_workload or (n.ab.workload if n.ab else None)
            if workload is None:
                raise NightlyError("the A/B inputs need ab_workload: nightly.toml has no [ab] table")
            base = n.ab or AB(workload, where="the A/B inputs")
            ab = replace(
                base,
                workload=workload,
                decompositions=tuple(i.ab_decompositions.split()) if i.ab_decompositions else base.decompositions,
                budget_minutes=base.budget_minutes if budget is None else budget,
                where="the A/B inputs",
            )
            n = replace(n, ab=ab)
        if i.bisect_budget is not None:
            n = replace(n, bisect_minutes=_number(i.bisect_budget, "the bisect_budget input"))
        return n

    def environment(self, gpu: str) -> dict[str, str]:
        """The variables the nightly's later steps read (through ``$GITHUB_ENV``): this GPU's workloads, the A/B,
        budgets."""
        ab = self.ab
        return {
            "PERF_WORKLOADS": " ".join(self.workloads_on(gpu)),
            "AB_WORKLOAD": ab.workload if ab else "",
            "AB_DECOMPOSITIONS": " ".join(ab.decompositions) if ab else "",
            "AB_BUDGET": _text(ab.budget_minutes) if ab else "",
            "BISECT_BUDGET": _text(self.bisect_minutes),
            "CONFIRM_BUDGET": _text(self.confirm_minutes),
        }


def _number(text: str, where: str) -> float:
    try:
        return _minutes(float(text), where)
    except ValueError as exc:
        raise NightlyError(f"{where} must be a number of minutes, got {text!r}") from exc


def _text(minutes: float) -> str:
    return str(int(minutes)) if float(minutes).is_integer() else str(minutes)


def _check_keys(table: dict, known: set[str], section: str, where: str) -> None:
    prefix = f"{section}." if section else ""
    for key in table:
        if key not in known:
            near = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"did you mean {prefix + near[0]!r}?" if near else f"known: {', '.join(sorted(known))}"
            raise NightlyError(f"{where}: unknown key {prefix + key!r}; {hint}")


def parse(data: dict, where: str = FILE) -> Nightly:
    """The settings from ``nightly.toml``'s tables, every key checked (unknown ones named, with the nearest known
    one)."""
    t = Tables.of(data, where)
    _check_keys(t.ab, _keys(AB), "ab", where)
    _check_keys(t.budgets, BUDGETS, "budgets", where)
    _check_keys(t.pr, _keys(PR), "pr", where)
    if any(isinstance(v, str) and "://" in v for v in t.alerts.values()):
        raise NightlyError(
            f"{where}: [alerts] holds a URL: the webhook's URL is a secret, never in this file; keep it in a "
            "repository secret and name the environment variable that holds it in alerts.webhook_env, e.g. "
            "PERF_WEBHOOK_URL"
        )
    _check_keys(t.alerts, _keys(Alerts), "alerts", where)
    for g, table in t.gpu.items():
        if not isinstance(table, dict):
            raise NightlyError(f"{where}: gpu.{g} must be a table ([gpu.{g}])")
        _check_keys(table, GPU_KEYS, f"gpu.{g}", where)
    ab = AB(**t.ab, where=where) if t.ab else None
    pr = PR(
        **{**({"decompositions": ab.decompositions, "budget_minutes": ab.budget_minutes} if ab else {}), **t.pr},
        where=where,
    )
    return Nightly(
        gpus=t.gpus,
        workloads=t.workloads,
        ab=ab,
        **t.budgets,
        per_gpu={g: table.get("workloads", t.workloads) for g, table in t.gpu.items()},
        where=where,
        pr=pr,
        alerts=Alerts(**t.alerts, where=where),
    )


def load(root: Path | str = ".") -> Nightly:
    """``nightly.toml`` of the repository at ``root``; NightlyError (one line) when it is missing or wrong."""
    path = Path(root) / FILE
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise NightlyError(
            f"no {path}: the nightly reads its GPUs, workloads and budgets there (see the README, Nightly)"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise NightlyError(f"{path} is not TOML: {exc}") from exc
    return parse(data, str(path))

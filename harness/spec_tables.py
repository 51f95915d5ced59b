"""One TOML table of a workload file read into its section's dataclass, every error naming the file and the table.

A key the dataclass does not have is refused with the field the user most likely meant, the workload's name for one
that PEFT's LoraConfig or TRL's SFTConfig spell otherwise; a required field that is missing is named.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from harness.spec_fields import SpecError
from harness.spec_sections import _check

# The names PEFT's LoraConfig and TRL's SFTConfig give to a field the workload spells otherwise: a user who brings them
# is told the workload's name, which no spelling distance would find ('rank' is far from 'r').
_THEIR_NAMES = {
    "lora": {"rank": "r", "lora_r": "r", "lora_rank": "r", "lora_alpha": "alpha", "lora_dropout": "dropout"},
    "train": {
        "optim": "optimizer",
        "fp16": "precision",
        "bf16": "precision",
        "max_seq_length": "max_length",
        "seq_length": "max_length",
        "lr": "learning_rate",
    },
}


def _near(key: str, names: list[str], section: str) -> str | None:
    """The field a user most likely meant by ``key``: the workload's name for a PEFT or TRL one, else the closest."""
    if key in _THEIR_NAMES.get(section, {}):
        return _THEIR_NAMES[section][key]
    near = difflib.get_close_matches(key, names, n=1)
    return near[0] if near else None


def build_section(cls, data: Any, where: str, section: str):
    """Build dataclass ``cls`` from ``data`` (the ``[section]`` table of file ``where``); every error names both."""
    _check(isinstance(data, dict), f"{where}: [{section}] must be a table, got {data!r}")
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    for key in data:
        if key not in names:
            near = _near(key, names, section)
            hint = f"did you mean {section}.{near}?" if near else f"known: {', '.join(names)}"
            raise SpecError(f"{where}: unknown field {key!r} in [{section}]; {hint}")
    missing = [
        f.name
        for f in dataclasses.fields(cls)
        if f.init
        and f.name not in data
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    _check(not missing, f"{where}: [{section}] needs {', '.join(f'{section}.{m}' for m in missing)}")
    try:
        return cls(**data)
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None

"""Every Floe name the README's Python blocks use resolves: moving a module never breaks a user's imports."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_FROM_IMPORT = re.compile(r"^\s*from (floe(?:\.\w+)*) import ([\w, ()]+)$", re.MULTILINE)
_DOTTED = re.compile(r"\bfloe(?:\.[A-Za-z_]\w*)+")


def _readme_names() -> list[str]:
    names: set[str] = set()
    for block in _BLOCK.findall(README.read_text(encoding="utf-8")):
        for module, imported in _FROM_IMPORT.findall(block):
            names.update(f"{module}.{name.strip()}" for name in imported.strip("()").split(",") if name.strip())
        code = "\n".join(line for line in block.splitlines() if not line.lstrip().startswith("from "))
        code = re.sub(r"([\"']).*?\1", "", code)  # conf keys and table names inside strings are not imports
        names.update(_DOTTED.findall(code))
    # prose names a function as `floe.spark.apply_changes(...)`
    names.update(re.findall(r"`(floe(?:\.\w+)+)\(", README.read_text(encoding="utf-8")))
    return sorted(names)


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise ModuleNotFoundError(dotted)


def test_readme_uses_floe_names() -> None:
    assert "floe.load_catalog" in _readme_names()


@pytest.mark.parametrize("dotted", _readme_names())
def test_readme_name_resolves(dotted: str) -> None:
    assert _resolve(dotted) is not None

"""The suite's own layout: pytest (rootdir import mode, no packages) needs every test module name unique."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_test_module_basenames_are_unique() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []


def test_no_test_module_imports_conftest_by_name() -> None:
    # Several folders have a conftest.py; under one pytest run `import conftest` finds whichever loaded first.
    needle = "from " + "conftest import"  # spelled apart so this file does not match itself
    importing = [str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py") if needle in p.read_text()]
    assert importing == []

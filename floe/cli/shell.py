"""``floe shell``: an interactive SQL prompt with readline history in ``$FLOE_HOME/history``."""

from __future__ import annotations

import sys
from pathlib import Path

from floe.cli.output import print_error, print_result
from floe.config import FloeConfig
from floe.errors import FloeError
from floe.sql.lexer import is_complete, split_statements
from floe.sql.parser import parse_statement

__all__ = ["CONTINUATION", "PROMPT", "run_shell"]

PROMPT = "floe> "
CONTINUATION = "   -> "
_EXIT_WORDS = {"exit", "quit", "\\q", "exit;", "quit;"}


def _setup_history(path: Path) -> None:
    try:
        import readline
    except ImportError:  # no readline on this platform: the shell works without history
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        readline.read_history_file(str(path))
    readline.set_history_length(1000)
    import atexit

    atexit.register(readline.write_history_file, str(path))


def run_shell(config: FloeConfig, *, fmt: str) -> int:
    """Read statements until EOF or ``exit``; a statement ends at ``;`` (lines continue until then).

    Errors print one red line and the shell goes on.
    """
    from floe.cli.sql import make_session

    interactive = sys.stdin.isatty()
    if interactive:
        _setup_history(config.home / "history")
        print(f"Floe SQL shell (catalog {config.default_catalog}). End statements with ';', 'exit' to leave.")
    session = make_session(config)
    buffer = ""
    while True:
        try:
            line = input(PROMPT if not buffer else CONTINUATION) if interactive else sys.stdin.readline()
        except EOFError:
            line = None
        except KeyboardInterrupt:
            print()
            buffer = ""
            continue
        if line is None or (not interactive and line == ""):
            if buffer.strip():
                _run(session, buffer, fmt)
            if interactive:
                print()
            return 0
        if not buffer and line.strip().lower() in _EXIT_WORDS:
            return 0
        buffer += line if line.endswith("\n") else line + "\n"
        if is_complete(buffer):
            _run(session, buffer, fmt)
            buffer = ""


def _run(session: object, text: str, fmt: str) -> None:
    from floe.sql.engine import SqlSession

    assert isinstance(session, SqlSession)
    try:
        for part in split_statements(text):
            print_result(session.execute(parse_statement(part.sql, line=part.line, col=part.col)), fmt)
    except FloeError as e:
        print_error(str(e))
    except Exception as e:  # noqa: BLE001 - the shell survives any failing statement and reports it in one line
        print_error(f"{type(e).__name__}: {e}")

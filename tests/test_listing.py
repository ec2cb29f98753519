"""`sweep list methods`: one row per registered method with its one-line summary and every argument
with its default, fitted to the terminal: at 160 columns no line is longer, each summary stays on one
line (from 140 on) and the long arguments column wraps."""

from __future__ import annotations

import json

import pytest

from debate.methods import METHODS
from sweep.cli import main


def _rows(printed: str) -> dict[str, list[str]]:
    """The table's rows by method name: each cell's text, wrapped lines joined by a space."""
    rows: dict[str, list[list[str]]] = {}
    name = ""
    for line in printed.splitlines():
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.split("│")[1:-1]]
        name = cells[0] or name  # a wrapped row's later lines have no name
        rows.setdefault(name, []).append(cells)
    return {n: [" ".join(filter(None, col)) for col in zip(*lines, strict=True)] for n, lines in rows.items()}


def _show(value: object) -> str:
    return json.dumps(value) if isinstance(value, str | bool | dict | list) or value is None else str(value)


@pytest.mark.parametrize("columns", [160, 140, 100])
def test_list_methods_fits_the_terminal_with_a_summary_and_every_argument(
    columns: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["list", "methods"]) == 0
    printed = capsys.readouterr().out
    assert max(len(line) for line in printed.splitlines()) <= columns
    rows = _rows(printed)
    assert set(rows) == set(METHODS) and len(METHODS) >= 10
    for name, d in METHODS.items():
        _, protocol, summary, args = rows[name]
        if d.params.__module__.startswith("debate."):  # other tests register probes without one
            assert d.summary and len(d.summary) <= 64, name  # one line, not a paragraph
        assert summary == d.summary and protocol == (d.protocol or "— (no rounds)"), name
        wanted = ", ".join(f"{k}={_show(v)}" for k, v in d.defaults().items())
        assert args == wanted, name  # rejoined at the wrap points: nothing cut
    if columns >= 140:  # wide enough: each summary on its row's first line, the arguments wrapped
        first = {line.split("│")[1].strip(): line for line in printed.splitlines() if line.startswith("│ ")}
        assert all(METHODS[n].summary in first[n] for n in METHODS if METHODS[n].summary)
        assert (
            rows["pear"][3].count("=") > 10
            and sum(line.startswith("│   ") for line in printed.splitlines()) > 3
        )


def test_a_pipe_gets_160_columns_and_a_terminal_its_own_width(monkeypatch: pytest.MonkeyPatch) -> None:
    from sweep import listing

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr("os.get_terminal_size", lambda *a: (_ for _ in ()).throw(OSError("not a tty")))
    assert listing.width() == 160
    monkeypatch.setenv("COLUMNS", "20")
    assert listing.width() == 80  # a table narrower than this is unreadable either way
    monkeypatch.setenv("COLUMNS", "500")
    assert listing.width() == 200

"""`sweep view --export FILE` replaces only an earlier export, one writer at a time, whole or not at
all, under a CSP whose hashes match the page's own inline blocks; the viewer's API refuses every
out-of-range or malformed number with a one-line JSON 400, and answers an unreadable part file of an
opened episode with an error naming it (never a crash)."""

from __future__ import annotations

import errno
import html.parser
import json
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sweep.cli import main
from sweep.store.targets import own_beside
from sweep.view.data import MAX_OFFSET, Query, QueryError, ViewData
from sweep.view.export import source_hash
from sweep.view.export_target import MARK
from sweep.view.server import serve_in_thread
from tests.results_helpers import run_in_process, sweep_config


@pytest.fixture(scope="module")
def sim_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view-targets") / "sim"
    return run_in_process(sweep_config("simulated", out, "datasets.0.limit=3", "seeds=[0]"))


def export(out: Path, target: Path | str, *extra: str) -> int:
    return main(["view", str(out), "--export", str(target), *extra])


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def listing(where: Path) -> dict[str, bytes | None]:
    """Every entry of `where` with the bytes of its plain files (a lock file's holder record aside)."""
    plain = [p for p in where.iterdir() if p.is_file() and not p.is_symlink() and p.suffix != ".lock"]
    return {p.name: p.read_bytes() if p in plain else None for p in where.iterdir()}


class _Blocks(html.parser.HTMLParser):
    """The CSP meta's content and the text of every inline <script>/<style>, as a browser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.csp: list[str] = []
        self.blocks: dict[str, list[str]] = {"script": [], "style": [], "json": []}
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp.append(a["content"] or "")
        if tag in ("script", "style"):
            self._open = "json" if a.get("type") == "application/json" else tag
            self.blocks[self._open].append("")

    def handle_data(self, data: str) -> None:
        if self._open:
            self.blocks[self._open][-1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._open = None


def test_an_absent_file_is_written_marked_with_a_csp_matching_its_blocks(
    sim_out: Path, tmp_path: Path
) -> None:
    path = tmp_path / "new" / "view.html"
    assert export(sim_out, path, "--limit", "4") == 0
    raw = path.read_bytes()
    assert MARK.encode() in raw[:4096] and raw.index(MARK.encode()) < raw.index(b"<style>")
    parsed = _Blocks()
    parsed.feed(raw.decode("utf-8"))
    assert len(parsed.csp) == 1 and len(parsed.blocks["script"]) == len(parsed.blocks["style"]) == 1
    assert raw.index(b"Content-Security-Policy") < raw.index(b"<style>")  # a meta CSP covers what follows it
    policy = {d.split()[0]: d.split()[1:] for d in parsed.csp[0].split(";") if d.strip()}
    assert policy["default-src"] == ["'none'"] and policy["img-src"] == ["data:"]
    assert policy["script-src"] == [source_hash(parsed.blocks["script"][0])]
    assert policy["style-src"] == [source_hash(parsed.blocks["style"][0])]
    assert policy["form-action"] == policy["base-uri"] == ["'none'"]
    assert not {"connect-src", "frame-src", "child-src"} & set(policy) and "unsafe" not in parsed.csp[0]
    assert "window.__pwned" not in parsed.blocks["script"][0] and "sweep-data" in parsed.blocks["script"][0]
    assert len(json.loads(parsed.blocks["json"][0])["rows"]) == 4
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_an_earlier_export_is_replaced(sim_out: Path, tmp_path: Path) -> None:
    path = tmp_path / "view.html"
    assert export(sim_out, path, "--limit", "2") == 0
    first = path.read_bytes()
    assert export(sim_out, path, "--limit", "5") == 0
    assert path.read_bytes() != first and b'"episodes": 5' in path.read_bytes()


@pytest.mark.parametrize("content", [b"my notes\n", b"<!doctype html><title>mine</title>", b""])
def test_a_user_file_is_refused_and_left_byte_identical(
    sim_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = tmp_path / "notes.html"
    path.write_bytes(content)
    before = listing(tmp_path)
    assert export(sim_out, path) == 2
    err = one_error_line(capsys)
    assert "--export" in err and str(path) in err and "not a page" in err
    assert listing(tmp_path) == before  # the file, and no lock or temp file beside it


def test_a_marker_past_the_first_kilobytes_is_not_an_export(
    sim_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "long.html"
    path.write_text("x" * 5000 + MARK)
    assert export(sim_out, path) == 2
    assert "not a page" in one_error_line(capsys) and path.read_text().endswith(MARK)


def test_a_directory_a_symlink_and_a_fifo_are_refused(
    sim_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    earlier = tmp_path / "elsewhere" / "earlier.html"
    earlier.parent.mkdir()
    assert export(sim_out, earlier, "--limit", "1") == 0
    capsys.readouterr()
    old = earlier.read_bytes()
    (tmp_path / "adir").mkdir()
    (tmp_path / "link.html").symlink_to(earlier)
    os.mkfifo(tmp_path / "pipe.html")
    (tmp_path / "afile").write_text("x")
    before = listing(tmp_path)
    for name, words in (("adir", "is a directory"), ("link.html", "symbolic link"),
                        ("pipe.html", "not a regular file"), ("afile/view.html", "is a file, not a directory")):  # fmt: skip
        assert export(sim_out, tmp_path / name) == 2, name
        assert words in one_error_line(capsys), name
    assert listing(tmp_path) == before and list((tmp_path / "adir").iterdir()) == []
    assert (tmp_path / "link.html").readlink() == earlier and earlier.read_bytes() == old


def test_a_second_writer_of_the_same_file_is_refused(
    sim_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "view.html"
    assert export(sim_out, path, "--limit", "1") == 0
    capsys.readouterr()
    old = path.read_bytes()
    holder = own_beside(path, "export file", "--export")  # another export, mid-write
    try:
        assert export(sim_out, path, "--limit", "3") == 2
        err = one_error_line(capsys)
        assert "in use" in err and f"pid {os.getpid()}" in err and "--export" in err
        assert path.read_bytes() == old
    finally:
        holder.release()
    assert export(sim_out, path, "--limit", "3") == 0  # free again once the holder is done


@pytest.mark.parametrize(
    ("where", "code", "exit_code", "words"),
    [
        ("fsync", errno.ENOSPC, 1, "disk full"),
        ("fsync", errno.EROFS, 2, "Read-only file system"),
        ("replace", errno.EACCES, 2, "Permission denied"),
        ("mkstemp", errno.EROFS, 2, "Read-only file system"),
    ],
)
def test_a_failed_write_is_one_line_and_leaves_no_temp_file(
    sim_out: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    code: int,
    exit_code: int,
    words: str,
) -> None:
    # Tests run as root, where a 0o555 dir is still writable: the failing call is simulated.
    path = tmp_path / "view.html"
    assert export(sim_out, path, "--limit", "1") == 0
    capsys.readouterr()
    before = listing(tmp_path)

    def fail(*_: Any, **__: Any) -> Any:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(tempfile if where == "mkstemp" else os, where, fail)
    assert export(sim_out, path, "--limit", "3") == exit_code
    monkeypatch.undo()
    err = one_error_line(capsys)
    assert words in err and str(path) in err and "--export" in err
    assert listing(tmp_path) == before  # the earlier export as it was, and no temp file


@pytest.fixture(scope="module")
def server(sim_out: Path) -> Iterator[str]:
    srv, url = serve_in_thread(ViewData([sim_out]))
    yield url
    srv.shutdown()
    srv.server_close()


def get(url: str) -> tuple[int, Any, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, json.loads(r.read()), r.headers.get("Content-Security-Policy", "")
    except urllib.error.HTTPError as e:
        body = e.read()
        assert body.count(b"\n") == 0
        return e.code, json.loads(body), e.headers.get("Content-Security-Policy", "")


@pytest.mark.parametrize(
    ("query", "name"),
    [
        (f"offset={2**63}", "offset"), ("offset=-1", "offset"), ("offset=abc", "offset"),
        (f"limit={10**30}", "limit"), (f"offset={MAX_OFFSET + 1}", "offset"), ("offset=%D9%A1%D9%A2", "offset"),
        ("offset=%2B5", "offset"), ("offset=1_0", "offset"), ("offset=%205", "offset"), ("limit=-3", "limit"),
        ("limit=" + "9" * 5000, "limit"), ("offset=1e3", "offset"),
    ],
)  # fmt: skip
def test_bad_numbers_are_a_one_line_json_400(server: str, query: str, name: str) -> None:
    status, body, _ = get(server + "api/episodes?" + query)
    assert status == 400 and name in body["error"] and len(body["error"]) < 200, body


def test_the_data_layer_bounds_offsets_itself(sim_out: Path) -> None:
    view = ViewData([sim_out])
    for offset in (2**63, MAX_OFFSET + 1, -1):
        with pytest.raises(QueryError, match="offset"):
            view.episodes(Query(offset=offset))
    assert view.episodes(Query(offset=MAX_OFFSET))["rows"] == []


def test_numbers_at_the_bounds_are_answered(server: str) -> None:
    status, body, csp = get(server + f"api/episodes?offset={MAX_OFFSET}&limit=500")
    assert status == 200 and body["rows"] == [] and body["offset"] == MAX_OFFSET
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp


def damage(sim_out: Path, tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A copy of the results whose first turns part is garbage ("turns") or whose first rounds part
    lacks its columns ("rounds"); returns the copy and an episode id stored in that part."""
    out = Path(shutil.copytree(sim_out, tmp_path / "copy"))
    part = sorted((out / "episodes").glob("part-*.parquet"))[0]
    eid = pq.read_table(part).column("episode_id")[0].as_py()
    if kind == "turns":
        (out / "turns" / part.name).write_bytes(b"PAR1 not really parquet")
    else:
        pq.write_table(pa.table({"episode_id": [eid]}), out / "rounds" / part.name)
    return out, eid


@pytest.mark.parametrize(
    ("kind", "words"), [("turns", "cannot be read"), ("rounds", "lacks column(s) round")]
)
def test_an_unreadable_part_is_an_error_naming_it(
    sim_out: Path, tmp_path: Path, kind: str, words: str
) -> None:
    out, eid = damage(sim_out, tmp_path, kind)
    srv, url = serve_in_thread(ViewData([out]))
    try:
        status, body, _ = get(url + "api/episode?id=" + urllib.parse.quote(eid))
        assert (
            status == 422 and words in body["error"] and re.search(f"{kind}/part-[^ ]+ in ", body["error"])
        ), body
        assert get(url + "api/meta")[0] == 200  # the server still answers
    finally:
        srv.shutdown()
        srv.server_close()


def test_an_export_whose_every_episode_is_unreadable_is_refused_writing_nothing(
    sim_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = damage(sim_out, tmp_path, "turns")  # the sweep's only turns part
    path = tmp_path / "out" / "view.html"
    assert export(out, path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        err[-1]
        == "error: --export: no matching episode could be read (see the warnings above); rerun the sweep"
    )
    assert err[:-1] and all(line.startswith("warning: leaving out episode ") for line in err[:-1])
    assert "turns/part-" in err[0] and "cannot be read" in err[0]
    assert sorted(p.name for p in path.parent.iterdir()) == [".view.html.lock"]  # the lock file only


def test_an_episode_whose_part_is_unreadable_is_left_out_with_a_warning(sim_out: Path) -> None:
    from sweep.view.episode import PartError
    from sweep.view.export import page_html

    data = ViewData([sim_out])
    bad = data.index["episode_id"][0]
    real = data.episode

    def episode(eid: str) -> Any:
        if eid == bad:
            raise PartError("turns/part-x.parquet in OUT cannot be read (garbage)")
        return real(eid)

    data.episode = episode  # type: ignore[method-assign]
    warnings: list[str] = []
    page, n = page_html(data, Query(), 10, warnings.append)
    assert n == 9 and warnings == [
        f"leaving out episode {bad}: turns/part-x.parquet in OUT cannot be read (garbage)"
    ]
    assert bad not in page and data.index["episode_id"][1] in page


def test_cli_bounds_are_one_line(sim_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for extra, words in ((["--limit", "100001"], "--limit"), (["--limit", "0"], "--limit"),
                         (["--port", "70000"], "--port"), (["--port", "-1"], "--port")):  # fmt: skip
        assert main(["view", str(sim_out), "--export", str(tmp_path / "v.html"), *extra]) == 2
        assert words in one_error_line(capsys)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("shape", ["dir", "dangling"])
def test_a_turns_part_that_is_not_a_regular_file_is_an_error_not_an_empty_transcript(
    sim_out: Path, tmp_path: Path, shape: str
) -> None:
    from sweep.view.episode import PartError

    out = Path(shutil.copytree(sim_out, tmp_path / "copy"))
    part = sorted((out / "episodes").glob("part-*.parquet"))[0]
    eid = pq.read_table(part).column("episode_id")[0].as_py()
    (out / "turns" / part.name).unlink()
    if shape == "dir":
        (out / "turns" / part.name).mkdir()
    else:
        (out / "turns" / part.name).symlink_to(tmp_path / "gone.parquet")
    with pytest.raises(PartError, match=rf"turns/{part.name} in .* is not a regular file"):
        ViewData([out]).episode(eid)

"""The LLM-call cache: hits never reach the engine, keys see everything that decides an output."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from actors.base import ChatRequest, Completion, Message
from sweep.store.cache import CacheBusy, CachedBackend, CallCache
from sweep.store.cache_keys import request_key


class Counting:
    def __init__(self) -> None:
        self.calls = 0
        self.requests = 0

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls += 1
        self.requests += len(requests)
        return [
            Completion(f"echo {r.messages[-1].content} {r.seed}", 10 + i, 3, latency_s=0.5)
            for i, r in enumerate(requests)
        ]


def req(text: str, seed: int = 0, temperature: float = 0.7) -> ChatRequest:
    return ChatRequest((Message("user", text),), seed=seed, temperature=temperature, hints={"agent": 1})


IDENTITY = {"name": "m", "engine": "fake", "model": "m", "args": {}}


def test_second_pass_is_served_entirely_from_the_cache(tmp_path: Path) -> None:
    engine = Counting()
    backend = CachedBackend(engine, CallCache(tmp_path / "c.sqlite"), IDENTITY)
    batch = [req("a"), req("b"), req("c", seed=1)]
    first = asyncio.run(backend.generate(batch))
    second = asyncio.run(backend.generate(batch))
    assert engine.calls == 1 and engine.requests == 3
    assert [c.text for c in first] == [c.text for c in second]
    assert [c.prompt_tokens for c in first] == [c.prompt_tokens for c in second]
    assert not any(c.cache_hit for c in first) and all(c.cache_hit for c in second)
    assert all(c.latency_s == 0.0 for c in second)
    assert backend.cache.hits == 3 and backend.cache.misses == 3


def test_only_misses_go_to_the_engine_in_order(tmp_path: Path) -> None:
    engine = Counting()
    backend = CachedBackend(engine, CallCache(tmp_path / "c.sqlite"), IDENTITY)
    asyncio.run(backend.generate([req("a")]))
    out = asyncio.run(backend.generate([req("x"), req("a"), req("y")]))
    assert engine.requests == 3  # a, then x and y
    assert [c.text for c in out] == ["echo x 0", "echo a 0", "echo y 0"]
    assert [c.cache_hit for c in out] == [False, True, False]


def test_the_cache_persists_across_processes_worth_of_instances(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    first = CallCache(path)
    asyncio.run(CachedBackend(Counting(), first, IDENTITY).generate([req("a")]))
    first.close()  # rows reach the file once the cache is flushed or closed (the pool closes it)
    engine = Counting()
    asyncio.run(CachedBackend(engine, CallCache(path), IDENTITY).generate([req("a")]))
    assert engine.calls == 0 and len(CallCache(path)) == 1


def test_keys_change_with_everything_that_decides_the_output() -> None:
    base = request_key(IDENTITY, req("a"))
    assert base == request_key(IDENTITY, req("a"))
    assert base != request_key(IDENTITY, req("a", seed=1))
    assert base != request_key(IDENTITY, req("a", temperature=0.1))
    assert base != request_key(IDENTITY, req("b"))
    assert base != request_key({**IDENTITY, "model": "other"}, req("a"))
    schema = ChatRequest((Message("user", "a"),), seed=0, json_schema={"type": "object"})
    assert base != request_key(IDENTITY, schema)
    hinted = ChatRequest((Message("user", "a"),), seed=0, hints={"agent": 9})
    assert base == request_key(IDENTITY, hinted)  # hints never reach a real engine


def test_concurrent_identical_requests_reach_the_engine_once(tmp_path: Path) -> None:
    class Slow(Counting):
        async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
            await asyncio.sleep(0.05)
            return await super().generate(requests)

    engine = Slow()
    backend = CachedBackend(engine, CallCache(tmp_path / "c.sqlite"), IDENTITY)

    async def both() -> list[list[Completion]]:
        return await asyncio.gather(backend.generate([req("a"), req("b")]), backend.generate([req("a")]))

    first, second = asyncio.run(both())
    assert engine.requests == 2  # "a" once, "b" once
    assert second[0].text == first[0].text and second[0].cache_hit and not first[0].cache_hit


def test_an_engine_failure_reaches_every_waiter(tmp_path: Path) -> None:
    class Failing(Counting):
        async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
            await asyncio.sleep(0.02)
            raise RuntimeError("engine down")

    backend = CachedBackend(Failing(), CallCache(tmp_path / "c.sqlite"), IDENTITY)

    async def both() -> list[object]:
        return await asyncio.gather(
            backend.generate([req("a")]), backend.generate([req("a")]), return_exceptions=True
        )

    results = asyncio.run(both())
    assert all(isinstance(r, RuntimeError) for r in results)
    assert len(backend.cache) == 0 and not backend._pending


def test_writes_wait_for_no_disk_and_are_answered_before_they_are_committed(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = CallCache(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the file: nothing can commit
    engine = Counting()
    backend = CachedBackend(engine, cache, IDENTITY)
    asyncio.run(backend.generate([req("a"), req("b")]))  # returns although the rows cannot be written
    again = asyncio.run(backend.generate([req("a"), req("b")]))
    assert engine.requests == 2 and all(c.cache_hit for c in again)  # answered from memory
    assert blocker.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 0
    blocker.execute("COMMIT")
    cache.flush()
    assert blocker.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 2
    cache.close()
    assert len(CallCache(path)) == 2


def test_a_failing_writer_is_reported_not_swallowed(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "c.sqlite")
    cache.put_many([("k", Completion(object(), 1, 1))])  # type: ignore[arg-type]  # not JSON
    with pytest.raises(RuntimeError, match="writer failed"):
        cache.flush()
    with pytest.raises(RuntimeError, match="writer failed"):
        cache.put_many([("k2", Completion("x", 1, 1))])


class CountingDb:
    """The cache's connection, counting the key lookups it is sent."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db, self.lookups = db, 0

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        self.lookups += "WHERE key IN" in sql
        return self.db.execute(sql, *args)

    def close(self) -> None:
        self.db.close()


def test_keys_it_cannot_hold_cost_no_query_and_its_own_rows_still_hit(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "c.sqlite")
    db = cache._db = CountingDb(cache._db)  # type: ignore[assignment]
    assert cache.get_many([f"miss-{i}" for i in range(200)]) == {} and db.lookups <= 4  # false positives: ~0
    cache.put_many([("mine", Completion("x", 1, 1))])
    cache.flush()  # committed: answered from the table, not from memory
    assert not cache._unwritten and cache.get_many(["mine"])["mine"].text == "x" and db.lookups >= 1
    cache.close()


def test_rows_another_driver_commits_are_found_once_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.sqlite"
    with CallCache(path) as before:
        before.put_many([("old", Completion("o", 1, 1))])
    mine, other = CallCache(path), CallCache(path)
    assert mine.get_many(["old"])["old"].text == "o"  # a row there at open
    other.put_many([("new", Completion("n", 1, 1))])
    other.flush()
    assert mine.get_many(["new"]) == {}  # synced under SYNC_S ago: not seen yet (asked again at worst)
    monkeypatch.setattr("sweep.store.cache.SYNC_S", 0.0)
    assert mine.get_many(["new"])["new"].text == "n"
    mine.close()
    other.close()


def test_a_lock_held_too_long_names_the_file_who_may_hold_it_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sweep.store.cache.LOCK_TIMEOUT_S", 0.2)
    path = tmp_path / "llm_cache.sqlite"
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # a rollback-journal file locked whole: the cache cannot even open
    with pytest.raises(
        CacheBusy, match=r"call cache .*llm_cache.sqlite: database is locked .*--join worker.*rerun"
    ):
        CallCache(path)
    blocker.execute("ROLLBACK")

    cache = CallCache(path)  # opened; then another writer holds the file while rows wait to be committed
    blocker.execute("BEGIN IMMEDIATE")
    cache.put_many([("k", Completion("x", 1, 1))])
    with pytest.raises(CacheBusy, match="database is locked"):
        cache.flush()
    blocker.execute("ROLLBACK")
    blocker.close()
    with pytest.raises(CacheBusy):
        cache.close()  # the writer's error is reported once more on close, not swallowed


def test_sweep_run_stops_in_one_line_when_the_cache_stays_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    from sweep.cli import main

    monkeypatch.setattr("sweep.store.cache.LOCK_TIMEOUT_S", 0.2)
    out = tmp_path / "out"
    out.mkdir()
    cfg = {"output_dir": str(out), "models": {"sim": {"engine": "simulated"}}, "agents": [{"model": "sim", "count": 2}],
           "datasets": [{"name": "arith", "limit": 1}], "methods": ["cot"], "tracking": {"enabled": False}}  # fmt: skip
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(cfg))
    blocker = sqlite3.connect(out / "llm_cache.sqlite", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another program holds the file
    try:
        assert main(["run", str(tmp_path / "s.yaml")]) == 1
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: call cache ") and "database is locked" in err[-1] and "rerun" in err[-1]
    assert (
        not list(out.glob("*.corrupt-*")) and (out / "llm_cache.sqlite").exists()
    )  # in use, not corrupt: left be


@pytest.mark.parametrize("count", [1, 127, 128, 129, 300])
def test_every_row_of_a_batch_is_committed_the_first_of_a_key_kept(tmp_path: Path, count: int) -> None:
    """Rows go in many to a statement: every one of a batch that is not a whole number of
    statements lands, a key repeated in the batch keeps its first completion (INSERT OR IGNORE), and a
    fresh instance reads them all from the file."""
    path = tmp_path / "c.sqlite"
    rows = [(f"k{i}", Completion(f"reply {i}", i, 1)) for i in range(count)]
    with CallCache(path) as cache:
        cache.put_many(rows + [("k0", Completion("a later reply", 0, 1))])
    reread = CallCache(path)
    try:
        assert len(reread) == count
        keys = [k for k, _ in rows]
        reread._synced_at = float("-inf")  # read every committed key now
        assert reread.get_many(keys) == dict(rows)
    finally:
        reread.close()

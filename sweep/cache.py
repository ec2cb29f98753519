"""The LLM-call cache: content-addressed by (model, rendered messages, sampling params, seed, output
schema), stored in the output dir, so a rerun — and methods that share round 0 under the same seed —
never pay twice. Lives on the driver, which is its only writer."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from actors.base import Backend, ChatRequest, Completion
from debate.spec import stable_hash


def request_key(model_identity: Mapping[str, Any], request: ChatRequest) -> str:
    """What decides a completion. `hints` are left out on purpose: real engines never see them,
    and the simulated engine's hints are a function of the messages it is sent."""
    return stable_hash(
        {
            "model": model_identity,
            "messages": [[m.role, m.content] for m in request.messages],
            "sampling": request.sampling_params(),
            "schema": request.json_schema,
        },
        length=32,
    )


class CallCache:
    """A sqlite table key -> completion JSON. One connection, used from the driver's event loop."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, completion TEXT NOT NULL)")
        self.hits = 0
        self.misses = 0

    def get_many(self, keys: Sequence[str]) -> dict[str, Completion]:
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        rows = self._db.execute(f"SELECT key, completion FROM calls WHERE key IN ({marks})", list(keys))
        return {k: Completion(**json.loads(v)) for k, v in rows}

    def put_many(self, items: Sequence[tuple[str, Completion]]) -> None:
        rows = [(k, json.dumps(dataclasses.asdict(c))) for k, c in items]
        with self._db:  # one transaction per batch: sqlite commits are the slow part
            self._db.executemany("INSERT OR IGNORE INTO calls VALUES (?, ?)", rows)

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        self._db.close()


class CachedBackend:
    """A `Backend` that answers from the cache and sends only the misses, as one batch, to `inner`.

    Requests already in flight are joined, not re-sent: episodes run concurrently, so methods that
    share round 0 ask for the same calls at the same moment."""

    def __init__(self, inner: Backend, cache: CallCache, model_identity: Mapping[str, Any]) -> None:
        self.inner = inner
        self.cache = cache
        self.identity = dict(model_identity)
        self._pending: dict[str, asyncio.Future[Completion]] = {}

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        keys = [request_key(self.identity, r) for r in requests]
        found = self.cache.get_many([k for k in keys if k not in self._pending])
        joined = {k: self._pending[k] for k in keys if k in self._pending}
        misses = [i for i, k in enumerate(keys) if k not in found and k not in joined]
        misses = [i for n, i in enumerate(misses) if keys[i] not in {keys[j] for j in misses[:n]}]
        owned = {keys[i]: asyncio.get_running_loop().create_future() for i in misses}
        self._pending.update(owned)
        try:
            fresh = await self.inner.generate([requests[i] for i in misses]) if misses else []
            if len(fresh) != len(misses):
                raise RuntimeError(f"engine returned {len(fresh)} completions for {len(misses)} requests")
            self.cache.put_many([(keys[i], c) for i, c in zip(misses, fresh, strict=True)])
            for i, c in zip(misses, fresh, strict=True):
                owned[keys[i]].set_result(c)
        except BaseException as e:
            for f in owned.values():
                if not f.done():
                    f.set_exception(e)
                    f.exception()  # marks it retrieved: a joiner may not exist
            raise
        finally:
            for k in owned:
                self._pending.pop(k, None)
        waited = {k: await f for k, f in joined.items()}
        self.cache.misses += len(misses)
        self.cache.hits += len(requests) - len(misses)
        return [self._answer(k, owned, found, waited) for k in keys]

    @staticmethod
    def _answer(
        key: str,
        owned: dict[str, asyncio.Future[Completion]],
        found: dict[str, Completion],
        waited: dict[str, Completion],
    ) -> Completion:
        if key in owned:
            return owned[key].result()
        hit = found.get(key) or waited[key]
        return dataclasses.replace(hit, cache_hit=True, latency_s=0.0)  # the original call's counts

"""The driver's side of the engine actors without Ray: compact requests round-trip, several
episodes' batches share one actor call for the simulated engine, failures reach every caller, and a
batch goes to its item's replica unless that one is much busier."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from actors.base import ChatRequest, Completion, Message
from sweep.engines import actors as engines


def req(text: str, item: str = "i1", seed: int = 1) -> ChatRequest:
    return ChatRequest(
        (Message("system", "s"), Message("user", text)),
        max_tokens=7,
        temperature=0.3,
        top_p=0.9,
        seed=seed,
        json_schema={"type": "object"},
        hints={"item": item, "peers": [["4", 3]]},
    )


class FakeActor:
    """Stands in for an `EngineActor` handle: `generate_packed.remote(batches)` is awaitable."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[list[Any]]] = []
        self.fail = fail
        outer = self

        class Method:
            def remote(self, batches: list[list[Any]]) -> Any:
                outer.calls.append(batches)
                return outer._serve(batches)

        self.generate_packed = Method()

    async def _serve(self, batches: list[list[Any]]) -> list[list[Any]]:
        await asyncio.sleep(0)
        if self.fail:
            raise RuntimeError("engine down")
        return [
            [engines.pack_completion(Completion(engines.unpack(w).messages[-1].content, 1, 2)) for w in b]
            for b in batches
        ]


def test_a_packed_request_unpacks_to_the_same_request() -> None:
    r = req("hello")
    assert engines.unpack(engines.pack(r, hints=True)) == r
    bare = engines.unpack(engines.pack(r, hints=False))
    assert bare.hints == {} and bare.messages == r.messages and bare.sampling_params() == r.sampling_params()
    c = Completion("t", 3, 4, 1, "length", 0.5, "m", True)
    assert Completion(*engines.pack_completion(c)) == c


async def _three_episodes(backend: engines.RemoteBackend) -> Sequence[list[Completion]]:
    return await asyncio.gather(
        backend.generate([req("a"), req("b")]), backend.generate([req("c")]), backend.generate([req("d")])
    )


def test_simulated_batches_of_one_turn_share_one_actor_call() -> None:
    actor = FakeActor()
    backend = engines.RemoteBackend("sim", [actor], engine="simulated")
    outs = asyncio.run(_three_episodes(backend))
    assert [[c.text for c in o] for o in outs] == [["a", "b"], ["c"], ["d"]]
    assert len(actor.calls) == 1 and [len(b) for b in actor.calls[0]] == [2, 1, 1]
    assert actor.calls[0][0][0][6] == {"item": "i1", "peers": [["4", 3]]}  # hints go to the simulated engine


def test_real_engines_get_one_call_per_batch_and_no_hints() -> None:
    actor = FakeActor()
    backend = engines.RemoteBackend("m", [actor], engine="vllm")
    outs = asyncio.run(_three_episodes(backend))
    assert [[c.text for c in o] for o in outs] == [["a", "b"], ["c"], ["d"]]
    assert len(actor.calls) == 3 and all(w[6] is None for b in actor.calls for w in b[0])


def test_a_failed_shared_call_reaches_every_caller() -> None:
    backend = engines.RemoteBackend("sim", [FakeActor(fail=True)], engine="simulated")

    async def run() -> list[object]:
        return await asyncio.gather(
            backend.generate([req("a")]), backend.generate([req("b")]), return_exceptions=True
        )

    assert [type(r) for r in asyncio.run(run())] == [RuntimeError, RuntimeError]
    assert backend.in_flight == [0]


def test_a_batch_goes_to_its_items_replica_unless_that_one_is_much_busier() -> None:
    backend = engines.RemoteBackend("m", [FakeActor(), FakeActor(), FakeActor()], engine="vllm")
    home = backend._replica([req("x", item="item-7")])
    assert all(backend._replica([req("y", item="item-7")]) == home for _ in range(3))
    backend.in_flight[home] = 5
    assert backend._replica([req("x", item="item-7")]) != home  # the least busy instead
    backend.in_flight[home] = 2
    assert backend._replica([req("x", item="item-7")]) == home


@pytest.mark.parametrize("engine", ["simulated", "llama_cpp"])
def test_an_empty_batch_makes_no_actor_call(engine: str) -> None:
    actor = FakeActor()
    assert asyncio.run(engines.RemoteBackend("m", [actor], engine=engine).generate([])) == []
    assert actor.calls == []

"""Graph invariants of every topology, and the routers' contracts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from debate.graph import Graph
from debate.methods import build_method
from debate.routers import FixedRouter, RandomRouter
from debate.routers.base import route_now
from debate.routers.fixed import TOPOLOGIES
from debate.state import DebateState, View


def _state(n: int) -> DebateState:
    views = tuple(View(str(i), 3, "") for i in range(n))
    return DebateState(n=n).advance(views, (), None)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_every_topology_keeps_the_invariants(name: str, n: int) -> None:
    g = TOPOLOGIES[name](n)
    assert g.n == n
    for s, t in g.edges:
        assert 0 <= s < n and 0 <= t < n and s != t
    expected_edges = {
        "clique": n * (n - 1),
        "star": 2 * (n - 1),
        "ring": n if n > 1 else 0,
        "chain": n - 1,
        "zero": 0,
    }[name]
    assert len(g.edges) == expected_edges


def test_topology_shapes() -> None:
    assert Graph.star(4).sources(0) == (1, 2, 3)
    assert all(Graph.star(4).sources(i) == (0,) for i in (1, 2, 3))
    assert [Graph.ring(4).sources(i) for i in range(4)] == [(3,), (0,), (1,), (2,)]
    assert [Graph.chain(3).sources(i) for i in range(3)] == [(), (0,), (1,)]
    assert Graph.clique(3).sources(1) == (0, 2)
    assert Graph.zero(3).edges == frozenset()


@pytest.mark.parametrize(
    "n,edges,msg",
    [
        (3, [(0, 0)], "self-loop"),
        (3, [(0, 3)], "outside"),
        (3, [(-1, 1)], "outside"),
        (0, [], "at least one"),
    ],
)
def test_invalid_graphs_are_refused(n: int, edges: list[tuple[int, int]], msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        Graph(n, edges)


def test_graph_is_immutable_and_hashable() -> None:
    g = Graph(3, [(0, 1), (0, 1)])
    assert len(g.edges) == 1
    assert hash(g) == hash(Graph(3, [(0, 1)]))
    with pytest.raises(AttributeError):
        g.n = 4  # type: ignore[misc]


@given(st.integers(2, 8), st.integers(0, 10), st.integers(0, 2**31 - 1))
def test_random_router_in_degree_is_exactly_k(n: int, k: int, seed: int) -> None:
    router = RandomRouter(k=k)
    g = route_now(router, _state(n), np.random.default_rng(seed)).graph
    for t in range(n):
        assert g.in_degree(t) == min(k, n - 1)


def test_random_router_is_seeded_and_varies() -> None:
    router = RandomRouter(k=2)
    a = route_now(router, _state(6), np.random.default_rng(1))
    b = route_now(router, _state(6), np.random.default_rng(1))
    assert a == b and a.active is None  # everyone speaks
    graphs = {route_now(router, _state(6), np.random.default_rng(s)).graph.edges for s in range(20)}
    assert len(graphs) > 10


def test_relabel_permutes_edges() -> None:
    g = Graph(3, [(0, 1), (1, 2)])
    assert g.relabel([2, 0, 1]).edges == {(2, 0), (0, 1)}
    with pytest.raises(ValueError):
        g.relabel([0, 0, 1])


def test_method_registry_did_you_mean() -> None:
    with pytest.raises(ValueError, match="did you mean 'fixed'"):
        build_method("fixd")
    with pytest.raises(ValueError, match="did you mean 'topology'"):
        build_method("fixed", {"topolgy": "ring"})
    with pytest.raises(ValueError, match="unknown topology"):
        build_method("fixed", {"topology": "hexagon"})
    with pytest.raises(ValueError, match="unknown topology"):
        FixedRouter(topology="hexagon")

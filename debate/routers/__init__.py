"""Routers decide who speaks and who sees whom each round. Importing this package registers the
built-in ones as methods (each router file registers its own class with `debate.registry.method`)."""

from debate.routers.base import Router
from debate.routers.cpp import CppRouter, RandomPrune
from debate.routers.fixed import FixedRouter, RandomRouter
from debate.routers.oracle import Oracle
from debate.routers.pear import PearRouter
from debate.routers.rules import ConfidenceKeep, LeastConfident, Silent
from debate.routers.rumad import RumadRouter
from debate.routers.sparse import GroupDebate, RandomActivation, SparseRouter

__all__ = [
    "ConfidenceKeep",
    "CppRouter",
    "FixedRouter",
    "GroupDebate",
    "LeastConfident",
    "Oracle",
    "PearRouter",
    "RandomActivation",
    "RandomPrune",
    "RandomRouter",
    "Router",
    "RumadRouter",
    "Silent",
    "SparseRouter",
]

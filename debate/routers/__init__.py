"""Routers decide who sees whom each round. Importing this package registers the built-in ones."""

from debate.routers.base import ROUTERS, Router
from debate.routers.fixed import FixedRouter, RandomRouter
from debate.routers.pear import PearRouter

__all__ = ["ROUTERS", "FixedRouter", "PearRouter", "RandomRouter", "Router"]

"""Checking the kind of each option a public function is given, against a table.

A table maps an option's name to a test of its value and the words a ``ConfigError`` uses
for what it expected: ``"cancel must be a CancelToken, not str"``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from .errors import ConfigError

__all__ = ["Kinds", "check_kinds", "instance_of", "optional"]

Kinds = Mapping[str, tuple[Callable[[object], bool], str]]
"""Option name -> (the test its value must pass, what the message says was expected)."""


def check_kinds(kinds: Kinds, options: Mapping[str, object]) -> None:
    """A ``ConfigError`` naming the first of ``options`` whose value fails its test."""
    for option, value in options.items():
        accepts, expected = kinds[option]
        if not accepts(value):
            raise ConfigError(f"{option} must be {expected}, not {type(value).__name__}")


def optional(accepts: Callable[[object], bool]) -> Callable[[object], bool]:
    """``accepts``, which also lets ``None`` through."""
    return lambda value: value is None or accepts(value)


def instance_of(*types: type) -> Callable[[object], bool]:
    """A test that the value is an instance of one of ``types``."""
    return lambda value: isinstance(value, types)


def finite(value: float) -> bool:
    """Whether ``value`` is a finite number a float can hold: ``10**400`` is not (where
    ``math.isfinite`` would raise ``OverflowError``), nor are ``inf`` and ``nan``."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False

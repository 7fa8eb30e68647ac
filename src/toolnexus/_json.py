"""Compact JSON, the one rendering the library uses for values shown to a model."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["compact_json"]


def compact_json(value: Any) -> str:
    """``json.dumps`` with no spaces and unescaped Unicode."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

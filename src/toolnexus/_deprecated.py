"""Old names kept for one release: each use warns with a ``DeprecationWarning``."""

from __future__ import annotations

import warnings

__all__ = ["renamed"]


def renamed(old: str, new: str) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (pointing at the caller's caller)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}",
        DeprecationWarning,
        stacklevel=3,
    )

"""Suspension: a tool asks the host for something (a login, an approval, an answer).

A tool suspends by returning ``pending(request)``. The run loop then either asks the host's
``wait_for`` callback and executes the tool once more with the answer, or halts the run with
``status="pending"`` so the host can resume it later with ``run_with_answer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .types import JSONObject, ToolResult

__all__ = ["Answer", "Request", "auth_required", "pending", "pending_of"]


@dataclass(slots=True)
class Request:
    """What a suspended tool needs from the host.

    ``kind`` is an open vocabulary (``authorization``, ``approval``, ``input``, ``question``…).
    Never collect credentials with ``question``/``input``: send the user to a ``url`` with
    ``kind="authorization"`` instead.
    """

    id: str
    kind: str
    prompt: str
    url: str | None = None
    data: JSONObject | None = None
    expires_at: str | None = None
    """RFC 3339 timestamp after which the request is no longer valid (advisory)."""

    @classmethod
    def new(
        cls,
        kind: str,
        prompt: str,
        *,
        url: str | None = None,
        data: JSONObject | None = None,
        expires_at: str | None = None,
    ) -> Request:
        """A request with a fresh unique id."""
        import uuid  # on first use: it loads platform details `import toolnexus` does not need

        return cls(uuid.uuid4().hex, kind, prompt, url=url, data=data, expires_at=expires_at)

    def to_dict(self) -> JSONObject:
        """Wire form (``expiresAt``); absent optionals are omitted."""
        out: JSONObject = {"id": self.id, "kind": self.kind, "prompt": self.prompt}
        if self.url is not None:
            out["url"] = self.url
        if self.data is not None:
            out["data"] = self.data
        if self.expires_at is not None:
            out["expiresAt"] = self.expires_at
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Request:
        """Parse the wire form; ``id``, ``kind`` and ``prompt`` are required."""
        try:
            return cls(
                id=str(data["id"]),
                kind=str(data["kind"]),
                prompt=str(data["prompt"]),
                url=data.get("url"),
                data=data.get("data"),
                expires_at=data.get("expiresAt", data.get("expires_at")),
            )
        except KeyError as exc:
            raise ValueError(f"Request is missing the {exc.args[0]!r} key") from None


@dataclass(slots=True)
class Answer:
    """The host's reply to a ``Request`` (matched by ``id``)."""

    id: str
    ok: bool
    data: JSONObject | None = None
    reason: str | None = None
    """When not ok: ``declined``, ``cancelled`` or ``expired`` (advisory)."""

    def to_dict(self) -> JSONObject:
        """Wire form (``id``, ``ok``, and ``data``/``reason`` when set)."""
        out: JSONObject = {"id": self.id, "ok": self.ok}
        if self.data is not None:
            out["data"] = self.data
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        """Parse the wire form; ``ok`` must be a JSON boolean (``"false"`` is not false)."""
        ok = data.get("ok")
        if "ok" in data and not isinstance(ok, bool):
            raise ConfigError(f"Answer 'ok' must be true or false, not {ok!r}")
        try:
            return cls(
                id=str(data["id"]),
                ok=bool(data["ok"]),
                data=data.get("data"),
                reason=data.get("reason"),
            )
        except KeyError as exc:
            raise ValueError(f"Answer is missing the {exc.args[0]!r} key") from None


def pending(request: Request) -> ToolResult:
    """The result a tool returns to suspend on ``request``."""
    output = request.prompt + ("\n" + request.url if request.url else "")
    return ToolResult(output, is_error=True, metadata={"pending": request})


def auth_required(url: str, prompt: str | None = None) -> ToolResult:
    """Suspend until the user has authorised at ``url``."""
    return pending(Request.new("authorization", prompt or "Authorization required", url=url))


def pending_of(result: ToolResult) -> Request | None:
    """The request a result suspends on, or ``None`` when it is not a suspension."""
    if not result.metadata:
        return None
    value = result.metadata.get("pending")
    if isinstance(value, Request):
        return value
    if isinstance(value, Mapping) and {"id", "kind", "prompt"} <= value.keys():
        return Request.from_dict(value)
    return None

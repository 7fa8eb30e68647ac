"""An OAuth-protected MCP server for the tests, built on the MCP SDK's auth server support.

``python -m tests.tools.mcp.oauth_server [--access-ttl N]`` serves, on one free port:

- an authorization server (metadata, dynamic client registration, ``/authorize`` with PKCE,
  ``/token``) whose person approves at once: ``/authorize`` redirects straight back to the
  client's ``redirect_uri`` with a fresh code, as a browser would after a sign-in;
- the protected resource metadata and streamable HTTP at ``/mcp``, requiring a bearer token
  with scope ``mcp``. Tools: ``echo(text)``, and ``admin_echo(text)``, which also needs scope
  ``admin``: without it the call is answered 403 ``insufficient_scope`` (a scope step-up);
- ``GET /test/state`` (no auth): how often each step happened and every token issued, so a
  test can check what the client did and that no token leaked;
- ``POST /test/expire`` (no auth): every access token issued so far expires (refresh tokens
  stay valid);
- ``POST /test/revoke`` (no auth): every access and refresh token is revoked (a sign-out).

Access tokens are announced with ``expires_in`` of ``--access-ttl`` seconds (default 3600) and
accepted until they expire through ``/test/expire`` or are rotated by a refresh. The endpoint
URL is printed on stdout once listening.
"""

from __future__ import annotations

import argparse
import json
import secrets
import socket
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

SCOPES = ["mcp", "admin"]


class Provider:
    """An in-memory authorization server: every client may ask for every scope."""

    def __init__(self, access_ttl: int) -> None:
        self.access_ttl = access_ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.issued: list[str] = []
        self.counts = {"registrations": 0, "authorizations": 0, "codeGrants": 0, "refreshes": 0}
        self.requested_scopes: list[str | None] = []
        self.challenges: list[str] = []

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        client_info.scope = " ".join(SCOPES)
        self.clients[client_info.client_id] = client_info
        self.counts["registrations"] += 1

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        self.counts["authorizations"] += 1
        self.requested_scopes.append(" ".join(params.scopes) if params.scopes else None)
        self.challenges.append(params.code_challenge)
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.counts["codeGrants"] += 1
        return self._issue(client, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if refresh_token.token not in self.refresh:
            raise TokenError("invalid_grant", "refresh token revoked")
        self.counts["refreshes"] += 1
        self._revoke_client(refresh_token.client_id)
        return self._issue(client, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self._revoke_client(token.client_id)

    def _issue(
        self, client: OAuthClientInformationFull, scopes: list[str], resource: str | None
    ) -> OAuthToken:
        client_id = client.client_id or ""
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        self.issued += [access, refresh]
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.access_ttl,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    def _revoke_client(self, client_id: str) -> None:
        for table in (self.access, self.refresh):
            for key in [k for k, v in table.items() if v.client_id == client_id]:
                del table[key]

    def state(self) -> dict[str, Any]:
        return {
            **self.counts,
            "requestedScopes": self.requested_scopes,
            "codeChallenges": self.challenges,
            "clients": sorted(self.clients),
            "issued": self.issued,
        }


class StepUp:
    """ASGI wrapper: a ``tools/call`` of ``admin_echo`` without scope ``admin`` gets a 403."""

    def __init__(self, app: Any, provider: Provider, metadata_url: str) -> None:
        self.app = app
        self.provider = provider
        self.metadata_url = metadata_url

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if self._needs_admin(body) and not self._has_admin(scope):
            challenge = (
                'Bearer error="insufficient_scope", scope="mcp admin", '
                f'resource_metadata="{self.metadata_url}"'
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 403,
                    "headers": [(b"www-authenticate", challenge.encode())],
                }
            )
            await send({"type": "http.response.body", "body": b"insufficient scope"})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    @staticmethod
    def _needs_admin(body: bytes) -> bool:
        try:
            message = json.loads(body)
        except ValueError:
            return False
        return (
            isinstance(message, dict)
            and message.get("method") == "tools/call"
            and (message.get("params") or {}).get("name") == "admin_echo"
        )

    def _has_admin(self, scope: Any) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization" and value.startswith(b"Bearer "):
                token = self.provider.access.get(value[7:].decode())
                return token is not None and "admin" in token.scopes
        return False


def build(base: str, provider: Provider) -> Any:
    """The ASGI app: authorization server, protected MCP endpoint and test routes."""
    server = MCPServer(
        name="oauth-fixture",
        log_level="WARNING",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            required_scopes=["mcp"],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=SCOPES, default_scopes=["mcp"]
            ),
            validate_token_resource=False,
        ),
    )

    @server.tool(structured_output=False)
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool(structured_output=False)
    def admin_echo(text: str) -> str:
        """Return the text, for callers with the admin scope."""
        return f"admin: {text}"

    @server.custom_route("/test/state", methods=["GET"])
    async def state(request: Request) -> Response:
        return JSONResponse(provider.state())

    @server.custom_route("/test/revoke", methods=["POST"])
    async def revoke(request: Request) -> Response:
        provider.access.clear()
        provider.refresh.clear()
        return JSONResponse({"revoked": True})

    @server.custom_route("/test/expire", methods=["POST"])
    async def expire(request: Request) -> Response:
        provider.access.clear()
        return JSONResponse({"expired": True})

    app = server.streamable_http_app(host="127.0.0.1")
    metadata_url = f"{base}/.well-known/oauth-protected-resource/mcp"
    return StepUp(app, provider, metadata_url)


async def serve(access_ttl: int) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = build(base, Provider(access_ttl))
    print(f"{base}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    import anyio

    parser = argparse.ArgumentParser(description="An OAuth-protected MCP server for tests.")
    parser.add_argument("--access-ttl", type=int, default=3600)
    args = parser.parse_args()
    anyio.run(serve, args.access_ttl)


if __name__ == "__main__":
    main()

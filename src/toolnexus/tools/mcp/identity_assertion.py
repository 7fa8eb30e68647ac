"""Enterprise-managed authorization (cross-app access) for a remote MCP server.

Two token requests, no browser. First the person's ID token from the organisation's identity
provider is exchanged there (OAuth token exchange, RFC 8693) for an identity assertion
authorization grant (an ID-JAG: a signed JWT naming the MCP authorization server as its
audience and the MCP server as its resource). Then the SDK's identity-assertion provider
presents that grant to the MCP server's authorization server (the JWT bearer grant, RFC 7523)
and receives the access token. The authorization server is configuration (``issuer``), never
taken from what the MCP server advertises, so neither the grant nor the client secret can be
sent elsewhere.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..._env import expand_env
from .oauth_config import OAuthConfig

__all__ = ["identity_assertion_auth", "token_exchange"]

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


def token_exchange(config: OAuthConfig) -> Callable[[str, str], Awaitable[str]]:
    """The assertion provider: ``(audience, resource)`` to an ID-JAG from the identity provider.

    Failures raise ``AuthorizationFailed`` naming the HTTP status and the provider's error
    code, never a token or secret.
    """
    from .oauth import AuthorizationFailed

    assert config.idp_token_endpoint is not None
    assert config.idp_client_id is not None
    assert config.id_token is not None
    endpoint, client_id = config.idp_token_endpoint, config.idp_client_id
    raw_token, raw_secret = config.id_token, config.idp_client_secret

    async def exchange(audience: str, resource: str) -> str:
        import httpx2

        form = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": expand_env(raw_token),
            "subject_token_type": ID_TOKEN,
            "requested_token_type": ID_JAG,
            "audience": audience,
            "resource": resource,
            "client_id": client_id,
        }
        if raw_secret:
            form["client_secret"] = expand_env(raw_secret)
        async with httpx2.AsyncClient(timeout=30.0) as http:
            response = await http.post(endpoint, data=form, headers={"Accept": "application/json"})
        body = _json(response)
        if response.status_code != 200:
            error = body.get("error") if isinstance(body.get("error"), str) else "no error code"
            raise AuthorizationFailed(
                f"the identity provider refused the token exchange "
                f"(HTTP {response.status_code}, {error})"
            )
        grant = body.get("access_token")
        if body.get("issued_token_type") != ID_JAG or not isinstance(grant, str) or not grant:
            raise AuthorizationFailed("the identity provider's answer carries no ID-JAG")
        return grant

    return exchange


def _json(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def identity_assertion_auth(url: str, config: OAuthConfig, storage: Any, secret: str) -> Any:
    """The SDK's identity-assertion provider (an ``httpx2.Auth``) for one server."""
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    assert config.client_id is not None
    assert config.issuer is not None
    method = config.token_endpoint_auth_method or "client_secret_basic"
    return IdentityAssertionOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=config.client_id,
        client_secret=secret,
        issuer=config.issuer,
        assertion_provider=token_exchange(config),
        scope=config.scope,
        token_endpoint_auth_method=method,  # type: ignore[arg-type]
    )

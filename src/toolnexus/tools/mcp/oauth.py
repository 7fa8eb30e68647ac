"""OAuth for remote MCP servers, through the SDK's OAuth client (an ``httpx2.Auth``).

The SDK does discovery, dynamic client registration, PKCE, token refresh and scope step-up.
The one step it cannot do alone, a person signing in in a browser, becomes a suspension: a
``Request(kind="authorization", url=...)``. While a server connects (toolkit load) the request
goes to the toolkit's ``wait_for``, or fails the server when there is none. During a tool call
the call returns the request as a pending result instead, so the run's ``wait_for`` answers it
(or the run halts as ``pending``); executing the call again with the answer hands the code to
the waiting flow. The answer carries the redirect's ``code`` (and ``state``) in ``data``, or
the whole redirect URL as ``data["url"]``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlparse

from ..._callbacks import maybe_await
from ..._env import expand_env
from ...suspension import Answer, Request
from ...types import JSONObject
from .oauth_config import OAuthConfig
from .tokens import MemoryTokenStore, TokenStore, token_key

if TYPE_CHECKING:
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

__all__ = ["AuthorizationFailed", "Authorizer", "create_auth"]

logger = logging.getLogger("toolnexus")

PERSON_WAIT = 900.0
"""How long a parked authorization waits for its answer, in seconds."""


class AuthorizationFailed(Exception):
    """The browser step could not be completed (no ``wait_for``, declined, bad answer)."""


class _Storage:
    """The SDK's ``TokenStorage`` over one record of a ``TokenStore``."""

    def __init__(self, store: TokenStore, key: str) -> None:
        self._store = store
        self._key = key

    async def _record(self) -> JSONObject:
        return dict(await self._store.get(self._key) or {})

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        data = (await self._record()).get("tokens")
        return OAuthToken.model_validate(data) if data else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = await self._record()
        record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        if tokens.expires_in is not None:
            record["expiresAt"] = time.time() + int(tokens.expires_in)
        else:
            record.pop("expiresAt", None)
        await self._store.set(self._key, record)

    async def expiry(self) -> float | None:
        """When the stored access token expires (seconds since the epoch), if known."""
        value = (await self._record()).get("expiresAt")
        return float(value) if isinstance(value, int | float) else None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        data = (await self._record()).get("client")
        return OAuthClientInformationFull.model_validate(data) if data else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        record = await self._record()
        record["client"] = client_info.model_dump(mode="json", exclude_none=True)
        await self._store.set(self._key, record)


class Authorizer:
    """The browser step of one server's OAuth flow, as a suspension.

    ``mode`` is ``"connect"`` while the server connects (the request goes to ``wait_for``
    inline) and ``"call"`` afterwards (the request is handed to the call, which returns it as
    a pending result; ``deliver`` later passes the host's answer to the waiting flow).
    """

    def __init__(self, server: str, wait_for: Any) -> None:
        self.server = server
        self._wait_for = wait_for
        self.mode: Literal["connect", "call"] = "connect"
        self.requested: asyncio.Event = asyncio.Event()
        """Set when a flow in ``call`` mode waits for an answer to ``request``."""
        self.request: Request | None = None
        self._state: str | None = None
        self._answer: asyncio.Future[Answer] | None = None

    async def redirect(self, url: str) -> None:
        """The SDK's redirect handler: a person must open ``url``."""
        prompt = f'Sign in to authorize access to MCP server "{self.server}"'
        self.request = Request.new("authorization", prompt, url=url, data={"server": self.server})
        self._state = _query(url).get("state")
        loop = asyncio.get_running_loop()
        self._answer = loop.create_future()
        if self.mode == "call":
            self.requested.set()
            return
        if self._wait_for is None:
            raise AuthorizationFailed("authorization required, and there is no wait_for to ask")
        answer = await maybe_await(self._wait_for, self.request)
        self._answer.set_result(answer if isinstance(answer, Answer) else _no_answer(self.request))

    async def callback(self) -> AuthorizationCodeResult:
        """The SDK's callback handler: the code from the host's answer."""
        from mcp.shared.auth import AuthorizationCodeResult

        assert self._answer is not None
        assert self.request is not None
        try:
            async with asyncio.timeout(PERSON_WAIT):
                answer = await self._answer
        except TimeoutError:
            raise AuthorizationFailed("no answer to the authorization request") from None
        finally:
            self.requested.clear()
        if not answer.ok:
            raise AuthorizationFailed(f"authorization {answer.reason or 'declined'}")
        code, state, iss = _code_of(answer.data or {})
        if not code:
            raise AuthorizationFailed("the answer carries no authorization code")
        return AuthorizationCodeResult(code=code, state=state or self._state, iss=iss)

    def waiting_for(self, answer: Answer) -> bool:
        """Whether a parked flow waits for exactly this answer."""
        return (
            self.request is not None
            and answer.id == self.request.id
            and self._answer is not None
            and not self._answer.done()
        )

    def deliver(self, answer: Answer) -> None:
        """Hand the host's answer to the parked flow."""
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(answer)

    def abandon(self) -> None:
        """End a flow still waiting for a person: the connection is closing."""
        if self.request is not None:
            self.deliver(_no_answer(self.request))


def _no_answer(request: Request) -> Answer:
    return Answer(id=request.id, ok=False, reason="cancelled")


def _query(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlparse(url).query).items() if values}


def _code_of(data: JSONObject) -> tuple[str | None, str | None, str | None]:
    """``(code, state, iss)`` from an answer: its own keys, or those of a redirect URL."""
    url = data.get("url") or data.get("redirectUrl")
    fields = _query(url) if isinstance(url, str) else {}
    if "error" in fields:
        raise AuthorizationFailed(f"the authorization server answered {fields['error']}")

    def pick(name: str) -> str | None:
        value = data.get(name, fields.get(name))
        return str(value) if value else None

    return pick("code"), pick("state"), pick("iss")


async def create_auth(
    server: str,
    url: str,
    config: OAuthConfig,
    store: TokenStore | None,
    authorizer: Authorizer,
) -> Any:
    """The SDK OAuth provider (an ``httpx2.Auth``) for one server.

    A pre-registered client (``clientId``) is written to the store when it has none yet.
    """
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    storage = _Storage(store if store is not None else MemoryTokenStore(), token_key(server, url))
    secret = expand_env(config.client_secret) if config.client_secret else None
    if config.grant == "client_credentials":
        return _client_credentials(url, config, storage, secret)
    if config.grant == "identity_assertion":
        from .identity_assertion import identity_assertion_auth

        return identity_assertion_auth(url, config, storage, secret or "")
    method = config.token_endpoint_auth_method
    if method is None:
        method = "client_secret_basic" if secret else "none"
    metadata = OAuthClientMetadata(
        client_name=config.client_name,
        redirect_uris=[config.redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=config.scope,
        token_endpoint_auth_method=method,  # type: ignore[arg-type]
    )
    if config.client_id is not None and await storage.get_client_info() is None:
        client = OAuthClientInformationFull(
            client_id=config.client_id,
            client_secret=secret,
            redirect_uris=[config.redirect_uri],  # type: ignore[list-item]
            token_endpoint_auth_method=method,
        )
        await storage.set_client_info(client)
    return _provider_class()(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=authorizer.redirect,
        callback_handler=authorizer.callback,
        client_metadata_url=config.client_metadata_url,
    )


@functools.cache
def _provider_class() -> Any:
    """The SDK's authorization-code provider, refreshing where the SDK would ask again.

    The SDK reloads stored tokens without their expiry and would present an expired access
    token after a restart; and when a server refuses a token the client still took for
    valid, it goes straight to a new sign-in. Here the stored expiry is restored, and a
    refused token is refreshed once before the person is asked.
    """
    from mcp.client.auth import OAuthClientProvider

    class _Provider(OAuthClientProvider):
        async def _initialize(self) -> None:
            await super()._initialize()
            storage = self.context.storage
            if self.context.current_tokens is not None and isinstance(storage, _Storage):
                self.context.token_expiry_time = await storage.expiry()

        async def _auth_flow(self, request: Any) -> Any:
            """The SDK's flow, but an access token the server refuses (401) while it looked
            valid (it expired early, or the server forgot it) is refreshed once first, before
            the person is asked to sign in again."""
            context = self.context
            flow = super()._auth_flow(request)
            retried = False
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    if (
                        outgoing is request
                        and response.status_code == 401
                        and not retried
                        and context.is_token_valid()
                        and context.can_refresh_token()
                    ):
                        retried = True
                        await flow.aclose()
                        context.token_expiry_time = 1.0  # long past: the SDK refreshes first
                        flow = super()._auth_flow(request)
                        outgoing = await flow.__anext__()
                        continue
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

    return _Provider


def _client_credentials(
    url: str, config: OAuthConfig, storage: _Storage, secret: str | None
) -> Any:
    """A machine-to-machine provider: a client secret or a signed JWT assertion, no browser."""
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    assert config.client_id is not None
    if config.private_key is not None:
        params = SignedJWTParameters(
            issuer=config.client_id,
            subject=config.client_id,
            signing_algorithm=config.signing_algorithm,
            signing_key=expand_env(config.private_key),
        )
        return PrivateKeyJWTOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=config.client_id,
            assertion_provider=params.create_assertion_provider(),
            scope=config.scope,
        )
    method = config.token_endpoint_auth_method or "client_secret_basic"
    return ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=config.client_id,
        client_secret=secret or "",
        token_endpoint_auth_method=method,  # type: ignore[arg-type]
        scope=config.scope,
    )

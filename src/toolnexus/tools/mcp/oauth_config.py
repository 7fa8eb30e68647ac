"""The ``oauth`` key of a remote MCP server entry, parsed into plain data.

``"oauth": true`` (or an object) turns OAuth on with discovery and dynamic client registration;
``"oauth": false`` turns it off. Object keys: ``clientId``, ``clientSecret`` (``${NAME}``
expanded when connecting), ``clientName``, ``clientMetadataUrl``, ``scope``, ``redirectUri``,
``tokenEndpointAuthMethod``, ``grant`` (``authorization_code``, ``client_credentials`` or
``identity_assertion``), ``privateKey`` (PEM, ``${NAME}`` expanded; signs a ``private_key_jwt``
assertion for the client-credentials grant) and ``signingAlgorithm``.

The ``identity_assertion`` grant is enterprise-managed authorization (cross-app access): the
person's ID token from the organisation's identity provider (``idToken``, ``${NAME}``
expanded) is exchanged at ``idpTokenEndpoint`` (as ``idpClientId``, with ``idpClientSecret``
when the provider wants one) for an identity assertion, which the MCP server's authorization
server (``issuer``, configured, never discovered) turns into an access token for
``clientId``/``clientSecret``. No browser is involved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from ...errors import ConfigError

__all__ = ["DEFAULT_REDIRECT_URI", "OAuthConfig", "parse_oauth"]

DEFAULT_REDIRECT_URI = "http://127.0.0.1:8976/oauth/callback"
"""Where the authorization server sends the browser back to; the host reads the code there."""

Grant = Literal["authorization_code", "client_credentials", "identity_assertion"]
_GRANTS = ("authorization_code", "client_credentials", "identity_assertion")
_AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic", "private_key_jwt")
_KEYS = {
    "clientId": "client_id",
    "clientSecret": "client_secret",
    "clientName": "client_name",
    "clientMetadataUrl": "client_metadata_url",
    "scope": "scope",
    "redirectUri": "redirect_uri",
    "tokenEndpointAuthMethod": "token_endpoint_auth_method",
    "privateKey": "private_key",
    "signingAlgorithm": "signing_algorithm",
    "issuer": "issuer",
    "idpTokenEndpoint": "idp_token_endpoint",
    "idpClientId": "idp_client_id",
    "idpClientSecret": "idp_client_secret",
    "idToken": "id_token",
}
_ASSERTION_NEEDS = (
    "clientId",
    "clientSecret",
    "issuer",
    "idpTokenEndpoint",
    "idpClientId",
    "idToken",
)


@dataclass(slots=True)
class OAuthConfig:
    """How to authorize with a remote MCP server (all optional: discovery fills the rest)."""

    client_id: str | None = None
    """A pre-registered client; without it the client registers itself (or uses
    ``client_metadata_url`` where the server supports URL-based client ids)."""
    client_secret: str | None = None
    """Raw value; ``${NAME}`` is expanded when connecting and the result is never logged."""
    client_name: str = "toolnexus"
    client_metadata_url: str | None = None
    scope: str | None = None
    redirect_uri: str = DEFAULT_REDIRECT_URI
    token_endpoint_auth_method: str | None = None
    grant: Grant = "authorization_code"
    private_key: str | None = None
    signing_algorithm: str = "ES256"
    issuer: str | None = None
    """The authorization server's issuer, for the ``identity_assertion`` grant."""
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = None
    idp_client_secret: str | None = None
    """Raw value; ``${NAME}`` is expanded when connecting and the result is never logged."""
    id_token: str | None = None
    """Raw value; ``${NAME}`` is expanded when connecting and the result is never logged."""


def parse_oauth(value: object, fail: Callable[[str], ConfigError]) -> OAuthConfig | None:
    """The server's OAuth settings, ``None`` for ``false``; ``fail`` builds the error."""
    if value is False:
        return None
    if value is True:
        return OAuthConfig()
    if not isinstance(value, Mapping):
        raise fail('"oauth" must be true, false or an object')
    config = OAuthConfig()
    for key, item in value.items():
        if key == "grant":
            if item not in _GRANTS:
                raise fail(f'"oauth"."grant" must be one of {", ".join(_GRANTS)}')
            config.grant = item
            continue
        field_name = _KEYS.get(str(key))
        if field_name is None:
            raise fail(f'"oauth" has an unknown key "{key}"')
        if not isinstance(item, str) or not item:
            raise fail(f'"oauth"."{key}" must be a non-empty string')
        setattr(config, field_name, item)
    method = config.token_endpoint_auth_method
    if method is not None and method not in _AUTH_METHODS:
        raise fail(f'"oauth"."tokenEndpointAuthMethod" must be one of {", ".join(_AUTH_METHODS)}')
    if config.grant == "client_credentials" and config.client_id is None:
        raise fail('"oauth": the client_credentials grant needs a "clientId"')
    if config.grant == "identity_assertion":
        missing = [k for k in _ASSERTION_NEEDS if getattr(config, _KEYS[k]) is None]
        if missing:
            raise fail(f'"oauth": the identity_assertion grant needs {", ".join(missing)}')
        if method not in (None, "client_secret_basic", "client_secret_post"):
            raise fail(
                '"oauth": the identity_assertion grant authenticates with client_secret_basic '
                "or client_secret_post"
            )
    return config

"""An MCP client for the conformance suite's client scenarios, built on toolnexus's public API.

The suite starts it as ``python conformance_client.py <server url>`` with the scenario's name in
``MCP_CONFORMANCE_SCENARIO`` and, for some scenarios, credentials in ``MCP_CONFORMANCE_CONTEXT``
(JSON). It builds a toolkit with that one server, then runs an in-process "model" that calls
every tool the server lists once (arguments made up from each input schema) and stops. The
run's ``wait_for`` plays the person: it accepts elicitations with an empty form (so schema
defaults apply) and completes authorizations by opening the URL as a browser would, without
following the redirect, and answering with the redirect's query (the authorization code).
Scenarios that come with credentials (a pre-registered client, client credentials, an
identity provider's ID token) get them as ``oauth`` settings, as a host's ``mcp.json`` would.
Exits non-zero when the server failed to connect.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any
from urllib.parse import urlparse

import aiohttp

import toolnexus as tn

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


async def authorization_server(url: str) -> str:
    """The issuer the server's protected resource metadata names.

    For enterprise-managed authorization the issuer is configuration, which an administrator
    looks up once; the scenario's context does not carry it, so this stands in for that step.
    """
    parts = urlparse(url)
    where = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    async with aiohttp.ClientSession() as http:
        async with http.get(where) as response:
            metadata = await response.json()
    return str(metadata["authorization_servers"][0])


async def oauth_settings(scenario: str, context: dict[str, Any], url: str) -> dict[str, Any] | bool:
    """The ``oauth`` entry of the server config for one scenario."""
    if scenario == "auth/basic-cimd":
        return {"clientMetadataUrl": CLIENT_METADATA_URL}
    if scenario == "auth/pre-registration":
        return {"clientId": context["client_id"], "clientSecret": context["client_secret"]}
    if scenario == "auth/client-credentials-basic":
        return {
            "grant": "client_credentials",
            "clientId": context["client_id"],
            "clientSecret": context["client_secret"],
        }
    if scenario == "auth/client-credentials-jwt":
        return {
            "grant": "client_credentials",
            "clientId": context["client_id"],
            "privateKey": context["private_key_pem"],
            "signingAlgorithm": context.get("signing_algorithm", "ES256"),
        }
    if scenario == "auth/cross-app-access-complete-flow":
        os.environ["CONFORMANCE_ID_TOKEN"] = context["idp_id_token"]
        return {
            "grant": "identity_assertion",
            "clientId": context["client_id"],
            "clientSecret": context["client_secret"],
            "issuer": await authorization_server(url),
            "idpTokenEndpoint": context["idp_token_endpoint"],
            "idpClientId": context["idp_client_id"],
            "idToken": "${CONFORMANCE_ID_TOKEN}",
        }
    return True


def sample(schema: Any) -> Any:
    """A plausible value for a JSON schema: its default, first enum value, or a typed sample."""
    if not isinstance(schema, dict):
        return "test"
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: sample(properties.get(name)) for name in schema.get("required") or []}
    return {
        "number": 2,
        "integer": 3,
        "boolean": True,
        "array": [],
        "null": None,
    }.get(kind if isinstance(kind, str) else "", "test")


async def browse(request: tn.Request) -> tn.Answer:
    """The person: complete an authorization in the "browser", accept any form as it is."""
    if request.kind != "authorization" or request.url is None:
        return tn.Answer(request.id, ok=True, data={})
    async with aiohttp.ClientSession() as http:
        async with http.get(request.url, allow_redirects=False) as response:
            location = response.headers.get("Location")
    if location is None:
        return tn.Answer(request.id, ok=False, reason="cancelled")
    return tn.Answer(request.id, ok=True, data={"url": location})


def call_every_tool(tools: list[tn.Tool]) -> Any:
    """An in-process model: first turn calls every tool once, the next one answers."""

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        if request["messages"][-1]["role"] == "user":
            calls = [{"name": t.name, "arguments": sample(t.input_schema)} for t in tools]
            if calls:
                return {"tool_calls": calls}
        return {"content": "done"}

    return generate


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    entry: dict[str, Any] = {"url": url}
    if scenario.startswith("auth/"):
        entry["oauth"] = await oauth_settings(scenario, context, url)
    config = {"mcpServers": {"conformance": entry}}
    async with await tn.create_toolkit(mcp_config=config, builtins=False, wait_for=browse) as tk:
        if tk.mcp_status() != {"conformance": "connected"}:
            return 1
        tools = [t for t in tk.tools() if t.source == "mcp"]
        client = tn.create_in_process_client(
            model="conformance", generate=call_every_tool(tools), wait_for=browse
        )
        result = await client.run("Call every tool once.", tk)
        for call in result.tool_calls:
            print(f"{call.name}: {'error: ' if call.is_error else ''}{call.output[:200]}")
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    sys.exit(asyncio.run(main(sys.argv[1])))

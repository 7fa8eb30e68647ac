"""The default model transport against servers that answer with hand-written HTTP/1.1 bytes.

Each server here reads one request (head and ``Content-Length`` body) at a time and writes the
scripted bytes back, so the framing a real server may choose (a length, chunks cut anywhere,
a body that ends with the connection, a connection closed after an answer) is exercised
exactly, along with TLS against a certificate authority made for the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from toolnexus import LLMError, TextEvent, create_client
from toolnexus.transport.framing import ResponseFrame

ANSWER = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1},
}
BODY = json.dumps(ANSWER).encode()


def with_length(body: bytes = BODY, extra: str = "") -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}"
    return head.encode() + b"Content-Length: %d\r\n\r\n" % len(body) + body


def chunked(pieces: list[bytes], content_type: str = "application/json") -> bytes:
    out = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
    data = out.encode()
    for piece in pieces:
        data += b"%x\r\n" % len(piece) + piece + b"\r\n"
    return data + b"0\r\n\r\n"


@dataclass
class RawServer:
    """Answers the n-th request with ``answers[n]`` (bytes, written in the given pieces)."""

    answers: list[list[bytes]]
    close_after: set[int] = field(default_factory=set)
    """Requests after whose answer the server closes the connection."""
    connections: int = 0
    requests: int = 0
    closed: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    url: str = ""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode().split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":")[1])
                await reader.readexactly(length)
                index = self.requests
                self.requests += 1
                for piece in self.answers[index]:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0)
                if index in self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            self.closed += 1
            self.changed.set()

    async def until_closed(self, n: int) -> None:
        """Until the server has closed ``n`` connections, and the client's loop has turned
        twice since (so the client has read the end of its side of the connection)."""
        async with asyncio.timeout(5):
            while self.closed < n:
                self.changed.clear()
                await self.changed.wait()
        for _ in range(2):
            await asyncio.sleep(0)


@pytest.fixture
async def raw_server() -> AsyncIterator[Callable[..., RawServer]]:
    servers: list[asyncio.Server] = []

    async def start(server: RawServer, tls: ssl.SSLContext | None = None) -> RawServer:
        listening = await asyncio.start_server(server.serve, "127.0.0.1", 0, ssl=tls)
        servers.append(listening)
        port = listening.sockets[0].getsockname()[1]
        server.url = f"{'https' if tls else 'http'}://{'localhost' if tls else '127.0.0.1'}:{port}"
        return server

    yield start  # type: ignore[misc]
    for listening in servers:
        listening.close()
        await listening.wait_closed()


async def test_answers_framed_by_length_by_chunks_and_by_closing_are_all_read(
    raw_server: Callable[..., RawServer],
) -> None:
    until_close = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY
    server = await raw_server(
        RawServer(
            [
                [with_length()],
                [chunked([BODY[:7], BODY[7:]])],
                [until_close],
                [with_length()],
            ],
            close_after={2},
        )
    )
    async with create_client(server.url, model="m", api_key="k") as client:
        texts = [(await client.run("hi")).text for _ in range(4)]
    assert texts == ["fine"] * 4
    # The first two shared one kept-alive connection; a body that ends with the connection
    # cannot leave it for the next request.
    assert server.connections == 2


async def test_a_response_head_and_body_cut_into_small_pieces_are_put_together(
    raw_server: Callable[..., RawServer],
) -> None:
    whole = chunked([BODY[:5], BODY[5:30], BODY[30:]])
    pieces = [whole[i : i + 3] for i in range(0, len(whole), 3)]
    server = await raw_server(RawServer([pieces, pieces]))
    async with create_client(server.url, model="m", api_key="k") as client:
        assert (await client.run("hi")).text == "fine"
        assert (await client.run("hi")).text == "fine"
    assert server.connections == 1


async def test_a_connection_the_server_closed_while_it_was_idle_is_not_reused(
    raw_server: Callable[..., RawServer],
) -> None:
    server = await raw_server(
        RawServer([[with_length()], [with_length()], [with_length()]], close_after={0, 1})
    )
    texts = []
    async with create_client(server.url, model="m", api_key="k", retries=0) as client:
        for n in range(3):
            texts.append((await client.run("hi")).text)
            if n < 2:
                await server.until_closed(n + 1)
    assert texts == ["fine"] * 3
    assert server.connections == 3


async def test_a_connection_close_header_is_honoured(
    raw_server: Callable[..., RawServer],
) -> None:
    server = await raw_server(
        RawServer([[with_length(extra="Connection: close\r\n")], [with_length()]], close_after={0})
    )
    async with create_client(server.url, model="m", api_key="k", retries=0) as client:
        assert [(await client.run("hi")).text for _ in range(2)] == ["fine", "fine"]
    assert server.connections == 2


async def test_a_body_cut_short_by_the_server_is_a_clear_error_not_a_hang(
    raw_server: Callable[..., RawServer],
) -> None:
    cut = with_length()[:-10]
    server = await raw_server(RawServer([[cut]], close_after={0}))
    async with create_client(server.url, model="m", api_key="k", retries=0) as client:
        with pytest.raises(LLMError, match="closed the connection before the response"):
            await client.run("hi")


async def test_a_reply_that_is_not_http_is_a_clear_error(
    raw_server: Callable[..., RawServer],
) -> None:
    server = await raw_server(RawServer([[b"SSH-2.0-OpenSSH\r\n\r\n"]], close_after={0}))
    async with create_client(server.url, model="m", api_key="k", retries=0) as client:
        with pytest.raises(LLMError, match="malformed response head"):
            await client.run("hi")


def sse(*texts: str) -> list[bytes]:
    events = [
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        for text in texts
    ]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]


async def test_a_stream_read_up_to_its_done_event_leaves_the_connection_for_the_next_call(
    raw_server: Callable[..., RawServer],
) -> None:
    stream = chunked(sse("Hello ", "world"), content_type="text/event-stream")
    server = await raw_server(RawServer([[stream], [stream], [with_length()]]))
    async with create_client(server.url, model="m", api_key="k") as client:
        for _ in range(2):
            texts = [e.delta async for e in client.stream("hi") if isinstance(e, TextEvent)]
            assert "".join(texts) == "Hello world"
        assert (await client.run("hi")).text == "fine"
    assert server.connections == 1


def test_chunked_framing_split_at_every_byte_decodes_the_same() -> None:
    pieces = [b"data: one\n\n", b"x" * 300, b"\r\n in the data \r\n"]
    framed = chunked(pieces).replace(b"0\r\n\r\n", b"0;ext=1\r\nT: v\r\n\r\n")
    for cut in range(1, len(framed)):
        frame = ResponseFrame("POST")
        frame.feed(framed[:cut])
        frame.feed(framed[cut:])
        assert frame.take() == b"".join(pieces), cut
        assert frame.complete
        assert frame.keep_alive
        assert not frame.trailing


def test_chunk_sizes_are_read_as_hex_with_extensions_ignored() -> None:
    frame = ResponseFrame()
    frame.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    frame.feed(b"A;name=value\r\n0123456789\r\n0\r\n\r\n")
    assert frame.take() == b"0123456789"
    assert frame.complete


def certificate_authority(tmp: Path) -> tuple[Path, Path, Path]:
    """A CA certificate, and a certificate for ``localhost`` it signed, with its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = tmp / "ca.pem", tmp / "server.pem", tmp / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


async def test_https_is_verified_against_the_trust_store(
    raw_server: Callable[..., RawServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca, cert, key = certificate_authority(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    server = await raw_server(RawServer([[with_length()], [with_length()]]), tls)
    # Not trusted: the system store does not know the test CA.
    async with create_client(server.url, model="m", api_key="k", retries=0) as client:
        with pytest.raises(LLMError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.run("hi")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # read when a client first needs TLS
    async with create_client(server.url, model="m", api_key="k", retries=0) as client:
        assert (await client.run("hi")).text == "fine"


async def test_a_stream_is_read_as_it_arrives_not_when_it_ends() -> None:
    """The server holds back the rest of the stream until the client has shown the first
    text: a reader that waited for the end of the body would never get there."""
    first_text = asyncio.Event()
    events = sse("Hello ", "world")
    whole = chunked(events, content_type="text/event-stream")
    first_chunk = b"%x\r\n%s\r\n" % (len(events[0]), events[0])
    cut = whole.index(first_chunk) + len(first_chunk)
    opening, rest = whole[:cut], whole[cut:]
    assert b"world" in rest

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(":")[1])
            for line in head.decode().split("\r\n")
            if line.lower().startswith("content-length:")
        )
        await reader.readexactly(length)
        writer.write(opening)
        await writer.drain()
        await first_text.wait()
        writer.write(rest)
        await writer.drain()
        writer.close()

    listening = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}"
    texts: list[str] = []
    try:
        async with (
            asyncio.timeout(5),
            create_client(url, model="m", api_key="k", retries=0) as client,
        ):
            async for event in client.stream("hi"):
                if isinstance(event, TextEvent):
                    texts.append(event.delta)
                    first_text.set()
    finally:
        listening.close()
        await listening.wait_closed()
    assert texts == ["Hello ", "world"]

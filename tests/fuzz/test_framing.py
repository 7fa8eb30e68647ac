"""Property-based fuzzing of HTTP/1.1 response framing (``transport.framing.ResponseFrame``).

Three properties, each on input split into pieces at arbitrary points (as a socket delivers it):
a well-formed response (a length or chunks, any chunk sizes and extensions, trailers) always
gives back its exact body, and its connection is kept only when nothing follows its end;
arbitrary bytes fail only with ``FramingError``; and a well-formed response with one byte
changed either still frames or fails with ``FramingError``, never with anything else.
Example counts are fixed, so the module runs in a few seconds.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolnexus.transport.framing import FramingError, ResponseFrame

FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

tokens = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-",
    min_size=1,
    max_size=12,
)
values = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20)
headers = st.lists(
    st.tuples(tokens, values).filter(
        lambda kv: (
            kv[0].lower()
            not in ("content-length", "transfer-encoding", "connection", "proxy-connection")
        )
    ),
    max_size=5,
)


@st.composite
def responses(draw: st.DrawFn) -> tuple[bytes, bytes, bool]:
    """A well-formed response: its bytes, its body, and whether it asks to close."""
    body = draw(st.binary(max_size=300))
    status = draw(st.sampled_from([200, 201, 400, 404, 429, 500, 503]))
    close = draw(st.booleans())
    lines = [f"HTTP/1.1 {status} Reason"]
    lines += [f"{name}: {value}" for name, value in draw(headers)]
    if close:
        lines.append("Connection: close")
    if draw(st.booleans()):
        lines.append(f"Content-Length: {len(body)}")
        framed = body
    else:
        lines.append("Transfer-Encoding: chunked")
        cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=6)))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        framed = b""
        for piece in pieces:
            if piece:
                ext = b";x=y" if draw(st.booleans()) else b""
                size = (b"%x" if draw(st.booleans()) else b"%X") % len(piece)
                framed += size + ext + b"\r\n" + piece + b"\r\n"
        trailers = draw(headers)
        framed += b"0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in trailers) + b"\r\n"
    head = "\r\n".join(lines).encode() + b"\r\n\r\n"
    return head + framed, body, close


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def feed(frame: ResponseFrame, pieces: list[bytes]) -> bytes:
    body = b""
    for piece in pieces:
        frame.feed(piece)
        body += frame.take()
    return body


@FUZZ
@given(responses(), st.lists(st.integers(0, 2000), max_size=8), st.binary(max_size=40))
def test_a_well_formed_response_split_anywhere_frames_to_its_exact_body(
    response: tuple[bytes, bytes, bool], cuts: list[int], after: bytes
) -> None:
    data, body, close = response
    frame = ResponseFrame("POST")
    got = feed(frame, split(data + after, cuts))
    assert frame.complete
    assert got == body
    # Kept only when the server keeps it and nothing but blank lines came after the end.
    stray = after.strip(b"\r\n") != b""
    assert frame.keep_alive == (not close and not stray)
    assert frame.trailing == stray or (close and bool(after))


@FUZZ
@given(st.binary(max_size=400), st.lists(st.integers(0, 400), max_size=6))
def test_arbitrary_bytes_fail_only_with_a_framing_error(data: bytes, cuts: list[int]) -> None:
    frame = ResponseFrame()
    error: FramingError | None = None
    try:
        feed(frame, split(data, cuts))
        frame.end_of_input()
    except FramingError as exc:
        error = exc
    if error is not None:
        assert str(error).startswith(("malformed response", "the server closed"))
    else:
        assert frame.complete


@FUZZ
@given(
    responses(),
    st.integers(0, 10_000),
    st.integers(0, 255),
    st.lists(st.integers(0, 2000), max_size=4),
)
def test_a_response_with_one_byte_changed_frames_or_fails_with_a_framing_error(
    response: tuple[bytes, bytes, bool], where: int, byte: int, cuts: list[int]
) -> None:
    data = bytearray(response[0])
    data[where % len(data)] = byte
    frame = ResponseFrame()
    try:
        feed(frame, split(bytes(data), cuts))
        frame.end_of_input()
    except FramingError:
        assert not frame.keep_alive
    else:
        assert frame.complete

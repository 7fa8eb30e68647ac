"""CPU cost of decoding and assembling large streamed replies (all linear in their input).

Cases, each fed to ``SSEDecoder`` in 64 KiB chunks (what a socket read yields) and then to
the style's stream parser:

- a 50 MB SSE body of Anthropic ``text_delta`` events of 1 KiB each;
- the same body as OpenAI chunks;
- one 50 MB ``data:`` line (a single event whose JSON is 50 MB);
- Anthropic and OpenAI text accumulation of 800 KB in 8-byte deltas (many tiny events).

Run: ``python benchmarks/stream_parsing.py`` (``--mb 10`` for a quicker pass). Prints CPU
seconds per case and MB/s.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from toolnexus.dialects import AnthropicDialect, OpenAIDialect
from toolnexus.dialects.sse import SSEDecoder

CHUNK = 64 * 1024


def anthropic_body(total: int, piece: int, events: int | None = None) -> bytes:
    text = "x" * piece
    event = json.dumps(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
    )
    start = json.dumps(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    )
    line = f"event: content_block_delta\ndata: {event}\n\n".encode()
    head = f"event: content_block_start\ndata: {start}\n\n".encode()
    stop = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    return head + line * (events or max(1, total // len(line))) + stop


def openai_body(total: int, piece: int, events: int | None = None) -> bytes:
    chunk = json.dumps({"choices": [{"index": 0, "delta": {"content": "x" * piece}}]})
    line = f"data: {chunk}\n\n".encode()
    return line * (events or max(1, total // len(line))) + b"data: [DONE]\n\n"


def one_line_body(total: int) -> bytes:
    chunk = json.dumps({"choices": [{"index": 0, "delta": {"content": "x" * total}}]})
    return f"data: {chunk}\n\ndata: [DONE]\n\n".encode()


def consume(body: bytes, style: str) -> tuple[float, int]:
    """CPU seconds to decode and assemble ``body``; and the assembled text's length."""
    dialect = AnthropicDialect() if style == "anthropic" else OpenAIDialect()
    parser = dialect.stream_parser(turn=0)
    decoder = SSEDecoder()
    started = time.process_time()
    for offset in range(0, len(body), CHUNK):
        for event in decoder.feed(body[offset : offset + CHUNK]):
            parser.feed(event)
    for event in decoder.close():
        parser.feed(event)
    turn = parser.finish(done=decoder.done)
    return time.process_time() - started, len(turn.text)


def report(name: str, body: bytes, run: Callable[[bytes], tuple[float, int]]) -> None:
    seconds, chars = run(body)
    mb = len(body) / 1e6
    print(f"{name:<46} {mb:7.1f} MB  {seconds:7.2f} s CPU  {mb / seconds:8.1f} MB/s  {chars} chars")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--mb", type=float, default=50.0, help="size of the large bodies")
    args = options.parse_args()
    size = int(args.mb * 1_000_000)
    report("SSE body, anthropic 1 KiB text deltas", anthropic_body(size, 1024), _anthropic)
    report("SSE body, openai 1 KiB content chunks", openai_body(size, 1024), _openai)
    report("one SSE data line (openai chunk)", one_line_body(size), _openai)
    report(
        "anthropic accumulation, 800 KB in 8 B deltas",
        anthropic_body(0, 8, events=100_000),
        _anthropic,
    )
    report("openai accumulation, 800 KB in 8 B deltas", openai_body(0, 8, events=100_000), _openai)


def _anthropic(body: bytes) -> tuple[float, int]:
    return consume(body, "anthropic")


def _openai(body: bytes) -> tuple[float, int]:
    return consume(body, "openai")


if __name__ == "__main__":
    main()

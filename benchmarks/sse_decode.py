"""CPU time of the SSE decoder for one large event arriving in small chunks.

A model that streams one long tool argument (or a proxy that does not split events) sends one
SSE event of megabytes, which the network hands over in chunks of about a kilobyte. The decoder
must cost time proportional to the bytes, not to bytes times chunks. For each size we time:

- ``decoder``: ``SSEDecoder.feed`` over the chunks, then ``close``;
- ``one chunk``: the same event fed at once (the floor: one scan and one JSON parse);
- ``rejoining``: a decoder that re-joins its buffer on every chunk, the shape to avoid
  (only for the smaller sizes: it is quadratic).

Usage: ``python benchmarks/sse_decode.py [--chunk 1024] [--sizes 1,2,4]`` (sizes in MiB)
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from toolnexus.dialects.sse import SSEDecoder


def event_of(mib: int) -> bytes:
    """One ``data:`` event whose JSON carries about ``mib`` MiB of argument text."""
    arguments = "x" * (mib * 1024 * 1024)
    payload = {"choices": [{"index": 0, "delta": {"content": arguments}}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def chunks_of(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def decode(chunks: list[bytes]) -> int:
    decoder = SSEDecoder()
    events = 0
    for chunk in chunks:
        events += len(decoder.feed(chunk))
    return events + len(decoder.close())


def rejoining(chunks: list[bytes]) -> int:
    """The quadratic shape: keep one buffer, re-join and re-scan it on every chunk."""
    buffer = b""
    events = 0
    for chunk in chunks:
        buffer += chunk
        while b"\n\n" in buffer:
            block, _, buffer = buffer.partition(b"\n\n")
            json.loads(block.removeprefix(b"data: "))
            events += 1
    return events


def cpu_seconds(fn: Callable[[list[bytes]], int], chunks: list[bytes]) -> float:
    started = time.process_time()
    assert fn(chunks) == 1
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk", type=int, default=1024, help="bytes per chunk")
    parser.add_argument("--sizes", default="1,2,4", help="event sizes in MiB, comma-separated")
    args = parser.parse_args()
    print(f"one SSE event fed in {args.chunk}-byte chunks (CPU seconds)")
    for mib in (int(s) for s in args.sizes.split(",")):
        data = event_of(mib)
        chunks = chunks_of(data, args.chunk)
        line = (
            f"{mib} MiB, {len(chunks)} chunks: decoder {cpu_seconds(decode, chunks):.3f} s, "
            f"one chunk {cpu_seconds(decode, [data]):.3f} s"
        )
        if mib <= 2:
            line += f", rejoining {cpu_seconds(rejoining, chunks):.3f} s"
        print(line)


if __name__ == "__main__":
    main()

"""What structured output adds to a run, as ratios to the same run without ``output_type``.

Every run gets the same one-turn answer: an invoice as JSON (three lines, nested models). The
baseline is ``client.run`` of that answer with no ``output_type``; each other case asks for
``output_type=Invoice`` and so also builds the mode's body, parses the answer and validates it
with pydantic (``+ validator`` also runs an ``output_validator``). In the ``tool`` mode the
answer arrives as a ``final_result`` call instead of text.

Two settings: over HTTP against a stub provider in a separate process (its CPU does not share
our GIL), and with an in-process model (no HTTP at all: the loop's own cost, where the
validation shows most). Cases are interleaved over rounds; medians are reported.

Usage: ``python benchmarks/structured_output.py [--runs 1000] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

from pydantic import BaseModel

import toolnexus as tn

INVOICE: dict[str, Any] = {
    "number": "INV-2041",
    "customer": "ACME Corp",
    "lines": [
        {"description": "widget", "quantity": 3, "unit_price": "19.50"},
        {"description": "setup fee", "quantity": 1, "unit_price": "40.00"},
        {"description": "shipping", "quantity": 1, "unit_price": "7.25"},
    ],
    "total": "105.75",
}
INVOICE_JSON = json.dumps(INVOICE, separators=(",", ":"))

_SERVER = r"""
import json, sys
from toolnexus.testing import StubLLMServer, reply

ANSWER = sys.argv[1]
INVOICE = json.loads(ANSWER)

def handler(request):
    tools = (request.json or {}).get("tools") or []
    if any(t.get("function", {}).get("name") == "final_result" for t in tools):
        return reply.tool_calls(reply.call("final_result", INVOICE), usage=(10, 5))
    return reply.text(ANSWER, usage=(10, 5))

with StubLLMServer(handler=handler) as stub:
    print(stub.url, flush=True)
    sys.stdin.read()
"""


class Line(BaseModel):
    description: str
    quantity: int
    unit_price: Decimal


class Invoice(BaseModel):
    number: str
    customer: str
    lines: list[Line]
    total: Decimal


def adds_up(invoice: Invoice) -> Invoice:
    expected = sum((line.quantity * line.unit_price for line in invoice.lines), Decimal(0))
    if invoice.total != expected:
        raise tn.ModelRetry(f"total {invoice.total} is not {expected}")
    return invoice


Case = Callable[[], Awaitable[tn.RunResult]]


def cases(client: tn.Client) -> dict[str, Case]:
    """The baseline and each structured-output variant, on one client."""

    async def plain() -> tn.RunResult:
        return await client.run("Extract the invoice.")

    def typed(mode: str, validator: Any = None) -> Case:
        async def one() -> tn.RunResult:
            res = await client.run(
                "Extract the invoice.",
                output_type=Invoice,
                output_mode=mode,  # type: ignore[arg-type]
                output_validator=validator,
            )
            assert isinstance(res.output, Invoice), res
            return res

        return one

    return {
        "no output_type": plain,
        "native": typed("native"),
        "tool": typed("tool"),
        "prompted": typed("prompted"),
        "native + validator": typed("native", adds_up),
    }


async def _timed(n: int, one: Case) -> tuple[float, float]:
    """Wall and client CPU seconds per run, over ``n`` runs one after another."""
    for _ in range(20):  # warm up connections, caches and the type's adapter
        await one()
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        await one()
    return (time.perf_counter() - started) / n, (time.process_time() - cpu) / n


async def measure(url: str, runs: int, rounds: int) -> dict[str, dict[str, tuple[float, float]]]:
    async def answer_at_once(request: dict[str, Any]) -> dict[str, Any]:
        tools = request.get("tools") or []
        usage = {"prompt_tokens": 10, "completion_tokens": 5}
        if any(t["function"]["name"] == "final_result" for t in tools):
            call = {"name": "final_result", "arguments": INVOICE_JSON}
            return {"tool_calls": [call], "usage": usage}
        return {"content": INVOICE_JSON, "usage": usage}

    http = tn.create_client(url, model="bench", api_key="bench-key")
    local = tn.create_in_process_client(model="bench", generate=answer_at_once)
    settings = {"http (stub process)": cases(http), "in-process model": cases(local)}
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {
        setting: {name: [] for name in table} for setting, table in settings.items()
    }
    for _ in range(rounds):  # interleave so machine noise hits every case alike
        for setting, table in settings.items():
            for name, one in table.items():
                samples[setting][name].append(await _timed(runs, one))
    await http.aclose()
    return {
        setting: {
            name: (
                statistics.median(s[0] for s in values),
                statistics.median(s[1] for s in values),
            )
            for name, values in table.items()
        }
        for setting, table in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, INVOICE_JSON],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        results = asyncio.run(measure(url, args.runs, args.rounds))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)
    print(f"runs={args.runs} rounds={args.rounds}; one model round trip per run")
    for setting, table in results.items():
        base_wall, base_cpu = table["no output_type"]
        print(f"\n{setting}")
        print(
            f"{'case':<20}{'wall':>10}{'ratio':>8}{'client CPU':>13}{'ratio':>8}{'CPU added':>12}"
        )
        for name, (wall, cpu) in table.items():
            print(
                f"{name:<20}{wall * 1e6:>7.0f} us{wall / base_wall:>7.2f}x"
                f"{cpu * 1e6:>10.0f} us{cpu / base_cpu:>7.2f}x{(cpu - base_cpu) * 1e6:>+9.0f} us"
            )


if __name__ == "__main__":
    main()

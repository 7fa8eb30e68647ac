"""Structured output: an invoice extracted from text into a pydantic model.

``output_type=Invoice`` sends the model's JSON Schema with the request (the provider's native
response format for openai; the ``final_result`` tool for anthropic) and gives back a validated
``Invoice`` in ``result.output``. The ``output_validator`` checks what a schema cannot say (the
total is the sum of the lines) and raises ``ModelRetry`` to ask the model again: here the
first answer adds up wrong, the second is right. Both wire styles run the same script.
"""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal

from pydantic import BaseModel, Field

from toolnexus import ModelRetry, create_client
from toolnexus.testing import StubLLMServer, reply

EMAIL = """Hi, please find our invoice INV-2041 for ACME Corp below.
3 x widget at 19.50 each, 1 x setup fee at 40.00. Total due: 98.50. Thanks!"""


class Line(BaseModel):
    description: str
    quantity: int = Field(gt=0)
    unit_price: Decimal


class Invoice(BaseModel):
    number: str
    customer: str
    lines: list[Line]
    total: Decimal


def adds_up(invoice: Invoice) -> Invoice:
    """The total must be the sum of the lines; otherwise the model is asked again."""
    expected = sum((line.quantity * line.unit_price for line in invoice.lines), Decimal(0))
    if invoice.total != expected:
        raise ModelRetry(f"total {invoice.total} is not the sum of the lines ({expected})")
    return invoice


WRONG = (
    '{"number":"INV-2041","customer":"ACME Corp","lines":['
    '{"description":"widget","quantity":3,"unit_price":"19.50"}],"total":"98.50"}'
)
RIGHT = (
    '{"number":"INV-2041","customer":"ACME Corp","lines":['
    '{"description":"widget","quantity":3,"unit_price":"19.50"},'
    '{"description":"setup fee","quantity":1,"unit_price":"40.00"}],"total":"98.50"}'
)


def script(style: str) -> list[reply.Reply]:
    """What the stub model answers: in openai's native mode JSON text, in anthropic's tool mode
    a ``final_result`` call with the same JSON as its arguments."""
    if style == "openai":
        return [reply.text(WRONG), reply.text(RIGHT)]
    return [
        reply.tool_calls(reply.call("final_result", json.loads(WRONG))),
        reply.tool_calls(reply.call("final_result", json.loads(RIGHT))),
    ]


async def extract(style: str) -> Invoice:
    with StubLLMServer(script(style)) as stub:
        async with create_client(stub.url, style, model="test-model", api_key="k") as client:
            res = await client.run(
                f"Extract the invoice from this email:\n\n{EMAIL}",
                output_type=Invoice,
                output_validator=adds_up,
            )
        retry = stub.requests[1].json["messages"][-1]
    assert res.status == "done", (res.status, res.limit)
    assert res.turns == 2, res.turns  # the wrong total cost one retry
    assert "is not the sum of the lines (58.50)" in str(retry), retry
    assert isinstance(res.output, Invoice), res.output
    assert res.to_dict()["output"]["total"] == "98.50"
    return res.output


async def main() -> None:
    invoices = [await extract(style) for style in ("openai", "anthropic")]
    assert invoices[0] == invoices[1]
    invoice = invoices[0]
    print(f"ok: {invoice.number} for {invoice.customer}: {len(invoice.lines)} lines")
    for line in invoice.lines:
        print(f"   {line.quantity} x {line.description} at {line.unit_price}")
    print(f"   total {invoice.total}")


if __name__ == "__main__":
    asyncio.run(main())

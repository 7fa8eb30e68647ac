"""The redaction point: registered secrets and their escaped forms become ``***``."""

from __future__ import annotations

import json
import logging

import pytest

from toolnexus import LLMError
from toolnexus._redact import (
    MASK,
    RedactedError,
    add_secret,
    redact,
    redact_exception,
    redact_value,
)

SECRET = "rdx-SECRET-0b7e55aa"
NEWLINE_SECRET = "rdx-NL-SECRET-93ff01\n"


@pytest.fixture(autouse=True)
def _registered() -> None:
    add_secret(SECRET)
    add_secret(NEWLINE_SECRET)


def test_every_form_of_a_secret_is_masked() -> None:
    assert redact(f"a {SECRET} b") == f"a {MASK} b"
    assert redact(repr(NEWLINE_SECRET.encode())) == f"b'{MASK}'"
    assert redact(json.dumps({"k": NEWLINE_SECRET})) == '{"k": "***"}'
    assert redact("nothing here") == "nothing here"


def test_short_values_are_not_treated_as_secrets() -> None:
    add_secret("true")
    add_secret("")
    add_secret(None)
    assert redact("true story") == "true story"


def test_an_llm_error_is_born_redacted() -> None:
    error = LLMError(f"HTTP 401: {SECRET}", status=401, body=f"key={SECRET}")
    assert str(error) == f"HTTP 401: {MASK}"
    assert error.body == f"key={MASK}"


class _Opaque(Exception):
    """Renders its message from an attribute, so its args cannot be redacted."""

    def __init__(self, detail: str) -> None:
        super().__init__()
        self.detail = detail

    def __str__(self) -> str:
        return self.detail


def test_an_exception_chain_is_redacted_and_opaque_links_are_replaced() -> None:
    try:
        try:
            raise _Opaque(f"deep {SECRET}")
        except _Opaque as inner:
            raise ValueError(f"middle {SECRET}") from inner
    except ValueError as middle:
        outer = RuntimeError(f"outer {SECRET}")
        outer.__context__ = middle
        outer.add_note(f"note {SECRET}")
    redact_exception(outer)
    assert str(outer) == f"outer {MASK}"
    assert outer.__notes__ == [f"note {MASK}"]
    middle = outer.__context__
    assert isinstance(middle, ValueError)
    assert str(middle) == f"middle {MASK}"
    stand_in = middle.__cause__
    assert isinstance(stand_in, RedactedError)
    assert str(stand_in) == f"_Opaque: deep {MASK}"


def test_a_cycle_in_the_chain_terminates() -> None:
    first, second = ValueError(SECRET), ValueError(SECRET)
    first.__context__, second.__context__ = second, first
    redact_exception(first)
    assert str(first) == str(second) == MASK


def test_metric_values_are_redacted_in_a_copy() -> None:
    event = {"event": "run", "error": f"x {SECRET}", "nested": [SECRET, 1]}
    assert redact_value(event) == {"event": "run", "error": f"x {MASK}", "nested": [MASK, 1]}
    assert event["error"] == f"x {SECRET}"


def test_log_records_and_their_tracebacks_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    logger = logging.getLogger("toolnexus")
    try:
        raise RuntimeError(f"boom {SECRET}")
    except RuntimeError:
        logger.warning("failed with %s", SECRET, exc_info=True)
    (record,) = [r for r in caplog.records if r.name == "toolnexus"]
    assert record.getMessage() == f"failed with {MASK}"
    assert SECRET not in caplog.text
    assert f"boom {MASK}" in caplog.text

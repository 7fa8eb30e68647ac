"""The SSE decoder on recorded streams."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolnexus.dialects.sse import SSEDecoder, SSEError
from toolnexus.types import JSONObject

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE_NAMES = sorted(path.name for path in FIXTURES.glob("*.sse"))


def read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def decode(data: bytes, size: int | None = None) -> tuple[list[JSONObject], bool]:
    """Feed ``data`` in chunks of ``size`` bytes (all at once by default), then close."""
    step = size or max(len(data), 1)
    decoder = SSEDecoder()
    events: list[JSONObject] = []
    for start in range(0, len(data), step):
        events.extend(decoder.feed(data[start : start + step]))
    events.extend(decoder.close())
    return events, decoder.done


def data_lines(name: str) -> list[JSONObject]:
    """The JSON of every one-line ``data:`` event of a fixture, in file order."""
    text = read(name).decode("utf-8")
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line[6:7] == "{"]


def test_fixtures_are_present() -> None:
    assert len(FIXTURE_NAMES) >= 8, FIXTURE_NAMES


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_decoded_events_do_not_depend_on_how_the_body_is_chunked(name: str) -> None:
    data = read(name)
    whole = decode(data)
    assert whole[0], f"{name} decodes to no event"
    for size in range(1, len(data) + 1):
        assert decode(data, size) == whole, f"{name} decoded differently in {size}-byte chunks"


def test_an_openai_stream_decodes_to_its_five_json_events_then_done() -> None:
    events, done = decode(read("openai_spec_example.sse"))
    assert events == data_lines("openai_spec_example.sse")
    assert len(events) == 5
    assert events[0] == {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}
    assert events[-1] == {
        "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16},
    }
    assert done is True


def test_an_anthropic_stream_decodes_its_data_and_ignores_event_lines() -> None:
    events, done = decode(read("anthropic_spec_example.sse"))
    assert events == data_lines("anthropic_spec_example.sse")
    assert [event["type"] for event in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "message_delta",
        "message_stop",
    ]
    assert done is False  # no [DONE] in this style; the end of the body ends the stream


def test_crlf_line_endings_decode_like_lf() -> None:
    crlf = read("openai_spec_example_crlf.sse")
    assert b"\r\n\r\n" in crlf
    assert crlf.count(b"\n") == crlf.count(b"\r\n"), "the fixture lost its CRLF line endings"
    for size in (1, 2, 3, len(crlf)):
        assert decode(crlf, size) == decode(read("openai_spec_example.sse"))


def test_crlf_split_between_chunks_does_not_end_a_multi_line_event_early() -> None:
    crlf = read("openai_multiline_data_crlf.sse")
    assert crlf.count(b"\n") == crlf.count(b"\r\n"), "the fixture lost its CRLF line endings"
    expected = decode(read("openai_multiline_data.sse"))
    for cut in range(1, len(crlf)):
        decoder = SSEDecoder()
        events = decoder.feed(crlf[:cut]) + decoder.feed(crlf[cut:]) + decoder.close()
        assert (events, decoder.done) == expected, f"cut at byte {cut}"


@pytest.mark.parametrize("size", [1, 2, 5, None])
def test_bare_cr_line_endings_decode_like_lf(size: int | None) -> None:
    lf = read("anthropic_text_and_tools.sse")
    assert decode(lf.replace(b"\n", b"\r"), size) == decode(lf)


def test_comment_event_id_and_retry_lines_are_ignored() -> None:
    events, done = decode(read("openai_comments_and_fields.sse"))
    assert events == [
        {
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Chennai is "}}],
            "usage": None,
        },
        {"choices": [{"index": 0, "delta": {"content": "warm — 32°C, வணக்கம்"}}], "usage": None},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": None},
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}},
    ]
    assert done is True


def test_multibyte_text_split_between_chunks_decodes_intact() -> None:
    events, _ = decode(read("openai_comments_and_fields.sse"), 1)
    assert events[1]["choices"][0]["delta"]["content"] == "warm — 32°C, வணக்கம்"


def test_data_lines_of_one_event_join_into_one_json_document() -> None:
    events, done = decode(read("openai_multiline_data.sse"))
    assert events == [
        {"choices": [{"index": 0, "delta": {"content": "multi"}}]},
        {"choices": [{"index": 0, "delta": {"content": "-line"}}]},
        {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        },
    ]
    assert done is True


def test_data_lines_are_joined_with_a_newline() -> None:
    # Joined with "" or " " this would be valid JSON; a raw newline inside a string is not.
    with pytest.raises(SSEError, match=r"SSE event 1 is not valid JSON") as caught:
        SSEDecoder().feed(b'data: {"a":\ndata: "x\ndata: y"}\n\n')
    assert repr('{"a":\n"x\ny"}') in str(caught.value)


def test_done_ends_the_stream_and_later_input_is_ignored() -> None:
    tail = b'data: {"choices":[{"index":0,"delta":{"content":"late"}}]}\n\n'
    decoder = SSEDecoder()
    events = decoder.feed(read("openai_spec_example.sse") + tail)
    assert decoder.done is True
    assert len(events) == 5
    assert decoder.feed(tail) == []
    assert decoder.close() == []


def test_done_mid_chunk_stops_before_the_rest_of_that_chunk() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b'data: {"n":1}\n\ndata: [DONE]\n\ndata: {"n":2}\n\n')
    assert events == [{"n": 1}]
    assert decoder.done is True


def test_close_flushes_a_final_event_without_a_trailing_blank_line() -> None:
    data = read("openai_no_trailing_blank_line.sse")
    assert not data.endswith(b"\n")
    decoder = SSEDecoder()
    first = decoder.feed(data)
    assert first == [{"choices": [{"index": 0, "delta": {"content": "no "}}]}]
    assert decoder.close() == [{"choices": [{"index": 0, "delta": {"content": "trailer"}}]}]
    assert decoder.done is False


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_close_flushes_a_final_event_ended_by_one_line_break(ending: bytes) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"last":true}' + ending) == []
    assert decoder.close() == [{"last": True}]


def test_close_without_pending_data_returns_nothing() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b": just a comment\n\nevent: ping\n\n") == []
    assert decoder.close() == []


def test_a_data_field_without_a_space_after_the_colon_is_read() -> None:
    assert SSEDecoder().feed(b'data:{"tight":1}\n\n') == [{"tight": 1}]


def test_malformed_json_raises_sse_error_naming_the_event_number() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"ok":1}\n\n: comment\n\nevent: x\n\n') == [{"ok": 1}]
    with pytest.raises(SSEError, match=r"SSE event 2 is not valid JSON") as caught:
        decoder.feed(b'data: {"broken":\n\n')
    assert "broken" in str(caught.value)


def test_malformed_json_flushed_by_close_is_reported_too() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: {oops")
    with pytest.raises(SSEError, match=r"SSE event 1 is not valid JSON"):
        decoder.close()


@pytest.mark.parametrize("payload", [b"[1,2]", b"42", b'"text"', b"null"])
def test_json_that_is_not_an_object_raises_sse_error(payload: bytes) -> None:
    with pytest.raises(SSEError, match=r"SSE event 1 is not a JSON object"):
        SSEDecoder().feed(b"data: " + payload + b"\n\n")


def test_a_byte_order_mark_split_across_chunks_is_dropped() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef") == []
    assert decoder.feed(b"\xbb") == []
    assert decoder.feed(b'\xbfdata: {"a":1}\n\n') == [{"a": 1}]


def test_a_cr_at_a_chunk_end_then_lf_is_one_line_break() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":1}\r') == []
    assert decoder.feed(b"\n\r") == [{"a": 1}]
    assert decoder.feed(b'\ndata: {"b":2}\r\r') == [{"b": 2}]


def test_a_long_line_in_many_chunks_is_one_event() -> None:
    decoder = SSEDecoder()
    payload = b'data: {"t":"' + b"x" * 100_000 + b'"}\n\n'
    events = []
    for start in range(0, len(payload), 7):
        events += decoder.feed(payload[start : start + 7])
    assert events == [{"t": "x" * 100_000}]


def test_sse_data_nested_too_deep_is_an_sse_error() -> None:
    with pytest.raises(SSEError, match="deeper than 512"):
        SSEDecoder().feed(b"data: " + b"[" * 600 + b"]" * 600 + b"\n\n")


@pytest.mark.parametrize("size", [1, 7, 1024])
def test_one_large_event_in_small_chunks_decodes_like_one_chunk(size: int) -> None:
    text = "é" * 100_000  # multibyte text, so chunks also split characters
    data = b"data: " + json.dumps({"text": text}, ensure_ascii=False).encode() + b"\n\n"
    assert decode(data, size) == decode(data) == ([{"text": text}], False)


def test_a_byte_order_mark_after_the_start_of_the_stream_is_not_dropped() -> None:
    data = b': comment\n\xef\xbb\xbfdata: {"a": 1}\n\ndata: {"b": 2}\n\n'
    assert decode(data) == ([{"b": 2}], False)  # the marked line is not a data line


def test_a_stream_shorter_than_a_byte_order_mark_is_still_read_at_close() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"da") == []
    assert decoder.feed(b'ta: {"a": 1}') == []
    assert decoder.close() == [{"a": 1}]

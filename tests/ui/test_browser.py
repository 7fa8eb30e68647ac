"""The chat page in a real browser: headless Chromium driven by Selenium against the stub model.

A prompt streams an answer after a tool call (arguments and result shown); a tool that needs
approval shows a card whose Approve button resumes the run; an input request takes a typed
answer; a reload restores the thread. With ``TOOLNEXUS_SCREENSHOT=1`` the page is saved, mid-run
(a pending approval on screen), to ``docs/images/chat.png``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from toolnexus.testing import StubLLMServer, reply

from .browser import chromium, ui_server
from .support import APPROVAL

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "images" / "chat.png"
WAIT_S = 15


def wait(driver: Any, condition: Any) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S, poll_frequency=0.05).until(condition)


def find_all(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, css))


def idle(driver: Any) -> bool:
    return driver.find_element("id", "status").get_attribute("data-state") in ("idle", "pending")


def send(driver: Any, text: str) -> None:
    box = driver.find_element("id", "prompt")
    box.send_keys(text)
    driver.find_element("id", "send").click()


def assistant_texts(driver: Any) -> list[str]:
    return [m.text for m in find_all(driver, ".msg.assistant")]


def test_chat_page_runs_tools_asks_for_approval_and_restores_the_thread() -> None:
    replies = [
        reply.tool_calls(reply.call("get_weather", {"city": "Chennai"}, id="call_w")),
        reply.text("It is sunny in Chennai today, about 31 degrees."),
        reply.tool_calls(
            reply.call("delete_file", {"name": "notes.txt"}, id="call_d"),
            text="I will delete it once you approve.",
        ),
        reply.text("Done: notes.txt is deleted."),
        reply.tool_calls(reply.call("ask_name", {}, id="call_n")),
        reply.text("Saved the report as report.md."),
    ]
    with StubLLMServer(replies) as stub, ui_server(stub.url) as url, chromium() as driver:
        driver.get(url + "/")
        wait(driver, lambda d: d.execute_script("return document.readyState") == "complete")
        assert "#thread=" in driver.current_url

        # 1. a tool call with its arguments and result, then the answer, streamed
        send(driver, "What is the weather in Chennai?")
        wait(driver, lambda d: "31 degrees" in " ".join(assistant_texts(d)) and idle(d))
        card = find_all(driver, '.tool[data-call-id="call_w"]')[0]
        assert "get_weather" in card.text
        args = card.find_element("css selector", ".args").text
        assert json.loads(args) == {"city": "Chennai"}
        assert card.find_element("css selector", ".result").text == "sunny in Chennai"
        assert card.get_attribute("data-state") == "done"
        answer = find_all(driver, ".msg.assistant")[-1]
        assert answer.text == "It is sunny in Chennai today, about 31 degrees."
        assert int(answer.get_attribute("data-deltas")) > 1  # it came in pieces

        # 2. a tool that needs approval: a card; Approve resumes the run
        send(driver, "Now delete notes.txt")
        pending = wait(driver, lambda d: find_all(d, ".pending .approve"))
        assert APPROVAL in find_all(driver, ".pending")[0].text
        waiting = find_all(driver, '.tool[data-call-id="call_d"]')[0]
        assert waiting.get_attribute("data-state") == "waiting"
        if os.environ.get("TOOLNEXUS_SCREENSHOT") == "1":
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(SCREENSHOT))
        pending[0].click()
        wait(driver, lambda d: "notes.txt is deleted" in " ".join(assistant_texts(d)) and idle(d))
        assert waiting.find_element("css selector", ".result").text == "deleted notes.txt"
        assert not find_all(driver, ".pending .approve")

        # 3. an input request: a text field whose answer goes to the tool
        send(driver, "Save the report")
        field = wait(driver, lambda d: find_all(d, ".pending input"))[0]
        field.send_keys("report.md")
        find_all(driver, ".pending .approve")[0].click()
        wait(driver, lambda d: "report.md." in " ".join(assistant_texts(d)) and idle(d))
        named = find_all(driver, '.tool[data-call-id="call_n"] .result')[0]
        assert named.text == "the name is report.md"

        # 4. a reload shows the same thread from the server
        before = driver.current_url
        driver.refresh()
        wait(driver, lambda d: d.execute_script("return document.body.dataset.restored") == "true")
        assert driver.current_url == before
        users = [m.text for m in find_all(driver, ".msg.user")]
        assert users == [
            "What is the weather in Chennai?",
            "Now delete notes.txt",
            "Save the report",
        ]
        assert assistant_texts(driver) == [
            "It is sunny in Chennai today, about 31 degrees.",
            "I will delete it once you approve.",
            "Done: notes.txt is deleted.",
            "Saved the report as report.md.",
        ]
        results = [r.text for r in find_all(driver, ".tool .result")]
        assert results == ["sunny in Chennai", "deleted notes.txt", "the name is report.md"]
        assert not find_all(driver, ".pending")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        stub.assert_consumed()


def test_a_reload_while_waiting_shows_the_pending_card_and_deny_answers_it() -> None:
    replies = [
        reply.tool_calls(reply.call("delete_file", {"name": "a.txt"}, id="call_a")),
        reply.text("Understood, I kept a.txt."),
    ]
    with StubLLMServer(replies) as stub, ui_server(stub.url) as url, chromium() as driver:
        driver.get(url + "/")
        send(driver, "Delete a.txt")
        wait(driver, lambda d: find_all(d, ".pending .deny"))
        driver.refresh()
        deny = wait(driver, lambda d: find_all(d, ".pending .deny"))
        tool = find_all(driver, '.tool[data-call-id="call_a"]')[0]
        assert tool.get_attribute("data-state") == "waiting"
        assert not find_all(driver, ".tool .result")  # the placeholder is not shown as a result
        send(driver, "Something else first")  # refused on the page: the card comes first
        assert driver.find_element("id", "status").text == "answer the card first"
        assert len(stub.requests) == 1
        deny[0].click()
        wait(driver, lambda d: "kept a.txt" in " ".join(assistant_texts(d)) and idle(d))
        result = tool.find_element("css selector", ".result").text
        assert result == f"declined/expired: {APPROVAL}"
        sent = stub.requests[-1].json["messages"][-1]
        assert sent == {"role": "tool", "tool_call_id": "call_a", "content": result}


def test_the_page_asks_once_for_a_token_and_sends_it_as_a_bearer_header() -> None:
    seen: list[str] = []
    with (
        StubLLMServer([reply.text("Signed in.")]) as stub,
        ui_server(stub.url, token="t0k-secret", seen=seen) as url,
        chromium() as driver,
    ):
        driver.get(url + "/")  # the page itself is public
        dialog = driver.find_element("id", "token-dialog")
        wait(driver, lambda d: dialog.is_displayed())  # the thread view answered 401
        driver.find_element("id", "token").send_keys("t0k-secret")
        driver.find_element("id", "token-save").click()
        wait(driver, lambda d: d.execute_script("return document.body.dataset.restored") == "true")
        send(driver, "hello")
        wait(driver, lambda d: "Signed in." in assistant_texts(d) and idle(d))
        driver.refresh()  # the token is kept for the tab: no second question
        wait(driver, lambda d: d.execute_script("return document.body.dataset.restored") == "true")
        assert not driver.find_element("id", "token-dialog").is_displayed()
        assert assistant_texts(driver) == ["Signed in."]
    assert seen
    assert set(seen) == {"Bearer t0k-secret"}

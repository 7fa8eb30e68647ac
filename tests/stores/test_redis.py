"""The Redis store against a real Redis server: conformance, key layout, many processes."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolnexus import ConfigError, ToolnexusError, create_in_process_client
from toolnexus.stores import RedisConversationStore

from .concurrency import resume_from_processes, save_from_processes
from .conformance import TRANSCRIPT, DurableStoreConformance, StoreFactory
from .resume_worker import CONVERSATION
from .services import REDIS_URL, REQUIRED, need

redis_asyncio = pytest.importorskip("redis.asyncio")


@pytest.fixture
def prefix() -> str:
    need(REDIS_URL, 6379, "Redis")
    return f"toolnexus-test:{uuid.uuid4().hex}:"


@pytest.fixture
async def raw(prefix: str) -> AsyncIterator[Any]:
    """A client of our own to look at what the store wrote; cleans the prefix afterwards."""
    client = redis_asyncio.Redis.from_url(REDIS_URL)
    yield client
    keys = [key async for key in client.scan_iter(match=prefix + "*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


class TestRedisStore(DurableStoreConformance):
    @pytest.fixture
    def make_store(self, prefix: str, raw: Any) -> StoreFactory:
        return lambda: RedisConversationStore(REDIS_URL, prefix=prefix)


async def test_a_transcript_is_one_json_string_under_prefix_and_id(prefix: str, raw: Any) -> None:
    store = RedisConversationStore(REDIS_URL, prefix=prefix)
    await store.save("c1", TRANSCRIPT)
    assert await raw.type(prefix + "c1") == b"string"
    assert json.loads(await raw.get(prefix + "c1")) == TRANSCRIPT
    assert await raw.ttl(prefix + "c1") == -1  # no expiry without ttl_seconds
    await store.aclose()


async def test_ttl_seconds_sets_an_expiry_that_every_save_renews(prefix: str, raw: Any) -> None:
    store = RedisConversationStore(REDIS_URL, prefix=prefix, ttl_seconds=100)
    await store.save("c1", TRANSCRIPT)
    await raw.expire(prefix + "c1", 5)
    await store.save("c1", TRANSCRIPT)
    assert 90 < await raw.ttl(prefix + "c1") <= 100
    await raw.pexpire(prefix + "c1", 1)
    while await raw.exists(prefix + "c1"):  # bounded by the 1 ms expiry
        pass
    assert await store.get("c1") is None
    await store.aclose()


@pytest.mark.parametrize("decode", [False, True])
async def test_a_given_client_is_used_as_is_and_left_open(
    prefix: str, raw: Any, decode: bool
) -> None:
    client = redis_asyncio.Redis.from_url(REDIS_URL, decode_responses=decode)
    store = RedisConversationStore(client, prefix=prefix)
    await store.save("c1", TRANSCRIPT)
    assert await store.get("c1") == TRANSCRIPT
    await store.aclose()
    assert await client.ping()  # still usable: the store did not close it
    await client.aclose()


async def test_eight_processes_saving_two_hundred_ids_each_lose_nothing(
    prefix: str, raw: Any
) -> None:
    save_from_processes("redis", REDIS_URL, prefix, processes=8, ids=200)
    store = RedisConversationStore(REDIS_URL, prefix=prefix)
    for worker in range(8):
        for n in range(0, 200, 7):
            assert await store.get(f"w{worker}-{n}") == [
                {"role": "user", "content": f"{worker}/{n}"}
            ]
    assert len([k async for k in raw.scan_iter(match=prefix + "w*", count=1000)]) == 1600
    shared = await store.get("shared")
    assert shared is not None
    assert shared[0]["content"].startswith("worker ")
    await store.aclose()


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="ttl_seconds"):
        RedisConversationStore(REDIS_URL, ttl_seconds=0)
    with pytest.raises(ConfigError, match=r"redis:// URL or a redis\.asyncio\.Redis"):
        RedisConversationStore(42)  # type: ignore[arg-type]


# --- a server of our own, restarted mid-run ----------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class OwnRedis:
    """A redis-server process on a port of its own, which the test may stop and start."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://:s3cret-pass@127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--requirepass",
                "s3cret-pass",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(500):  # bounded: up to ~5 s for the port to open
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.01).close()
                return
            except OSError:
                try:  # waits 10 ms, and notices a server that exited
                    code = self.process.wait(timeout=0.01)
                except subprocess.TimeoutExpired:
                    continue
                raise AssertionError(f"redis-server exited with {code}") from None
        raise AssertionError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    if shutil.which("redis-server") is None:
        if REQUIRED:
            pytest.fail("redis-server is not installed, and TOOLNEXUS_REQUIRE_SERVICES=1 needs it")
        pytest.skip("redis-server is not installed")
    server = OwnRedis()
    server.start()
    yield server
    server.stop()


async def test_a_restarted_server_gives_a_clear_error_then_the_next_save_works(
    own_redis: OwnRedis,
) -> None:
    store = RedisConversationStore(own_redis.url)
    await store.save("c1", TRANSCRIPT)
    own_redis.stop()
    with pytest.raises(ToolnexusError) as caught:
        await store.save("c1", TRANSCRIPT)
    message = str(caught.value)
    assert f"127.0.0.1:{own_redis.port}" in message
    assert "save failed" in message
    assert "s3cret-pass" not in message
    own_redis.start()  # a fresh server: it kept nothing on disk
    await store.save("c1", TRANSCRIPT)
    assert await store.get("c1") == TRANSCRIPT
    await store.aclose()


# --- pending requests across processes, event loops, dropped connections ------------------


async def test_of_four_processes_resuming_one_approval_exactly_one_runs_the_action(
    prefix: str, raw: Any, tmp_path: Path
) -> None:
    calls = tmp_path / "calls"
    outcomes = resume_from_processes("redis", REDIS_URL, prefix, calls, processes=4)
    done = [o for o in outcomes if "status" in o]
    assert done == [{"status": "done", "text": "done: deployed prod"}]
    assert sorted(o.get("error", "") for o in outcomes if "error" in o) == ["ConfigError"] * 3
    assert calls.read_text() == "deploy answered\n"
    store = RedisConversationStore(REDIS_URL, prefix=prefix)
    assert await store.get_pending(CONVERSATION) is None
    await store.aclose()


def test_two_run_sync_calls_on_one_store_each_use_a_client_of_their_own_loop(
    prefix: str, raw: Any
) -> None:
    store = RedisConversationStore(REDIS_URL, prefix=prefix)
    client = create_in_process_client(
        model="local", generate=lambda r: {"content": f"{len(r['messages'])} seen"}, store=store
    )
    first = client.run_sync("one", conversation_id="c1")  # each on a fresh event loop
    second = client.run_sync("two", conversation_id="c1")
    assert (first.text, second.text) == ("1 seen", "3 seen")
    assert [m["content"] for m in second.messages] == ["one", "1 seen", "two", "3 seen"]


async def test_a_given_client_used_from_another_event_loop_is_a_config_error(
    prefix: str, raw: Any
) -> None:
    client = redis_asyncio.Redis.from_url(REDIS_URL)
    store = RedisConversationStore(client, prefix=prefix)
    await store.save("c1", TRANSCRIPT)

    async def elsewhere() -> None:
        with pytest.raises(ConfigError, match="event loop"):
            await store.get("c1")

    await asyncio.to_thread(asyncio.run, elsewhere())
    assert await store.get("c1") == TRANSCRIPT
    await client.aclose()


async def test_connections_the_server_ended_are_replaced_and_the_call_retried_once(
    prefix: str, raw: Any
) -> None:
    name = f"tn-{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in REDIS_URL else "?"
    store = RedisConversationStore(f"{REDIS_URL}{separator}client_name={name}", prefix=prefix)
    async with asyncio.timeout(10):
        await asyncio.gather(*(store.save(f"c{n}", TRANSCRIPT) for n in range(8)))
        for round in range(3):
            ids = [c["id"] for c in await raw.client_list() if c.get("name") == name]
            assert ids
            for client_id in ids:  # as a server restart would, or an idle timeout
                await raw.client_kill_filter(_id=client_id)
            await store.save("c1", [{"role": "user", "content": str(round)}])
            assert await store.get("c1") == [{"role": "user", "content": str(round)}]
    await store.aclose()


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:99999/0", "redis://:pw@127.0.0.1:-1/0", "http://127.0.0.1/0"]
)
def test_a_bad_url_is_a_config_error_naming_the_url_without_its_password(url: str) -> None:
    with pytest.raises(ConfigError, match="bad URL") as caught:
        RedisConversationStore(url)
    assert ":pw@" not in str(caught.value)


async def test_odd_text_is_stored_so_that_other_readers_see_json(prefix: str, raw: Any) -> None:
    store = RedisConversationStore(REDIS_URL, prefix=prefix)
    await store.save("nul", [{"role": "tool", "content": "a\u0000b"}])
    assert json.loads(await raw.get(prefix + "nul")) == [{"role": "tool", "content": "a\u0000b"}]
    await store.save("half", [{"role": "tool", "content": "\ud83d"}])
    stored = json.loads(await raw.get(prefix + "half"))
    assert isinstance(stored, str)  # the escaped form: a JSON string
    assert await store.get("half") == [{"role": "tool", "content": "\ud83d"}]
    await store.aclose()


async def test_a_server_that_accepts_and_never_answers_fails_within_the_timeout() -> None:
    silent = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    loop = asyncio.get_running_loop()
    silent.setblocking(False)
    loop.add_reader(silent.fileno(), lambda: accepted.append(silent.accept()[0]))
    port = silent.getsockname()[1]
    store = RedisConversationStore(f"redis://:pw-789@127.0.0.1:{port}/0", timeout=0.3)
    try:
        started = time.monotonic()
        with pytest.raises(ToolnexusError) as caught:
            async with asyncio.timeout(10):
                await store.get("c1")
        assert time.monotonic() - started < 3
        message = str(caught.value)
        assert f"127.0.0.1:{port}" in message
        assert "Timeout" in message
        assert "pw-789" not in message
        assert accepted  # it did reach the silent server
    finally:
        await store.aclose()
        loop.remove_reader(silent.fileno())
        for conn in accepted:
            conn.close()
        silent.close()

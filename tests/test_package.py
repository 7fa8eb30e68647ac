"""The package surface: what ``import toolnexus`` loads, and what ``dir()`` promises."""

import importlib
import inspect
import re
import subprocess
import sys
import types
from collections.abc import Callable

import pytest

import toolnexus
import toolnexus.testing

_HEAVY = ("aiohttp", "mcp", "yaml", "pydantic", "sqlite3", "httpx", "a2a", "starlette")


def test_importing_toolnexus_loads_no_third_party_sdk_and_no_sqlite() -> None:
    code = (
        "import sys, toolnexus\n"
        f"heavy = {_HEAVY!r}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", [toolnexus, toolnexus.testing])
def test_every_name_dir_lists_is_importable(module: types.ModuleType) -> None:
    name = module.__name__
    public = [n for n in dir(module) if not n.startswith("_")]
    assert set(module.__all__) <= set(dir(module))
    for attr in public:
        assert getattr(module, attr) is not None, f"{name}.{attr}"
        namespace: dict[str, object] = {}
        exec(f"from {name} import {attr}", namespace)
        assert namespace[attr] is getattr(module, attr)


def test_lazily_loaded_names_are_the_real_objects() -> None:
    from toolnexus.stores.sqlite import SqliteConversationStore
    from toolnexus.testing import reply

    assert toolnexus.SqliteConversationStore is SqliteConversationStore
    assert reply is importlib.import_module("toolnexus.testing.reply")
    assert callable(reply.text)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = toolnexus.no_such_name  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = toolnexus.testing.no_such_name


def _undocumented(module: types.ModuleType) -> list[str]:
    missing: list[str] = []
    for name in module.__all__:
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if not inspect.isclass(obj):
            continue
        for attr, value in vars(obj).items():
            if attr.startswith("_"):
                continue
            fn = value.fget if isinstance(value, property) else value
            fn = getattr(fn, "__func__", fn)  # classmethod, staticmethod
            if inspect.isfunction(fn) and not (fn.__doc__ or "").strip():
                missing.append(f"{name}.{attr}")
    return missing


@pytest.mark.parametrize("module", [toolnexus, toolnexus.testing])
def test_every_public_class_function_and_method_has_a_docstring(
    module: types.ModuleType,
) -> None:
    assert _undocumented(module) == []


@pytest.mark.parametrize(
    "function",
    [
        toolnexus.create_client,
        toolnexus.create_in_process_client,
        toolnexus.create_toolkit,
        toolnexus.Client.run,
        toolnexus.Client.stream,
        toolnexus.Client.ask,
    ],
    ids=lambda f: f.__qualname__,
)
def test_the_docstring_names_every_parameter(function: Callable[..., object]) -> None:
    doc = inspect.getdoc(function) or ""
    names = [p for p in inspect.signature(function).parameters if p != "self"]
    assert [n for n in names if not re.search(rf"\b{n}\b", doc)] == []

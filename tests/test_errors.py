"""The exception tree and the public namespace of ``toolnexus``."""

from __future__ import annotations

import inspect

import pytest

import toolnexus
from toolnexus import ConfigError, LLMError, RunCancelled, RunTimeout, ToolnexusError
from toolnexus import errors as errors_module

ERROR_NAMES = [
    "AuthenticationError",
    "ConfigError",
    "LLMError",
    "ModelRetry",
    "RateLimitError",
    "RunCancelled",
    "RunTimeout",
    "ServerError",
    "StreamError",
    "ToolnexusError",
]


def _exception_classes_defined_in_errors() -> list[str]:
    return sorted(
        name
        for name, value in vars(errors_module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == errors_module.__name__
    )


def test_errors_module_defines_exactly_the_exported_exceptions() -> None:
    assert _exception_classes_defined_in_errors() == ERROR_NAMES


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_every_exception_is_exported_from_the_package(name: str) -> None:
    assert name in toolnexus.__all__
    assert getattr(toolnexus, name) is getattr(errors_module, name)


@pytest.mark.parametrize("cls", [LLMError, RunCancelled, RunTimeout, ConfigError])
def test_every_exception_is_a_toolnexus_error(cls: type[Exception]) -> None:
    assert issubclass(cls, ToolnexusError)
    assert issubclass(ToolnexusError, Exception)


def test_run_timeout_is_also_a_timeout_error() -> None:
    with pytest.raises(TimeoutError):
        raise RunTimeout("deadline passed")


def test_config_error_is_also_a_value_error() -> None:
    with pytest.raises(ValueError, match="bad option"):
        raise ConfigError("bad option")


def test_run_cancelled_is_not_a_timeout_or_value_error() -> None:
    assert not issubclass(RunCancelled, (TimeoutError, ValueError))


def test_llm_error_carries_status_and_body() -> None:
    err = LLMError("provider answered 503", status=503, body="overloaded")
    assert (err.status, err.body) == (503, "overloaded")
    assert str(err) == "provider answered 503"


def test_llm_error_status_and_body_default_to_none() -> None:
    err = LLMError("connection reset")
    assert (err.status, err.body) == (None, None)


def test_every_name_in_all_resolves() -> None:
    for name in toolnexus.__all__:
        assert getattr(toolnexus, name) is not None, name


def _isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps: CONSTANTS, then CamelCase classes, then the rest."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def test_all_is_sorted_and_has_no_duplicates() -> None:
    assert toolnexus.__all__ == sorted(toolnexus.__all__, key=_isort_key)
    assert len(set(toolnexus.__all__)) == len(toolnexus.__all__)


def test_star_import_gives_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from toolnexus import *", namespace)
    assert set(toolnexus.__all__) <= namespace.keys()


@pytest.mark.parametrize(
    ("status", "name"),
    [
        (429, "RateLimitError"),
        (401, "AuthenticationError"),
        (403, "AuthenticationError"),
        (500, "ServerError"),
        (503, "ServerError"),
        (529, "ServerError"),
        (400, "LLMError"),
    ],
)
def test_a_provider_status_maps_to_its_llm_error_subclass_keeping_the_status(
    status: int, name: str
) -> None:
    error = errors_module.llm_error_for_status(status, f"HTTP {status}", "body")
    assert type(error).__name__ == name
    assert isinstance(error, LLMError)
    assert (error.status, error.body) == (status, "body")

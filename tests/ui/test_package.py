"""The ``toolnexus.ui`` surface: lazy about ``ag_ui``, documented, and its page files."""

from __future__ import annotations

import inspect
import subprocess
import sys
from importlib import resources

import toolnexus.ui


def test_importing_toolnexus_ui_does_not_import_ag_ui() -> None:
    code = "import sys, toolnexus.ui; print(any(m.startswith('ag_ui') for m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


def test_every_public_name_is_documented() -> None:
    for name in toolnexus.ui.__all__:
        obj = getattr(toolnexus.ui, name)
        if inspect.isfunction(obj):
            assert (obj.__doc__ or "").strip(), name


def test_the_page_files_are_package_data() -> None:
    folder = resources.files("toolnexus.ui") / "static"
    names = sorted(item.name for item in folder.iterdir() if item.is_file())
    assert names == ["chat.css", "chat.js", "icon.svg", "index.html"]

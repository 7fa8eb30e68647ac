"""The npm packages the MCP interop tests run, installed once into ``.cache/npm``.

``python -m tests.npm_packages`` installs them (CI does this once); the test fixtures call
``npm_bin()``, which installs on first use when needed and says why when it cannot.
Re-running is cheap: a stamp file records what the folder holds.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGES = (
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/conformance@0.1.16",
    "@modelcontextprotocol/inspector-cli@1.0.3",
    "node@22.23.3",
)
ROOT = Path(__file__).resolve().parent.parent / ".cache" / "npm"
_STAMP = ROOT / ".installed"


def npm_bin() -> tuple[Path | None, str]:
    """``(bin folder, "")`` once the packages are installed, or ``(None, why not)``."""
    wanted = "\n".join(PACKAGES)
    if _STAMP.exists() and _STAMP.read_text() == wanted:
        return ROOT / "node_modules" / ".bin", ""
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not installed, so the npm MCP servers cannot be installed"
    ROOT.mkdir(parents=True, exist_ok=True)
    with open(ROOT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (_STAMP.exists() and _STAMP.read_text() == wanted):
            done = subprocess.run(
                [npm, "install", "--prefix", str(ROOT), "--no-audit", "--no-fund", *PACKAGES],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0:
                return None, f"npm install failed: {done.stderr.strip()[-500:]}"
            _STAMP.write_text(wanted)
    return ROOT / "node_modules" / ".bin", ""


if __name__ == "__main__":
    folder, why = npm_bin()
    if folder is None:
        print(f"npm packages not installed: {why}", file=sys.stderr)
        sys.exit(0 if shutil.which("npm") is None else 1)
    print(f"npm packages ready in {folder}")

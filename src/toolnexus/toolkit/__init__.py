"""The toolkit: every tool source merged into one ordered, de-duplicated set.

``core`` holds ``Toolkit`` itself, ``create`` loads the configured sources into one
(``create_toolkit``), and ``options`` checks what ``create_toolkit`` is given.
"""

from .core import DEFAULT_MAX_OUTPUT_CHARS, Toolkit, bounded_result
from .create import ToolkitLoad, assemble_tools, create_toolkit

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "Toolkit",
    "ToolkitLoad",
    "assemble_tools",
    "bounded_result",
    "create_toolkit",
]

"""Agent UIs: a run as AG-UI events or as the AI SDK's UI message stream, and the chat page
served by ``tk.serve(addr, client=..., ui={})`` (``toolnexus serve --ui``).

``agui_events`` needs the ``ag-ui-protocol`` package (``pip install 'toolnexus[ui]'``),
imported on first use; ``ai_sdk_stream`` and the thread view need nothing beyond toolnexus.
The page itself (``static/``: plain HTML, CSS and JavaScript) ships inside the package.
"""

from __future__ import annotations

from .agui import AGUI_CONTENT_TYPE, agui_events, agui_input, encode_agui
from .ai_sdk import AI_SDK_HEADERS, ai_sdk_parts, ai_sdk_stream
from .messages import transcript_to_agui

__all__ = [
    "AGUI_CONTENT_TYPE",
    "AI_SDK_HEADERS",
    "agui_events",
    "agui_input",
    "ai_sdk_parts",
    "ai_sdk_stream",
    "encode_agui",
    "transcript_to_agui",
]

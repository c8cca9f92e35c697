"""A tool loop's results as a turn records them: their text, their shape for plan_hydration, the plan."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from components.context_window.tool_results.shapes import parse_result

if TYPE_CHECKING:
    from .llm import Completion


def tool_text(content: Any) -> str:
    """A tool result's text: strings as sent, OpenAI content parts joined, anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    return json.dumps(content, ensure_ascii=False, default=str)


def as_result(tool: str, content: str) -> dict[str, Any]:
    """A tool message as a turn result in a shape plan_hydration distils (a table when the JSON is one)."""
    try:
        data = json.loads(content)
    except ValueError:
        return {"tool": tool, "text": content}
    if isinstance(data, list) and data and all(isinstance(r, Mapping) for r in data):
        data = {"rows": data}
    if isinstance(data, Mapping) and "rows" in data:
        candidate = {**data, "tool": data.get("tool") or tool}
        try:
            parse_result(candidate, 1)
            return candidate
        except ValueError:
            pass
    return {"tool": tool, "text": content}


def plan_of(done: Completion) -> str:
    """The tool calls the model chose, one per line: the plan a later turn can adapt."""
    lines = []
    for call in done.tool_calls:
        function = call.get("function") or {}
        lines.append(f"{function.get('name', '?')}({function.get('arguments') or ''})")
    return "\n".join(lines)

"""tda as a pydantic-ai history processor (``pip install 'tda[pydantic-ai]'``)::

    from pydantic_ai import Agent
    from tda.integrations import Window
    from tda.integrations.pydantic_ai import TDAWindow

    agent = Agent("openai:gpt-4o", capabilities=[TDAWindow(Window("balanced", model="gpt-4o"))])

Before every model request (each step of the tool loop) the run's messages are assembled under the window type and
the model is sent the window: the messages tda kept, in its order, with what its modules added (as system prompts).
The agent's instructions and tool definitions are counted with the window and still sent by pydantic-ai. Parts the
window keeps unchanged are the run's own objects. ``history_processor(window)`` is the same as a plain history
processor (``ProcessHistory``), which is not handed the tools: it does not count them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext, ToolDefinition

from .window import Window, in_own_objects

SOURCE = "pydantic-ai"
Processor = Callable[[list[ModelMessage]], Awaitable[list[ModelMessage]]]
Sent = ModelRequestPart | ModelResponse
"""What one chat message stands for: a request's part, or a whole response."""


@dataclass
class TDAWindow(AbstractCapability[Any]):
    """The history processor as a capability that also counts the request's tool definitions:
    ``Agent(model, capabilities=[TDAWindow(window)])``."""

    window: Window

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        parameters = request_context.model_request_parameters
        tools = [_tool(t) for t in (*parameters.function_tools, *parameters.output_tools)]
        request_context.messages = await assembled(self.window, request_context.messages, tools)
        return request_context


def history_processor(window: Window) -> Processor:
    """A history processor assembling each request's messages under ``window``'s type (tools not counted)."""

    async def assemble(messages: list[ModelMessage]) -> list[ModelMessage]:
        return await assembled(window, messages)

    return assemble


async def assembled(
    window: Window, messages: list[ModelMessage], tools: Sequence[dict[str, Any]] = ()
) -> list[ModelMessage]:
    """``messages`` as the window keeps them: the run's own parts where kept unchanged, new ones where added."""
    instructions = _instructions(messages)
    sent, last = _as_chat(messages)
    chat = [{"role": "system", "content": instructions}] if instructions else []
    window_ = await window.assemble([*chat, *(c for c, _ in sent)], tools, source=SOURCE)
    kept = [m for m in window_.messages if not (instructions and m == chat[0])]  # pydantic-ai sends those itself
    names = {p.tool_call_id: p.tool_name for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
    groups = in_own_objects(kept, sent, lambda m: [_from_chat(m, names)])
    return _grouped([*(item for group in groups for item in group), *last], instructions)


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    function = {"name": tool.name, "description": tool.description or "", "parameters": tool.parameters_json_schema}
    return {"type": "function", "function": function}


def _instructions(messages: Sequence[ModelMessage]) -> str | None:
    last = next((m for m in reversed(messages) if isinstance(m, ModelRequest)), None)
    return last.instructions if last is not None else None


def _as_chat(messages: Sequence[ModelMessage]) -> tuple[list[tuple[dict[str, Any], list[Sent]]], list[Sent]]:
    """Each request part and each response as an OpenAI chat message, with what it came from; and the parts with
    no chat message of their own (a tool-availability marker, speech), which go with the next one that has one
    (the last of them, returned, at the end)."""
    out: list[tuple[dict[str, Any], list[Sent]]] = []
    riders: list[Sent] = []
    for message in messages:
        items: Sequence[Sent] = [message] if isinstance(message, ModelResponse) else message.parts
        for item in items:
            chat = _response_chat(item) if isinstance(item, ModelResponse) else _part_chat(item)
            if chat is None:
                riders.append(item)
            else:
                out.append((chat, [*riders, item]))
                riders = []
    return out, riders


def _part_chat(part: ModelRequestPart) -> dict[str, Any] | None:
    if isinstance(part, SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, UserPromptPart):
        content = part.content
        text = content if isinstance(content, str) else "\n".join(c for c in content if isinstance(c, str))
        return {"role": "user", "content": text}
    if isinstance(part, ToolReturnPart):
        return {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response_str()}
    if isinstance(part, RetryPromptPart):
        if part.tool_name is not None:
            return {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response()}
        return {"role": "user", "content": part.model_response()}
    return None


def _response_chat(response: ModelResponse) -> dict[str, Any]:
    text = "\n\n".join(p.content for p in response.parts if isinstance(p, TextPart))
    calls = [
        {"id": p.tool_call_id, "type": "function", "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
        for p in response.parts
        if isinstance(p, ToolCallPart)
    ]
    return {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}


def _from_chat(message: dict[str, Any], tool_names: dict[str, str]) -> Sent:
    """A message a module added (or changed: a cleared tool result) as pydantic-ai's part."""
    role, content = message["role"], message["content"]
    text = content if isinstance(content, str) else "\n".join(str(p.get("text", "")) for p in content)
    if role == "system":
        return SystemPromptPart(text)
    if role == "user":
        return UserPromptPart(text)
    if role == "tool":
        call_id = message["tool_call_id"]
        return ToolReturnPart(tool_name=tool_names.get(call_id, ""), content=text, tool_call_id=call_id)
    calls = [
        ToolCallPart(c["function"]["name"], c["function"]["arguments"], tool_call_id=c["id"])
        for c in message.get("tool_calls", ())
    ]
    return ModelResponse(parts=[*([TextPart(text)] if text else []), *calls])


def _grouped(parts: Sequence[Sent], instructions: str | None) -> list[ModelMessage]:
    """Consecutive request parts as one request, the last one carrying the run's instructions."""
    out: list[ModelMessage] = []
    pending: list[ModelRequestPart] = []
    for item in parts:
        if isinstance(item, ModelResponse):
            if pending:
                out.append(ModelRequest(parts=pending))
                pending = []
            out.append(item)
        else:
            pending.append(item)
    if pending:
        out.append(ModelRequest(parts=pending, instructions=instructions))
    return out

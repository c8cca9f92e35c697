"""tda as an OpenAI Agents SDK ``Session`` (``pip install 'tda[openai-agents]'``)::

    from agents import Agent, Runner
    from tda.integrations import Window
    from tda.integrations.openai_agents import TDASession

    session = TDASession("user-42", Window("balanced", model="gpt-4o"))
    result = await Runner.run(Agent(name="Assistant"), "Where is order 7?", session=session)

The session keeps every item (in an SDK session of its own: ``SQLiteSession`` in memory unless ``store`` is given)
and hands the runner its history as the window type assembles it for the newest user message: what the window
keeps, in its order, with what its modules added (as system messages). The runner adds the new input after it.
With ``RunConfig(call_model_input_filter=session.filter)`` every model call is assembled too, new input, agent
instructions and tool loop included. Items the window keeps unchanged are the session's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents import FunctionTool, RunContextWrapper, SQLiteSession
from agents.items import TResponseInputItem
from agents.memory import Session, SessionABC
from agents.models.chatcmpl_converter import Converter
from agents.run_config import CallModelData, ModelInputData

from .window import Window, in_own_objects

SOURCE = "openai-agents"


class TDASession(SessionABC):
    """A session whose history is read through ``window``."""

    def __init__(self, session_id: str, window: Window, store: Session | None = None) -> None:
        self.session_id = session_id
        self.window = window
        self.store = store if store is not None else SQLiteSession(session_id)
        self.session_settings = self.store.session_settings

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The stored history as the window keeps it (the ``limit`` newest items are read first, when given)."""
        items = await self.store.get_items(limit)
        if not any(_role(item) == "user" for item in items):
            return items  # nothing asked yet: there is no query to assemble a window for
        return await assembled(self.window, items)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await self.store.add_items(items)

    async def pop_item(self) -> TResponseInputItem | None:
        return await self.store.pop_item()

    async def clear_session(self) -> None:
        await self.store.clear_session()

    async def filter(self, data: CallModelData[Any]) -> ModelInputData:
        """``RunConfig.call_model_input_filter``: each model call's whole input assembled, its instructions
        counted with it (and still sent as instructions)."""
        given = data.model_data
        system = [{"role": "system", "content": given.instructions}] if given.instructions else []
        every = await data.agent.get_all_tools(RunContextWrapper(data.context))
        tools = [_tool(t) for t in every if isinstance(t, FunctionTool)]  # hosted tools are the provider's
        return ModelInputData(await assembled(self.window, given.input, tools, system), given.instructions)


async def assembled(
    window: Window,
    items: Sequence[TResponseInputItem],
    tools: Sequence[dict[str, Any]] = (),
    instructions: Sequence[dict[str, Any]] = (),
) -> list[TResponseInputItem]:
    """``items`` as the window keeps them: the session's own items where kept unchanged, new ones where added."""
    sent: list[tuple[dict[str, Any], list[TResponseInputItem]]] = []
    riders: list[TResponseInputItem] = []  # items with no chat message (reasoning) go with the next that has one
    for item in items:
        chat = Converter.items_to_messages([item])
        if not chat:
            riders.append(item)
            continue
        sent.extend((dict(m), [*riders, item] if i == 0 else []) for i, m in enumerate(chat))
        riders = []
    window_ = await window.assemble([*instructions, *(c for c, _ in sent)], tools, source=SOURCE)
    kept = window_.messages[len(instructions) :] if instructions else window_.messages
    groups = in_own_objects(kept, sent, _items)
    return [item for group in groups for item in group] + riders


def _role(item: TResponseInputItem) -> str | None:
    role = item.get("role") if isinstance(item, dict) else getattr(item, "role", None)
    return role if isinstance(role, str) else None


def _items(message: dict[str, Any]) -> list[TResponseInputItem]:
    """A message a module added (or changed) as Responses input items."""
    content = message.get("content")
    text = content if isinstance(content, str) else "\n".join(str(p.get("text", "")) for p in content or ())
    if message["role"] == "tool":
        return [{"type": "function_call_output", "call_id": message["tool_call_id"], "output": text}]
    calls: list[TResponseInputItem] = [
        {
            "type": "function_call",
            "call_id": c["id"],
            "name": c["function"]["name"],
            "arguments": c["function"]["arguments"],
        }
        for c in message.get("tool_calls", ())
    ]
    said: list[TResponseInputItem] = [{"role": message["role"], "content": text}] if text or not calls else []
    return [*said, *calls]


def _tool(tool: FunctionTool) -> dict[str, Any]:
    function = {"name": tool.name, "description": tool.description or "", "parameters": tool.params_json_schema}
    return {"type": "function", "function": function}

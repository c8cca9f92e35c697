"""tda as LangChain v1 agent middleware (``pip install 'tda[langchain]'``)::

    from langchain.agents import create_agent
    from tda.integrations import Window
    from tda.integrations.langchain import TDAMiddleware

    agent = create_agent(model, tools, middleware=[TDAMiddleware(Window("balanced", model="gpt-4o"))])

Before every model call (each step of the tool loop) the agent's system message, messages and tools are assembled
under the window type, and the model is sent the window instead: the messages tda kept, in its order, with what its
modules added. Messages the window keeps unchanged are the agent's own objects (ids and metadata kept).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, cast

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.utils.function_calling import convert_to_openai_tool

from .window import Window, in_own_objects

SOURCE = "langchain"


class TDAMiddleware(AgentMiddleware):
    """Assembles each model request under ``window``'s type (``agent.invoke`` and ``agent.ainvoke`` alike)."""

    def __init__(self, window: Window) -> None:
        super().__init__()
        self.window = window

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(await self.assembled(request))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        return handler(asyncio.run(self.assembled(request)))  # a sync agent runs no event loop of its own

    async def assembled(self, request: ModelRequest) -> ModelRequest:
        """The request with the assembled window as its messages (system messages included, in place)."""
        sent = [*([request.system_message] if request.system_message else []), *request.messages]
        chat = convert_to_openai_messages(sent)
        tools = [convert_to_openai_tool(t) for t in request.tools]
        window = await self.window.assemble(chat, tools, source=SOURCE)
        messages = in_own_objects(window.messages, list(zip(chat, sent, strict=True)), _message)
        return request.override(system_message=None, messages=messages)


def _message(chat: dict[str, Any]) -> AnyMessage:
    return cast(AnyMessage, convert_to_messages([chat])[0])

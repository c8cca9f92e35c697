"""tda inside a LangChain v1 agent: each model call is assembled under a window type, in process, no server.

    python examples/langchain_agent.py                      # prints what the model was sent
    python examples/langchain_agent.py --report http://127.0.0.1:8000 --token $TDA_TOKEN --session demo

The model is scripted (LangChain's GenericFakeChatModel: no network, no key); put your own chat model in its place.
With --report each window also goes to a tda server, to the session's trace and live panel (create the session
there first: POST /v1/sessions).
"""

from __future__ import annotations

import argparse
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool

from tda.integrations import Reporter, Window
from tda.integrations.langchain import TDAMiddleware


class ScriptedModel(GenericFakeChatModel):
    """Calls the tool, then answers; keeps what it was sent."""

    sent: list[list[BaseMessage]] = []  # noqa: RUF012 (a pydantic field: each model gets its own list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.sent.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


@tool
def order_status(order: int) -> str:
    """Where an order is."""
    return f"order {order} left the warehouse on Monday"


def conversation() -> list[dict[str, str]]:
    """A long earlier conversation, then the question."""
    earlier = [
        message
        for n in range(40)
        for message in (
            {"role": "user", "content": f"Tell me about invoice {n}. " + "It was about shipping fees. " * 12},
            {"role": "assistant", "content": f"Invoice {n} is paid. " + "The fee was refunded in full. " * 12},
        )
    ]
    return [*earlier, {"role": "user", "content": "Where is order 7?"}]


def run(report: Reporter | None = None) -> tuple[str, ScriptedModel, Window]:
    window = Window("balanced", model="gpt-4o", model_limit=4_000, report=report)
    call = {"id": "call_1", "name": "order_status", "args": {"order": 7}}
    model = ScriptedModel(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("Order 7 left on Monday.")]))
    agent = create_agent(model, [order_status], system_prompt="Answer briefly.", middleware=[TDAMiddleware(window)])
    result = agent.invoke({"messages": conversation()})
    return result["messages"][-1].content, model, window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", metavar="URL", help="a tda server to report each window to")
    parser.add_argument("--token", help="an admin token of that server")
    parser.add_argument("--session", default="langchain-example", help="the server's session to report to")
    args = parser.parse_args()
    reporter = Reporter(args.report, args.token or "", args.session) if args.report else None
    answer, model, window = run(reporter)
    for n, sent in enumerate(model.sent, 1):
        print(f"model call {n}: {len(sent)} of the agent's {len(conversation()) + 2 * (n - 1) + 1} messages")
    assert window.last is not None
    print(window.last.snapshot.summary())
    print(answer)


if __name__ == "__main__":
    main()

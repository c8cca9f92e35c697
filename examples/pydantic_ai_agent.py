"""tda inside a pydantic-ai agent: each model request is assembled under a window type, in process, no server.

    python examples/pydantic_ai_agent.py                    # prints what the model was sent
    python examples/pydantic_ai_agent.py --report http://127.0.0.1:8000 --token $TDA_TOKEN --session demo

The model is scripted (pydantic-ai's FunctionModel: no network, no key); put your own model in its place. With
--report each window also goes to a tda server, to the session's trace and live panel (create the session there
first: POST /v1/sessions).
"""

from __future__ import annotations

import argparse
import asyncio

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tda.integrations import Reporter, Window
from tda.integrations.pydantic_ai import TDAWindow


class ScriptedModel:
    """Calls the tool, then answers; keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: list[list[ModelMessage]] = []

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.sent.append(list(messages))
        if len(self.sent) == 1:
            return ModelResponse(parts=[ToolCallPart("order_status", {"order": 7}, tool_call_id="call_1")])
        return ModelResponse(parts=[TextPart("Order 7 left on Monday.")])


def order_status(order: int) -> str:
    """Where an order is."""
    return f"order {order} left the warehouse on Monday"


def history() -> list[ModelMessage]:
    """A long earlier conversation."""
    return [
        message
        for n in range(40)
        for message in (
            ModelRequest(parts=[UserPromptPart(f"Tell me about invoice {n}. " + "It was about shipping fees. " * 12)]),
            ModelResponse(parts=[TextPart(f"Invoice {n} is paid. " + "The fee was refunded in full. " * 12)]),
        )
    ]


async def run(report: Reporter | None = None) -> tuple[str, ScriptedModel, Window]:
    window = Window("balanced", model="gpt-4o", model_limit=4_000, report=report)
    model = ScriptedModel()
    agent = Agent(FunctionModel(model.respond), instructions="Answer briefly.", capabilities=[TDAWindow(window)])
    agent.tool_plain(order_status)
    result = await agent.run("Where is order 7?", message_history=history())
    return result.output, model, window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", metavar="URL", help="a tda server to report each window to")
    parser.add_argument("--token", help="an admin token of that server")
    parser.add_argument("--session", default="pydantic-ai-example", help="the server's session to report to")
    args = parser.parse_args()
    reporter = Reporter(args.report, args.token or "", args.session) if args.report else None
    answer, model, window = asyncio.run(run(reporter))
    for n, sent in enumerate(model.sent, 1):
        print(f"model request {n}: {len(sent)} of the run's {len(history()) + 2 * n - 1} messages")
    assert window.last is not None
    print(window.last.snapshot.summary())
    print(answer)


if __name__ == "__main__":
    main()

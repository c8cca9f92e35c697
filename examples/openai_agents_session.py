"""tda inside the OpenAI Agents SDK: a Session whose history, and each model call, the window type assembles.

    python examples/openai_agents_session.py                # prints what the model was sent
    python examples/openai_agents_session.py --report http://127.0.0.1:8000 --token $TDA_TOKEN --session demo

The model is scripted (a Model of our own: no network, no key); put your own model in its place. With --report each
window also goes to a tda server, to the session's trace and live panel (create the session there first:
POST /v1/sessions).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse, TResponseInputItem
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from tda.integrations import Reporter, Window
from tda.integrations.openai_agents import TDASession


class ScriptedModel(Model):
    """Calls the tool, then answers; keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: list[list[TResponseInputItem]] = []

    async def get_response(self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any) -> Any:
        self.sent.append([{"role": "user", "content": input}] if isinstance(input, str) else list(input))
        if len(self.sent) == 1:
            call = ResponseFunctionToolCall(
                type="function_call", call_id="call_1", name="order_status", arguments='{"order": 7}'
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text="Order 7 left on Monday.", annotations=[])
        said = ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[said], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this example's model does not stream")


@function_tool
def order_status(order: int) -> str:
    """Where an order is."""
    return f"order {order} left the warehouse on Monday"


def history() -> list[TResponseInputItem]:
    """A long earlier conversation, as an earlier run would have stored it."""
    return [
        message
        for n in range(40)
        for message in (
            {"role": "user", "content": f"Tell me about invoice {n}. " + "It was about shipping fees. " * 12},
            {"role": "assistant", "content": f"Invoice {n} is paid. " + "The fee was refunded in full. " * 12},
        )
    ]


async def run(report: Reporter | None = None) -> tuple[str, ScriptedModel, Window]:
    set_tracing_disabled(True)  # the SDK would send its traces to OpenAI
    window = Window("balanced", model="gpt-4o", model_limit=4_000, report=report)
    session = TDASession("user-42", window)
    await session.add_items(history())
    model = ScriptedModel()
    agent = Agent(name="Assistant", instructions="Answer briefly.", model=model, tools=[order_status])
    config = RunConfig(call_model_input_filter=session.filter)  # each call too, not only the history
    result = await Runner.run(agent, "Where is order 7?", session=session, run_config=config)
    return str(result.final_output), model, window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", metavar="URL", help="a tda server to report each window to")
    parser.add_argument("--token", help="an admin token of that server")
    parser.add_argument("--session", default="openai-agents-example", help="the server's session to report to")
    args = parser.parse_args()
    reporter = Reporter(args.report, args.token or "", args.session) if args.report else None
    answer, model, window = asyncio.run(run(reporter))
    for n, sent in enumerate(model.sent, 1):
        print(f"model call {n}: {len(sent)} of the session's {len(history()) + 2 * n - 1} items")
    assert window.last is not None
    print(window.last.snapshot.summary())
    print(answer)


if __name__ == "__main__":
    main()

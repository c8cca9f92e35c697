"""Cost bench (`make bench`): what a long chat sends, what a provider's prompt cache would reuse, and the dollars,
with history sliding every turn and with cache-aware trimming (conversation_history's ``cache_block``).

Workload (issue 23): one 200-turn session of the Conversation First type under a 16,000-token limit; questions of
~40-110 tokens and answers of ~80-240 tokens (seeded), a fixed system prompt. Each turn's window is assembled by the
handler with the built-in modules; the answer joins the history for the next turn.

Simulated caching, per turn, from the exact messages sent (compared with the previous turn's, byte for byte):
* automatic (OpenAI, Gemini): the byte-stable prefix is reused when it is at least 1,024 tokens, in whole 128-token
  steps past that (OpenAI's documented rule; applied to Gemini's implicit caching alike);
* explicit (Anthropic, breakpoints as tda marks them): the previous turn wrote its stable part (system text and
  history); this turn reads it when its own prefix still holds all of it, and writes the rest of its stable part.
Prices are litellm's cost map (input, cached input, cache write, output per token). Tokens are counted with tda's
estimator for gpt-4o (o200k) for every model: the comparison between trimmings is what matters.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from components.context_window.base import AssemblyContext, Message, Profile, Session, TurnRecord
from components.context_window.handler import ContextWindowHandler
from components.context_window.token_estimator import estimator_for
from tda.builtins import DEFAULT_TYPES, module_registry
from tda.config import offline_library_defaults

TURNS = 200
LIMIT = 16_000
MODELS = ("gpt-4o", "claude-sonnet-4-5", "gemini/gemini-2.5-pro")
EXPLICIT = {"anthropic"}
MIN_CACHED, CACHE_STEP = 1024, 128
SYSTEM = "You are a support assistant for an online shop. Answer from the order history; say when you do not know."
_WORDS = (
    "order shipping invoice warehouse delivery status refund account payment label carrier customer return "
    "address parcel tracking discount coupon subscription cancel receipt product stock size colour week"
).split()


@dataclass
class Turn:
    sent: int
    stable_prefix: int
    stable_part: int
    output: int


def _text(rng: random.Random, label: str, words: int) -> str:
    return f"{label} " + " ".join(rng.choice(_WORDS) for _ in range(words)) + "."


async def session(cache_block: int | str, agent: bool = False, **options: int) -> list[Turn]:
    """The 200 turns' figures with conversation_history's ``cache_block`` set as given (0: sliding) and its other
    ``options`` (clearing old tool results). ``agent``: every turn also calls a tool whose result (~350-700 tokens
    of order lines) joins the history with the call."""
    base = DEFAULT_TYPES["conversation_first"]
    slots = dict(base.modules)
    history = slots["conversation_history"]
    slots["conversation_history"] = history.model_copy(
        update={"config": {**history.config, "cache_block": cache_block, **options}}
    )
    wtype = base.model_copy(update={"modules": slots})
    handler = ContextWindowHandler(module_registry(entry_point_group=None).load())
    tokens = estimator_for("gpt-4o")
    rng = random.Random(23)
    messages: list[Message] = []
    previous: list[str] = []
    turns: list[Turn] = []
    for n in range(1, TURNS + 1):
        query = _text(rng, f"Question {n}:", rng.randint(35, 100))
        ctx = AssemblyContext(
            query=query,
            profile=Profile("shop", "llm_only", system_prompt=SYSTEM),
            session=Session("bench", messages=list(messages), turns=[TurnRecord(i, "") for i in range(1, n)]),
            model="gpt-4o",
            model_limit=LIMIT,
        )
        window = await handler.assemble(ctx, wtype)
        sent = [json.dumps(m, sort_keys=True) for m in window.messages]
        same = next(
            (i for i, (a, b) in enumerate(zip(sent, previous, strict=False)) if a != b), min(len(sent), len(previous))
        )
        count = lambda chats: sum(tokens.count_message(Message.from_chat(m)) for m in chats)  # noqa: E731
        answer = _text(rng, f"Answer {n}:", rng.randint(70, 220))
        exchange = _tool_exchange(rng, n) if agent else []
        turns.append(
            Turn(
                sent=window.snapshot.total_used,
                stable_prefix=count(window.messages[:same]),
                stable_part=count(window.messages[: window.stable_messages]),
                output=tokens.count(answer),
            )
        )
        previous = sent
        messages += [Message("user", query, turn=n), *exchange, Message("assistant", answer, turn=n)]
    return turns


def _tool_exchange(rng: random.Random, turn: int) -> list[Message]:
    """An assistant call to search_orders and its result: 30-60 lines of orders."""
    call = {"id": f"call_{turn}", "type": "function", "function": {"name": "search_orders", "arguments": "{}"}}
    lines = [_text(rng, f"order {turn * 100 + i}:", 8) for i in range(rng.randint(30, 60))]
    return [
        Message("assistant", "", turn=turn, tool_calls=(call,)),
        Message("tool", "\n".join(lines), turn=turn, tool_call_id=f"call_{turn}"),
    ]


def automatic_reuse(prefix: int) -> int:
    return 0 if prefix < MIN_CACHED else MIN_CACHED + (prefix - MIN_CACHED) // CACHE_STEP * CACHE_STEP


def costs(model: str, turns: list[Turn]) -> dict[str, float]:
    import litellm

    info = litellm.get_model_info(model)
    explicit = info.get("litellm_provider") in EXPLICIT
    price_in, price_out = info["input_cost_per_token"], info["output_cost_per_token"]
    price_read = info.get("cache_read_input_token_cost") or price_in
    price_write = info.get("cache_creation_input_token_cost") or price_in
    read = written = 0
    cached_dollars = 0.0
    written_before = 0
    for turn in turns:
        if explicit:
            hit = written_before if written_before >= MIN_CACHED and turn.stable_prefix >= written_before else 0
            write = turn.stable_part - hit if turn.stable_part >= MIN_CACHED else 0
            written_before = turn.stable_part if write or hit else 0
        else:
            hit, write = automatic_reuse(turn.stable_prefix), 0
        read, written = read + hit, written + write
        fresh = turn.sent - hit - write
        cached_dollars += fresh * price_in + hit * price_read + write * price_write + turn.output * price_out
    sent = sum(t.sent for t in turns)
    output = sum(t.output for t in turns)
    return {
        "sent": sent,
        "reused": read,
        "written": written,
        "list": sent * price_in + output * price_out,
        "cached": cached_dollars,
        "prices": (price_in, price_read, price_write if explicit else None, price_out),
    }


def _per_million(price: float | None) -> str:
    return "-" if price is None else f"{price * 1e6:.2f}"


async def main() -> None:
    offline_library_defaults()
    runs = {
        "sliding (cache_block 0)": await session(0),
        "cache blocks of 6": await session(6),
        "cache blocks (auto, the default)": await session("auto"),
    }
    print(f"Cost bench: {TURNS} turns, Conversation First, {LIMIT:,}-token limit\n")
    print("| model | $/M in | $/M cached | $/M write | $/M out |")
    print("|---|---:|---:|---:|---:|")
    for model in MODELS:
        prices = costs(model, next(iter(runs.values())))["prices"]
        print(f"| {model} | " + " | ".join(_per_million(p) for p in prices) + " |")
    print("\n| model | trimming | tokens sent | reused from cache | reused | $ without cache | $ with cache |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for model in MODELS:
        for label, turns in runs.items():
            c = costs(model, turns)
            share = c["reused"] / c["sent"]
            print(
                f"| {model} | {label} | {c['sent']:,} | {c['reused']:,} | {share:.0%} | "
                f"{c['list']:.2f} | {c['cached']:.2f} |"
            )
    for label, turns in runs.items():
        history = sum(t.stable_part for t in turns) / len(turns)
        print(f"\n{label}: mean stable part (system + history) {history:,.0f} tokens a turn")
    await agent_runs()


async def agent_runs() -> None:
    """An agent's session (a tool call with a ~350-700-token result every turn): old results kept whole, against
    results cleared after 4 or 2 turns (in batches) and results over 300 tokens cleared, all with auto cache blocks
    and without recall of older history (``recall_pct`` 0: it refills the window with older units, results whole)."""
    runs = {
        "results kept whole": await session("auto", agent=True, recall_pct=0),
        "cleared after 4 turns": await session("auto", agent=True, recall_pct=0, clear_tool_results_after_turns=4),
        "cleared after 2 turns": await session("auto", agent=True, recall_pct=0, clear_tool_results_after_turns=2),
        "cleared over 300 tokens": await session("auto", agent=True, recall_pct=0, clear_tool_results_over_tokens=300),
    }
    print(f"\nAgent session: {TURNS} turns with a tool result each, gpt-4o prices, recall_pct 0\n")
    print("| old tool results | tokens sent | reused from cache | reused | $ without cache | $ with cache |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, turns in runs.items():
        c = costs("gpt-4o", turns)
        share = c["reused"] / c["sent"]
        print(f"| {label} | {c['sent']:,} | {c['reused']:,} | {share:.0%} | {c['list']:.2f} | {c['cached']:.2f} |")


if __name__ == "__main__":
    asyncio.run(main())

"""Window digests: every window a set of the benches' histories gets, one line each, to compare two checkouts byte for
byte (a change meant to be faster only). Run it in each and diff: ``python bench/window_digests.py > a.tsv``.

Histories: the in-process conversation (bench/in_process_bench.py) at 200 / 2,000 / 10,000 messages and 4K / 16K /
128K, cold and four turns later; the assembly bench's (bench/assembly_bench.py) at 8K / 16K / 128K, four turns; the
recall bench's chats (one per style) and two varied chats at 4K / 8K / 16K under Balanced and Conversation First, 12
questions each, by words and with the hashing embedder's vectors made first. Each line: what was assembled, a digest of
the messages sent and the tokens used, and (``--full``) that JSON itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import assembly_bench, in_process_bench
from bench.recall_data import chats
from bench.varied_chats import varied_conversations
from components.context_window import token_estimator
from components.context_window.base import AssemblyContext, Message, Profile, Session
from components.context_window.handler import ContextWindowHandler
from components.context_window.recall.messages import SessionRecall
from tda.builtins import DEFAULT_TYPES, module_registry
from tda.integrations import Window
from tda.integrations.window import split
from tda.knowledge.embeddings import Embedder

FULL = "--full" in sys.argv


def show(what: str, result: Any) -> None:
    sent = json.dumps({"messages": result.messages, "used": result.snapshot.total_used}, sort_keys=True, default=str)
    print(f"{what}\t{hashlib.sha256(sent.encode()).hexdigest()[:16]}" + (f"\t{sent}" if FULL else ""))


def fresh_window(type_id: str, limit: int) -> Window:
    """A window as a library user's first: its own modules, no token counts kept from before."""
    token_estimator._estimators.clear()
    return Window(type_id, model="gpt-4o", model_limit=limit, registry=module_registry().load())


async def conversations() -> None:
    for exchanges in (98, 998, 4_998):
        for limit in (4_000, 16_000, 128_000):
            window = fresh_window("balanced", limit)
            messages = in_process_bench.conversation(exchanges)
            show(f"window {exchanges} {limit} cold", await window.assemble(messages, in_process_bench.TOOLS))
            for n in range(4):
                answer = {"role": "assistant", "content": f"Invoice {n} is paid."}
                question = {"role": "user", "content": f"And invoice {n * 977}? What about shipping?"}
                messages = [*messages, answer, question]
                show(f"window {exchanges} {limit} turn {n}", await window.assemble(messages, in_process_bench.TOOLS))


async def assembly_histories() -> None:
    for size in (200, 2_000, 10_000):
        base = assembly_bench.workload(size)
        for limit in (8_000, 16_000, 128_000):
            token_estimator._estimators.clear()
            handler = ContextWindowHandler(module_registry().load())
            messages = list(base.session.messages)
            for n in range(4):
                if n:
                    messages.append(Message("user", f"{assembly_bench.follow_up(n)} regions {n}", turn=10**6 + n))
                fresh = [dataclasses.replace(m) for m in messages]
                session = Session("bench", messages=fresh, turns=base.session.turns)
                ctx = dataclasses.replace(base, session=session, model_limit=limit)
                show(f"handler {size} {limit} turn {n}", await handler.assemble(ctx, DEFAULT_TYPES["balanced"]))


async def chats_asked(embedder: Any) -> None:
    data = [(name, chat.messages, [q.text for q in chat.questions]) for name, chat in chats(1)]
    data += [(c.name, c.messages, [q.text for q in c.questions]) for c in varied_conversations(2)]
    for name, messages, questions in data:
        history = [{k: m[k] for k in ("role", "content", "name") if m.get(k)} for m in messages]
        for limit in (4_000, 8_000, 16_000):
            for type_id in ("balanced", "conversation_first"):
                window = fresh_window(type_id, limit)
                recall = SessionRecall(embedder) if embedder is not None else None
                for i, question in enumerate(questions[:12]):
                    asked = [*history, {"role": "user", "content": question}]
                    what = f"chat {name} {limit} {type_id} q{i}" + (" vectors" if recall else "")
                    if recall is None:
                        show(what, await window.assemble(asked))
                    else:
                        show(what, await with_vectors(window, recall, asked, limit, embedder))


async def with_vectors(
    window: Window, recall: SessionRecall, asked: Sequence[dict[str, Any]], limit: int, embedder: Any
) -> Any:
    """The window with recall's vectors made first (as ``tda assemble`` does): a ``Window`` takes no embedder."""
    instructions, history, query, loop = split([Message.from_chat(m) for m in asked])
    session = Session("", messages=history)
    await recall.sync(session, dense=True)
    ctx = AssemblyContext(
        query=query.content,
        query_message=query,
        instructions=instructions,
        continuation=loop,
        profile=Profile("library", "tool_enabled"),
        session=session,
        model="gpt-4o",
        model_limit=limit,
        embedder=embedder,
        history_recall=recall,
    )
    assert window.registry is not None and not isinstance(window.window_type, str)
    return await ContextWindowHandler(window.registry).assemble(ctx, window.window_type)


async def main() -> None:
    await conversations()
    await assembly_histories()
    await chats_asked(None)
    await chats_asked(Embedder("hashing"))


if __name__ == "__main__":
    asyncio.run(main())

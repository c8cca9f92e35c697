"""Window digests: every window a set of the benches' histories gets, one line each, to compare two checkouts byte for
byte (a change meant to be faster only). Run it in each and diff: ``python bench/window_digests.py > a.tsv``.

Histories: the in-process conversation (bench/in_process_bench.py) at 200 / 2,000 / 10,000 messages and 4K / 16K /
128K, cold and four turns later; the assembly bench's (bench/assembly_bench.py) at 8K / 16K / 128K, four turns; the
recall bench's chats (one per style) and two varied chats at 4K / 8K / 16K under Balanced and Conversation First, 12
questions each, by words and with the hashing embedder's vectors made first. Each line: what was assembled, a digest of
the messages sent and the tokens used, any time limit the window met (``met_limits``), and (``--full``) that JSON.

The same work, not the same clock: the service's time limits (a module's timeout, 2 s; the history module's wait for
recall's index of a history met for the first time, 1.5 s; recall's wait for a vectors job, 1 s) protect a turn, and
on a loaded machine (load 10-20 on 2 cores) a window that takes 2-250 ms now and then meets one and comes out
different: the same code then gave 2-9 of 801 windows another digest from run to run (docs/benchmarks.md,
"Window digests"). So every limit is raised out of reach here (``SAME_WORK_S``), and a limit a window still met is named
on its line: a digest that differs says why. ``--service-limits`` keeps the service's own limits (what a loaded machine
does to them).
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
from components.context_window.handler import DEFAULT_TIMEOUT_S, ContextWindowHandler
from components.context_window.recall.messages import VECTORS_WAIT_S, SessionRecall
from tda.builtins import DEFAULT_TYPES, module_registry
from tda.integrations import Window
from tda.integrations.window import split
from tda.knowledge.embeddings import Embedder

FULL = "--full" in sys.argv
SERVICE_LIMITS = "--service-limits" in sys.argv
SAME_WORK_S = 3_600.0
"""Every time limit of the windows (a module's timeout, the waits for recall's index and vectors): out of reach."""


def met_limits(snapshot: Any) -> list[str]:
    """The time limits this window met: a module past its timeout (its part discarded), recall not waited for (the
    newest turns sent instead), vectors not ready (ranked by words)."""
    met = [f"{m.module_id} {m.status}" for m in snapshot.modules if m.status in ("timeout", "failed")]
    for m in snapshot.modules:
        if str(m.metadata.get("recall_reason", "")).startswith("recall is still indexing"):
            met.append(f"{m.module_id} recall still indexing")
        if m.metadata.get("recall_vectors_pending"):
            met.append(f"{m.module_id} vectors pending {m.metadata['recall_vectors_pending']}")
    return met


def limit_s(seconds: float) -> float:
    """``seconds`` (the service's limit) with ``--service-limits``, else out of reach."""
    return seconds if SERVICE_LIMITS else SAME_WORK_S


def unhurried(registry: Any) -> Any:
    """``registry`` with the history module's wait for recall's index out of reach (unless ``--service-limits``)."""
    history = registry.get("conversation_history")
    if history is not None:
        history.recall_wait_s = limit_s(history.recall_wait_s)
    return registry


def show(what: str, result: Any) -> None:
    sent = json.dumps({"messages": result.messages, "used": result.snapshot.total_used}, sort_keys=True, default=str)
    met = "; ".join(met_limits(result.snapshot))
    print(f"{what}\t{hashlib.sha256(sent.encode()).hexdigest()[:16]}" + (f"\t{met}" if met or FULL else ""), end="")
    print(f"\t{sent}" if FULL else "")


def fresh_window(type_id: str, limit: int) -> Window:
    """A window as a library user's first: its own modules, no token counts kept from before."""
    token_estimator._estimators.clear()
    return Window(
        type_id,
        model="gpt-4o",
        model_limit=limit,
        registry=unhurried(module_registry().load()),
        timeout_s=limit_s(DEFAULT_TIMEOUT_S),
    )


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
            handler = ContextWindowHandler(unhurried(module_registry().load()), timeout_s=limit_s(DEFAULT_TIMEOUT_S))
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
                recall = (
                    SessionRecall(embedder, vectors_wait_s=limit_s(VECTORS_WAIT_S)) if embedder is not None else None
                )
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
    handler = ContextWindowHandler(window.registry, timeout_s=limit_s(DEFAULT_TIMEOUT_S))
    return await handler.assemble(ctx, window.window_type)


async def main() -> None:
    await conversations()
    await assembly_histories()
    await chats_asked(None)
    await chats_asked(Embedder("hashing"))


if __name__ == "__main__":
    asyncio.run(main())

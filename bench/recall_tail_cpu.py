"""What recall's tail costs a question: rank + pack CPU (``ConversationHistoryModule._recalled`` in process time,
summed over a question's window) with the tail and without, paired in one process.

assistant-porto-0's 20 questions over its 554 messages, or 10,000 cycled from them (``BENCH_TAIL_SIZES``), hashing
vectors made first, Conversation First at 8K and 16K (``BENCH_TAIL_LIMITS``), ``BENCH_TAIL_REPS`` rounds (5) after a
warm one. Three arms, each its own ``SessionRecall`` and session, every question asked of each in rotating order so
the machine's load falls on all alike:

* *pre-tail*: no tail (``RECALL_TAIL_DEPTH`` 2: the tail asked no deeper than the head) and each ranking's units found
  by ``np.unique`` (``HistoryIndex._one_message_units`` off), as before session 50's tail and session 51's cut;
* *no tail*: ``RECALL_TAIL_DEPTH`` 2, the code as it is;
* *tail*: the code as it is.

Prints each arm's median and the medians of the paired differences (tail minus pre-tail: issue 31 item 1's budget).
Runs against whatever code is on ``sys.path`` first: from a checkout's root, ``python <this file>`` (the same file run
from two checkouts compares them). Docs: docs/benchmarks.md, "Recall's tail"; docs/history/benchmarks-log.md,
"Session 51 (tailfit)", "Session 52 (tailcut)".
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.getcwd())

from bench.assistant_chats import assistant_conversations
from bench.window_digests import fresh_window, limit_s
from components.context_window.base import AssemblyContext, Message, Profile, Session
from components.context_window.handler import DEFAULT_TIMEOUT_S, ContextWindowHandler
from components.context_window.recall.messages import VECTORS_WAIT_S, SessionRecall
from tda.integrations.window import split
from tda.knowledge.embeddings import Embedder

REPS = int(os.environ.get("BENCH_TAIL_REPS", "5"))
LIMITS = tuple(int(x) for x in os.environ.get("BENCH_TAIL_LIMITS", "8000,16000").split(","))
SIZES = tuple(int(x) for x in os.environ.get("BENCH_TAIL_SIZES", "554,10000").split(","))
ARMS = ("pre-tail", "no tail", "tail")
DEPTH = {"pre-tail": 2, "no tail": 2, "tail": 4}


def timed_module() -> tuple[Any, list[float]]:
    """The history module's code as the fresh window loaded it, its ``_recalled`` timed into the list returned."""
    module = next(m for n, m in reversed(sys.modules.items()) if n.endswith("conversation_history.handler"))
    samples: list[float] = []
    if not getattr(module, "_timed", False):
        module._timed = True
        recalled = module.ConversationHistoryModule._recalled

        async def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return await recalled(self, *args, **kwargs)
            finally:
                module._samples.append((time.process_time() - start) * 1000)

        module.ConversationHistoryModule._recalled = timed
    module._samples = samples
    return module, samples


def history_of(size: int) -> list[dict[str, str]]:
    chat = assistant_conversations(1, 0)[0]
    texts = [m["content"] for m in chat.messages]
    if size <= len(texts):
        return [{"role": m["role"], "content": m["content"]} for m in chat.messages[:size]]
    return [{"role": ("user", "assistant")[i % 2], "content": f"{texts[i % len(texts)]} ({i})"} for i in range(size)]


async def cell(size: int, limit: int, questions: list[str], embedder: Embedder) -> None:
    history = history_of(size)
    window = fresh_window("conversation_first", limit)
    module, samples = timed_module()
    handler = ContextWindowHandler(window.registry, timeout_s=limit_s(DEFAULT_TIMEOUT_S))
    recalls = {arm: SessionRecall(embedder, vectors_wait_s=limit_s(VECTORS_WAIT_S)) for arm in ARMS}
    sessions: dict[str, Session] = {}
    cpu: dict[str, list[float]] = {arm: [] for arm in ARMS}
    asked = 0
    for rep in range(REPS + 1):
        for question in questions:
            asked += 1
            order = ARMS[asked % 3 :] + ARMS[: asked % 3]
            for arm in order if asked % 2 else order[::-1]:
                instructions, earlier, query, loop = split(
                    [Message.from_chat(m) for m in [*history, {"role": "user", "content": question}]]
                )
                if arm not in sessions:
                    sessions[arm] = Session(f"tail-cpu-{arm}", messages=earlier)
                    await recalls[arm].sync(sessions[arm], dense=True)
                    index = await recalls[arm].sync(sessions[arm])
                    index._one_message_units &= arm != "pre-tail"
                ctx = AssemblyContext(
                    query=query.content,
                    query_message=query,
                    instructions=instructions,
                    continuation=loop,
                    profile=Profile("library", "tool_enabled"),
                    session=sessions[arm],
                    model="gpt-4o",
                    model_limit=limit,
                    embedder=embedder,
                    history_recall=recalls[arm],
                )
                module.RECALL_TAIL_DEPTH = DEPTH[arm]
                samples.clear()
                await handler.assemble(ctx, window.window_type)
                if rep:
                    cpu[arm].append(sum(samples))
    module.RECALL_TAIL_DEPTH = DEPTH["tail"]
    medians = ", ".join(f"{arm} {statistics.median(cpu[arm]):.3f}" for arm in ARMS)
    own = statistics.median(t - n for t, n in zip(cpu["tail"], cpu["no tail"], strict=True))
    over = statistics.median(t - p for t, p in zip(cpu["tail"], cpu["pre-tail"], strict=True))
    print(
        f"{size} messages, {limit}: rank + pack a question, medians (ms): {medians}; paired: tail - no tail "
        f"{own:+.3f}, tail - pre-tail {over:+.3f} (n={len(cpu['tail'])})",
        flush=True,
    )


async def main() -> None:
    questions = [q.text for q in assistant_conversations(1, 0)[0].questions]
    embedder = Embedder("hashing")
    for size in SIZES:
        for limit in LIMITS:
            await cell(size, limit, questions, embedder)


if __name__ == "__main__":
    asyncio.run(main())

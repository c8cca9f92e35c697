"""conversation_history: a sliding window of valid messages, newest first, with a summary of the rest.

The window is built by walking the history backwards, so the cost of a turn depends on the window,
not on how long the conversation is. An assistant message that calls tools and the ``tool`` messages
answering it form one unit: kept or dropped together (providers reject one without the other).
When older messages do not fit, a summary of them takes a bounded share of the budget: written by the
summarizer provider when one is configured, otherwise extracted from the dropped messages themselves.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterable, Sequence
from contextlib import aclosing
from functools import lru_cache, partial
from itertools import chain, groupby
from typing import Any

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    Directives,
    HistoryQuestion,
    HistoryRecall,
    JoinedMessages,
    Message,
    MessagePage,
    MessageSource,
    RecalledUnit,
    RecallLead,
    TokenCounter,
    pages_newest_first,
)
from components.context_window.content_parts import media_note
from components.context_window.fitting import LIKELY_CHARS_PER_TOKEN, cut_to_tokens, first_sentence, water_fill
from components.context_window.loop_cut import cut_result, noted
from components.context_window.metering import labelled
from components.context_window.offload import run_sized
from components.context_window.options import option
from components.context_window.phases import visible
from components.context_window.recall.messages import SessionRecall, is_ample
from components.context_window.session_cache import BoundedCache, SessionCache, content_key
from components.context_window.token_estimator import CHUNK_CHARS, MESSAGE_OVERHEAD
from components.context_window.tool_results.clearing import Cleared, ClearRule, UnnumberedAges, clear_unit
from components.context_window.tool_results.clearing import recall as recall_cleared

from .asked import AskedWindows, asked_key
from .block_keys import BlockKeys
from .cuts import TurnCuts
from .options import HistoryOptions

SUMMARY_SHARE = 0.15
SUMMARY_MAX_TOKENS = 600
SUMMARY_SOURCE_MESSAGES = 40
"""How many of the most recent dropped messages the summary looks at (bounded work per turn)."""
SUMMARY_BLOCK = 10
"""A model-written summary is made per block of this many message positions (block k holds positions 10k to
10k + 9), once, and kept by the block's content: a turn that drops more messages asks for at most the new blocks'
summaries, and a smaller room drops or cuts cached ones instead of asking again. Only whole blocks are summarised:
up to the block the window starts in (repeating a few shown messages), or, when that block is not complete yet,
up to the block before it (the few messages between are said to be left out)."""
SUMMARY_BLOCK_TOKENS = SUMMARY_MAX_TOKENS * SUMMARY_BLOCK // SUMMARY_SOURCE_MESSAGES
"""The bound one block's summary is written within: together the blocks looked back at fill the largest room."""
SUMMARY_INSTRUCTION = "Summarise this conversation excerpt."
CACHE_BLOCK = HistoryOptions().cache_block
"""Default ``cache_block``: once history overflows, its start moves only in steps of this many message
positions, so the window's prefix stays byte-identical (a provider's prompt cache hits) between steps.
0 slides the start every turn (the most history kept, the least cache reuse); "auto" takes the largest of
``AUTO_BLOCKS`` within half the messages a sliding window keeps."""
AUTO_BLOCKS = tuple(sorted({2**i for i in range(1, 13)} | {3 * 2**i for i in range(1, 12)}))
"""2, 4, 6, 8, 12, 16, 24, ...: few sizes, each a multiple of the smaller ones but one, so a window that keeps a
few messages more or fewer than last turn mostly lands on the same start."""
SUMMARY_ROOM_STEP = 32
"""With cache blocks, the summary's room is rounded down to this step: a budget a few tokens different (a
longer query) must not change the summary at the start of the history, or the whole prefix after it."""
SHOWN_CLEARED = 50
"""The snapshot lists the newest this many cleared results (and counts them all)."""
RECALL_CLEARED_PCT = HistoryOptions().recall_cleared_pct
"""Default ``recall_cleared_pct``: with tool results cleared, this share of the budget is kept for showing the
cleared ones the question needs again (rounded down to ``SUMMARY_ROOM_STEP``, so the fill is stable)."""

RECALL_PCT = HistoryOptions().recall_pct
"""Default ``recall_pct``: the share of the module's budget for older messages recalled by relevance to the query
(the rest keeps the newest turns). 0: no recall, a sliding window (the shipped types turn it on)."""
RECALL_DENSE_LEAD = HistoryOptions().recall_dense_lead
"""Default ``recall_dense_lead``: recall runs when an older message's cosine with the query beats the best of the
newest turns' by this much (or ``recall_lexical_lead`` holds). Measured on bench/recall_bench.py (one chat a style):
0.08 / x1.5 held recall back from questions it answers (85 / 81 / 71% at 4K / 8K / 16K); 0.03 / x1.2 gives
90 / 95 / 93%, while a conversation going on with questions alike (tests/service/test_cost.py) leads by 0.00 / x1.00
and keeps its stable prefix."""
RECALL_LEXICAL_LEAD = HistoryOptions().recall_lexical_lead
"""Default ``recall_lexical_lead``: recall runs when an older message's BM25 score beats the newest turns' best by
this factor (a name or a term said long ago and not since)."""
RECALL_CONTINUITY_BELOW = HistoryOptions().recall_continuity_below
"""Default ``recall_continuity_below``: a question whose best cosine with the newest three user messages is below
this turns away from the conversation going on, and recall runs even without a clear lead (distractors among the
newest turns can outrank what it asks about). Measured: the recall bench's questions score 0.10-0.45 against the
chat's newest questions, a conversation going on with alike questions 0.99-1.00, and questions asked one after another
about an old chat, each on another topic in the same words ("What did Marcus ...?"), 0.5-0.8: at 0.5 these were held
back wherever the newest turns held chat alike to the question (16K: 87% of multi-hop evidence, 100% at 0.8)."""
RECALL_CONTINUES_FROM = HistoryOptions().recall_continues_from
"""Default ``recall_continues_from``: a question whose best cosine with the newest three user messages is at least
this is one more of a run of alike questions (tests/service/test_cost.py's chat: 0.99-1.00), served by the newest
turns, and recall stays off whatever an older message's lead (recalled messages change every turn, and the stable
prefix would go). The lead itself leaves out the newest messages that only ask (``lead_of``): a user asking about
something said long ago, question after question, scores 0.5-0.8 against the questions before (bench/
conversation_bench.py with BENCH_IN_TURNS=1), and those questions show nothing it needs."""
RECALL_COST_EXPONENT = HistoryOptions().recall_cost_exponent
"""Default ``recall_cost_exponent``: recalled units are packed by fused score / (tokens / ``RECALL_COST_FREE``) ** this
(0: by rank alone). Rank order lost bench/recall_bench.py's facts to long replies ranked above them (85 / 88% at
4K / 8K against 90 / 98% with 0.5); plain relevance per token let short lines that hold nothing ("Sure, Theo!")
beat the longer message holding the fact on chats between people (bench/conversation_bench.py)."""
RECALL_RANKED_SHARE = 0.5
"""Share of the recall room that the ranking's best units fill in rank order, whatever their length, before the rest
is packed by relevance per token (``RECALL_COST_EXPONENT``). Fused scores are reciprocal ranks, flat far down a ranking
(1 / (60 + rank)), so by relevance per token a 200-token message ranked 1st came after every short line ranked above
~65th: of the held-out sets' misses that the plain hybrid held at 4K / 8K, 14 of 34 were long messages (111-376 tokens)
ranked within the room, whose room went to lines ranked below them. The length cost is a bet worth making in the
ranking's tail, where no single unit is likely to hold the answer, not at its head (0.75 gained more on the set it was
chosen on and lost on others; docs/history/knowledge-log.md, "Ranking, session 42"). Past that share, the rest of the
gathered head and the tail compete by value together: packed apart, the head's long answers ranked 10th-30th (an
assistant's 300-600-token templates) took a 4K room before a 37-token user line ranked 36th-40th in the tail was
weighed (fresh8 seed 0 4K 72.2 -> 77.8%, session 61, short61)."""
RECALL_AMPLE_EXPONENT = 1.0
"""The cost exponent at ample room (``is_ample``: a 16K window's): past the ranking's head, units are packed by
relevance per token in full. Such a room holds a large share of the older messages, and the plain hybrid, packing
mostly short messages in rank order, covered many more of them than tda (fresh5: ~400 against 243 in 14K
tokens): at 0.5 the room past the head went to long rambles ranked above short lines holding a fact in other words
("Priscilla has handed me the Leeds account", "physio again"), fused 258th-302nd. At 4K and 8K the exponent stays
(short empty lines would beat the fact there: ``RECALL_COST_EXPONENT``). Session 57 (miss57): fresh5 seed 0 16K 97.4
-> 100%, the other dev sets the same (docs/knowledge.md)."""
RECALL_TAIL_DEPTH = 4
"""How deep, in times the recall room, the ranking is collected for the room its best units leave: they are ranked
until twice the room (a speed bound, 993ce12) and packed first; the units ranked next, to four times the room
(``RECALL_TAIL_MAX_TOKENS`` past the head at most), are packed by the same rule in what is left, and only then do the
newest older turns fill the rest (docs/knowledge.md, "The ranking's tail fills the room")."""
RECALL_TAIL_MAX_TOKENS = 12_000
"""At most this many tokens of tail past the head: what the head leaves is a few hundred tokens, and a large window's
4x (400K tokens at 128K) collected most of a long history for it (+12.9 ms a question at 10,000 messages). Above twice
an 8K window's room, so 4K and 8K windows, where the tail's gains are, get the whole 4x."""
RECALL_WAIT_S = 1.5
"""How long a turn waits for recall's index of a long history met for the first time (its words read and indexed:
about a second for 50,000 messages, more on a busy machine) before it goes on with the newest turns alone. Under the
handler's per-module timeout (2 s), which would drop the whole history, its newest turn included. The indexing goes
on in the background: a later turn recalls."""
RECALL_COST_FREE = 40
"""Tokens a recalled unit may cost before its length counts against it: a short line does not win by being short,
only a long one loses by being long (measured: 20-200 alike on the conversation bench, 40 best on the recall
bench; docs/knowledge.md, "Abstention")."""
RECALL_MARKER = (
    "Earlier messages of this conversation, recalled because they may bear on the current question. They came "
    "before the recent messages above; they are shown in their original order."
)
"""Opens the recalled messages (a fixed text: counted once, and the same every turn)."""


def recall_marker(shown: int, older: int) -> str:
    """The marker, saying how many of the ``older`` messages (those before the recent ones) are shown: a question
    such as "how many times..." then knows the list is partial."""
    return f"{RECALL_MARKER} {shown} of the {older} older messages are shown; {older - shown} are left out."


TAIL_MARKER = (
    "Earlier messages of this conversation, just before the recent messages above, shown in their original order."
)
"""Opens what the sliding window holds before the cache block's start (a fixed text, the same every turn)."""

Unit = tuple[Message, ...]


async def unit_pages(source: MessageSource, phase: str | None = None) -> AsyncGenerator[list[tuple[int, Unit]], None]:
    """Per page read, the units it completes, newest first, as ``(position of the unit's first message, unit)``.

    Pages are read only as the caller walks on; a walk steps once per page, not per message.
    Invalid messages are skipped, and so are messages the session's IFOC ``phase`` may not see.
    Tool results are gathered until the assistant message that issued the calls; results without
    their call, or calls without their results, are left out (a provider would reject them).
    """
    pending: list[Message] = []
    async with aclosing(pages_newest_first(source)) as pages:
        async for first, messages in pages:
            units: list[tuple[int, Unit]] = []
            for offset, message in enumerate(messages):
                if not message.valid or (phase is not None and not visible(message.phase, phase)):
                    continue
                if message.role == "tool":
                    pending.append(message)
                    continue
                if message.role == "assistant" and message.tool_calls:
                    calls = {c.get("id") for c in message.tool_calls}
                    # A result answering another call is an orphan: it never joins this unit.
                    results = [m for m in reversed(pending) if m.tool_call_id in calls]
                    if {m.tool_call_id for m in results} == calls:
                        units.append((first - offset, (message, *results)))
                    pending = []
                    continue
                pending = []
                units.append((first - offset, (message,)))
            yield units


async def older_than(source: MessageSource, end: int, count: int, phase: str | None) -> list[Message]:
    """The valid, visible messages among the ``count`` just before position ``end``, oldest first."""
    return [message for _, message in await positioned_older_than(source, end, count, phase)]


async def positioned_older_than(
    source: MessageSource, end: int, count: int, phase: str | None
) -> list[tuple[int, Message]]:
    """``older_than`` with each message's position."""
    found: list[tuple[int, Message]] = []
    async with aclosing(pages_newest_first(source)) as pages:
        async for first, messages in pages:
            if first - len(messages) + 1 >= end:
                continue  # the whole page is newer than what is asked for
            for offset in range(max(0, first - end + 1), len(messages)):  # from the newest message before ``end``
                i, message = first - offset, messages[offset]
                if i < end - count:
                    return found[::-1]
                if message.valid and visible(message.phase, phase):
                    found.append((i, message))
    return found[::-1]


class _Remembered:
    """A source whose pages are read once per window: the fill and the summary's look-back walk the same pages."""

    def __init__(self, source: MessageSource) -> None:
        self._source = source
        self._pages: dict[tuple[Any, int], MessagePage] = {}
        self.total = source.total
        self.last_turn = source.last_turn

    async def page(self, cursor: Any, limit: int) -> MessagePage:
        key = (cursor, limit)
        if key not in self._pages:
            self._pages[key] = await self._source.page(cursor, limit)
        return self._pages[key]


def extractive_summary(dropped: Sequence[Message]) -> list[str]:
    """Bullet lines, oldest first: the first sentence of each user request and assistant answer, and what it
    carried besides text ("[1 image]"), so an image or file dropped with its message is not lost silently."""
    return list(_extract(tuple((m.role, m.content, media_note(m.parts)) for m in dropped)))


@lru_cache(maxsize=4096)
def _extract(dropped: tuple[tuple[str, str, str], ...]) -> tuple[str, ...]:
    # Cached by content: consecutive turns summarise nearly the same messages.
    return tuple(
        f"- {'User' if role == 'user' else 'Assistant'}: " + " ".join(filter(None, (first_sentence(content), note)))
        for role, content, note in dropped
        if role in ("user", "assistant") and (content.strip() or note)
    )


def summary_header(covered: int, dropped: int, *, lines: bool = False, gap: int = 0) -> str:
    """What the summary covers, truthfully: ``covered`` messages (``lines``: requests and answers, a line each) just
    before those shown (``gap`` > 0: ending that many messages before them), of the ``dropped`` earlier messages not
    shown; older ones are said to be left out."""
    if gap > 0:
        return (
            f"Summary of {covered} earlier messages ({dropped} earlier messages are not shown; the {gap} just before "
            "those shown and older ones are not summarised here):"
        )
    if not lines and covered >= dropped:
        return f"Summary of the {dropped} earlier messages not shown:"
    what = "requests and answers" if lines else "messages"
    return (
        f"Summary of the last {covered} {what} before those shown ({dropped} earlier messages are not shown; "
        "older ones are not summarised here):"
    )


def block_size(config: Any, kept_messages: int) -> int:
    """``cache_block`` as set (a whole number), or "auto": the largest of ``AUTO_BLOCKS`` within half of
    ``kept_messages`` (what the sliding window holds)."""
    if config.get("cache_block", CACHE_BLOCK) == "auto":
        return max(b for b in AUTO_BLOCKS if b <= max(2, kept_messages // 2))
    return option(config, "cache_block", 0, minimum=0)


def block_aligned(kept: list[tuple[int, Unit, int]], block: int) -> list[tuple[int, Unit, int]]:
    """``kept`` (newest first) without the units before the next multiple of ``block`` at or after its oldest
    position: the start stays put while the history grows, until a sliding window would pass it. If that would
    leave nothing, ``kept`` as it is (a block larger than the window cannot be honoured)."""
    if block <= 0 or not kept or kept[-1][0] == 0:
        return kept
    start = -(-kept[-1][0] // block) * block
    aligned = [entry for entry in kept if entry[0] >= start]
    return aligned or kept


def from_newest_question(
    kept: list[tuple[int, Unit, int]], within: list[tuple[int, Unit, int]]
) -> list[tuple[int, Unit, int]]:
    """``kept`` (a prefix of ``within``, newest first) reaching back to the newest turn's question when ``within``
    holds it: the stable part never opens inside the newest turn. (The rest goes to the tail behind it, which a tool
    loop's later step cuts from its end: the newest turn's beginning would go first.)"""
    if any(unit[0].role == "user" for _, unit, _ in kept):
        return kept
    asked = next((i for i, (_, unit, _) in enumerate(within) if unit[0].role == "user"), None)
    return within[: asked + 1] if asked is not None else kept


def without_orphan_opening(kept: list[tuple[int, Unit, int]]) -> list[tuple[int, Unit, int]]:
    """``kept`` (newest first) without the oldest units that are replies (an assistant message, a tool call) whose
    question was dropped: the window opens with a user message. Kept as is when no user message is left after."""
    end = len(kept)
    while end > 0 and kept[end - 1][1][0].role != "user":
        end -= 1
    return kept[:end] if end > 0 else kept


@dataclasses.dataclass(frozen=True)
class _Sliding:
    """A sliding window at one budget (``ConversationHistoryModule._sliding``): what it shows, what its summary is
    made of."""

    kept: list[tuple[int, Unit, int]]
    """The units shown from the cache block's start, newest first."""
    within: list[tuple[int, Unit, int]]
    """The newest units that fit before the start was aligned, newest first (the rest go to the tail)."""
    newest: list[tuple[int, Unit, int]] | None
    """The newest turn cut to fit, when it did not fit whole (then ``kept``; no summary, no tail)."""
    reserve: int
    overflowing: bool
    sliding: int
    """The tokens of the units the summary's room left, before the start was aligned."""
    block: int
    first_kept: int
    room: int
    """The summary's room (0: no summary)."""
    summarised: list[tuple[int, Message]]
    """The dropped messages the summary is made of, oldest first, with their positions (empty: no summary)."""
    model: bool
    """Whether a model writes the summary (a line a message is extracted otherwise)."""


class ConversationHistoryModule(ContextModule):
    options_model = HistoryOptions

    def __init__(self, manifest: Any) -> None:
        super().__init__(manifest)
        self._summaries: SessionCache[str] = SessionCache(1024)
        """Model-written summaries, keyed by the exact transcript summarised and the room given."""
        self._writing: dict[tuple[str, str], asyncio.Future[str]] = {}
        """The summaries being written, under their ``_summaries`` key: a window needing one waits for it."""
        self._asks: BoundedCache[str, list[_Ask]] = BoundedCache(1024)
        """Per session, the windows its last first step asked for (a tool loop's later steps ask within the first's),
        in order: the session's next turn asks for the same, over its longer history (``ahead``)."""
        self._recalls: BoundedCache[str, SessionRecall] = BoundedCache(4)
        """History indexes this module keeps when the context brings no ``history_recall`` provider."""
        self.recall_wait_s = RECALL_WAIT_S
        """How long a call waits for recall's index of a history met for the first time (see ``RECALL_WAIT_S``): a
        bench comparing windows raises it out of a loaded machine's reach (bench/window_digests.py)."""
        self._indexing: dict[tuple[HistoryRecall, str], asyncio.Future[HistoryQuestion]] = {}
        """Recall's questions that outlasted ``recall_wait_s``, indexing in the background, by recall and session (held
        here: the loop keeps a task only weakly)."""
        self._priced: BoundedCache[str, tuple[TokenCounter, dict[int, _Priced]]] = BoundedCache(64)
        """Per session, the recalled units priced for packing, by position, with the counter that priced them: a long
        session's recall hands thousands of units each turn, all but the newest the same (tuples) as the turn before."""
        self._block_keys = BlockKeys()
        """Summary blocks' keys by their messages: every call's plans name the same few blocks."""
        self._cuts = TurnCuts()
        """The newest turn's last cuts per session: the work ahead's is the next call's first step's."""
        self._asked = AskedWindows()
        """The last recall windows per session: a tool loop's later step asks for its first step's again."""

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        strategy, target = ctx.directives.condense_strategy, ctx.directives.condense_to
        if target is not None and target < budget:
            # A condense rule cuts a window above ``target`` down to the window at ``target``. When the history
            # does not fit there whole, that is the result: build it directly (marked condensed) rather than
            # reading twice as deep first. A history that fits whole is the same at either budget.
            smaller = await self._window(target, ctx, strategy)
            if smaller.metadata["first_kept_index"] > 0:
                return smaller.replace(condensed=True)
        return await self._window(budget, ctx, strategy)

    async def condense(self, contribution: Contribution, target_tokens: int, ctx: AssemblyContext) -> Contribution:
        return await self._window(target_tokens, ctx, ctx.directives.condense_strategy or "summarize")

    async def fallback(self, budget: int, ctx: AssemblyContext) -> Contribution:
        """The newest units within ``budget`` (the newest turn cut to fit when it alone does not), nothing recalled or
        summarised: what is sent when the window failed or timed out (a loaded server, an index that hangs), so the
        model still gets the turn and what led to it."""
        source = _Remembered(ctx.session.message_source())
        kept = await self._fill(source, budget, ctx)
        kept = without_orphan_opening(await self._cut_newest_turn(kept, budget, ctx) or kept)
        first_kept = kept[-1][0] if kept else source.total
        return Contribution(
            self.module_id,
            units=tuple(unit for _, unit, _ in reversed(kept)),
            placement="history",
            trim_from="start",
            strategy="sliding_window",  # the reason says it is the fallback
            left_out=first_kept > 0,
            metadata={
                "messages_total": source.total,
                "messages_kept": sum(len(unit) for _, unit, _ in kept),
                "first_kept_index": first_kept,
            },
        )

    def ahead(self, ctx: AssemblyContext) -> Coroutine[Any, Any, None] | None:
        """The summary the session's next call will ask for first and is not made or under way, written now (one at
        most: a guess that turns out wrong costs one summary). That call asks for the windows the last first step
        asked for (``_asks``), over the history with the turn joined, each a sliding window: whether one recalls
        instead depends on the question, not known yet (such a window summarises nothing; the summary made for it
        waits for the window that drops its block, usually a turn or two later)."""
        asks = self._asks.get(ctx.session.id)
        if ctx.summarizer is None or not asks:
            return None
        return self._summary_ahead(ctx, tuple(asks))

    async def _summary_ahead(self, ctx: AssemblyContext, asks: Sequence[_Ask]) -> None:
        source = _Remembered(ctx.session.message_source())
        for budget, directives, strategy, whole in asks:
            asked = dataclasses.replace(ctx, directives=directives)
            room = budget - await self._loop_room(source, asked)
            if _still_whole(whole, ctx, room - _recall_reserve(directives.config, room)):
                continue  # it summarises nothing: not worth a walk over the whole history (a large window's)
            plan = await self._sliding(source, room, asked, strategy)
            if not plan.model:
                continue
            for block in reversed(_blocks(plan.summarised)):  # in the order the window asks for them
                key = self._block_key(block, ctx)
                if key not in self._summaries and key not in self._writing:
                    await self._write(key, _transcript(block), ctx)
                    return

    def _note_ask(self, ctx: AssemblyContext, budget: int, strategy: str | None) -> int | None:
        """A window a session's first step asks for, noted for the session's next turn (``ahead``): its place in
        ``ctx.memo["asks"]``, or None when it is not noted."""
        if not ctx.session.id or ctx.continuation:
            return None
        asks = ctx.memo.get("asks")
        if asks is None:
            asks = ctx.memo["asks"] = self._asks.put(ctx.session.id, [])
        asks.append((budget, ctx.directives, strategy, None))
        return len(asks) - 1

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        """Forget a session's cached summaries (call it when the session's history is purged or edited)."""
        purged = self._summaries.purge(session_id)
        for key in [key for key in self._writing if key[0] == session_id]:  # what is being written is not kept either
            del self._writing[key]
        self._asks.discard(session_id)
        self._priced.discard(session_id)
        self._cuts.discard(session_id)
        self._block_keys.discard(session_id)
        self._asked.discard(session_id)
        for recall in self._recalls.values():
            purged += recall.forget(session_id)
        return {"purged": purged, "what": "cached summaries and history indexes"}

    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), "cached_summaries": len(self._summaries)}

    # -- the window ----------------------------------------------------------------------------

    async def _window(self, budget: int, ctx: AssemblyContext, strategy: str | None) -> Contribution:
        recall_pct = option(ctx.directives.config, "recall_pct", float(RECALL_PCT), minimum=0)
        if recall_pct > 100:
            raise ValueError(f"option 'recall_pct' must be at most 100, got {recall_pct:g}")
        source = _Remembered(ctx.session.message_source())
        noted = self._note_ask(ctx, budget, strategy)
        # A recall window asked again (a tool loop's later step asks for its first step's) is handed out again.
        recall = self._recall(ctx) if recall_pct else None
        asked = asked_key(ctx, recall, budget, strategy, recall_pct) if recall is not None else None
        if (again := self._asked.get(asked)) is not None:
            return again
        budget -= await self._loop_room(source, ctx)
        held_back: dict[str, Any] = {}
        if recall_pct:
            reason = await self._recall_not_needed(source, budget, ctx)
            if reason is None:
                window = await self._recall_window(budget, ctx, strategy, recall_pct)
                return self._asked.keep(asked, (ctx.tokens, recall), window)
            held_back = {"recall": "held back", "recall_reason": reason}
        plan = await self._sliding(source, budget, ctx, strategy)
        if noted is not None and not plan.overflowing and plan.newest is None:  # it holds the whole history
            asks = ctx.memo["asks"]
            asks[noted] = (*asks[noted][:3], plan.sliding)
        kept, within, newest, reserve = plan.kept, plan.within, plan.newest, plan.reserve
        first_kept, overflowing, sliding, block = plan.first_kept, plan.overflowing, plan.sliding, plan.block
        summary: Message | None = None
        if plan.summarised:
            summary = await self._summary(plan.summarised, first_kept, plan.room, ctx, model=plan.model)
        assert ctx.tokens is not None
        # What the block's start left out goes after the stable part, in order, behind a marker (the prefix stays put
        # between turns), as far back as the room the summary left reaches (not the room it was given), and the next
        # older unit cut to fit: the window is full. A tool
        # loop's later step asks for the first step's window (the same budget: the same cut) and drops units from
        # the tail's end, never its start.
        tail = [unit for _, unit, _ in reversed(within[len(kept) :])]
        written = ctx.tokens.count_message(summary) if summary is not None else 0
        tail_room = budget - reserve - written - sum(cost for _, _, cost in kept)
        if overflowing and newest is None:
            tail = await self._older_units(source, ctx, kept, tail_room)
        if tail:
            tail = _fitted_tail(tail, tail_room, ctx.tokens)
        head: tuple[Unit, ...] = ((summary,),) if summary is not None else ()
        after = ((Message("system", TAIL_MARKER),), *tail) if tail else ()
        units = head + tuple(unit for _, unit, _ in reversed(kept)) + after
        held = sliding - sum(cost for _, _, cost in kept) - sum(ctx.tokens.count_message(m) for u in tail for m in u)
        used = sum(ctx.tokens.count_message(m) for unit in units for m in unit)
        # A cut newest turn leaves the note its reserve only (what the cut left spare is litellm's, see CHUNK_CHARS).
        note, clearing = await _recall_cleared(units, ctx, reserve if newest else budget - used)
        units += ((note,),) if note is not None else ()
        return Contribution(
            self.module_id,
            units=units,
            placement="history",
            trim_from="start",
            held_back=max(0, held),
            strategy=strategy or ("sliding_window+summary" if summary else "sliding_window"),
            volatile_tail=len(after) + int(note is not None),
            left_out=overflowing,
            metadata={
                "messages_total": source.total,
                "messages_kept": sum(len(unit) for _, unit, _ in kept) + sum(len(unit) for unit in tail),
                "first_kept_index": first_kept,
                "summary": summary is not None,
                "cache_block": block,
                "held_back_tokens": held,
                **held_back,
                **clearing,
            },
        )

    async def _sliding(
        self, source: MessageSource, budget: int, ctx: AssemblyContext, strategy: str | None
    ) -> _Sliding:
        """The sliding window within ``budget`` (the newest units, from a cache block's start, with room for a
        summary of what is left out) and the messages its summary is made of."""
        summarize = ctx.directives.config.get("summarize_dropped", True) or strategy == "summarize"
        reserve = _recall_reserve(ctx.directives.config, budget)
        kept = await self._fill(source, budget - reserve, ctx)
        # The newest turn larger than the room comes cut, alone: no summary, no tail (older content gives way).
        newest = await self._cut_newest_turn(kept, budget - reserve, ctx)
        kept = newest or kept
        first_kept = kept[-1][0] if kept else source.total
        phase = ctx.session.phase
        room = 0
        # Overflowing: older messages this turn could see were left out (invisible ones do not count).
        overflowing = first_kept > 0 and bool(await older_than(source, first_kept, SUMMARY_SOURCE_MESSAGES, phase))
        if overflowing and summarize and newest is None:
            room = min(int(budget * SUMMARY_SHARE), SUMMARY_MAX_TOKENS)
            if ctx.directives.config.get("cache_block", CACHE_BLOCK):
                room -= room % SUMMARY_ROOM_STEP
            used = sum(cost for _, _, cost in kept)
            while kept and used > budget - room:  # make room for the summary by letting the oldest go
                used -= kept.pop()[2]
        sliding = sum(cost for _, _, cost in kept)
        block = block_size(ctx.directives.config, sum(len(unit) for _, unit, _ in kept))
        within = kept
        if overflowing and newest is None:
            kept = block_aligned(_within(kept, _stable_room(budget - reserve - room, ctx)), block)
            kept = from_newest_question(kept, within)
        kept = without_orphan_opening(kept)
        first_kept = kept[-1][0] if kept else source.total
        summarised: list[tuple[int, Message]] = []
        model = False
        if room:
            end = -(-first_kept // SUMMARY_BLOCK) * SUMMARY_BLOCK
            end -= SUMMARY_BLOCK if end > source.total else 0
            # Model calls summarise whole blocks, each once (see SUMMARY_BLOCK); with none yet, lines are extracted.
            model = ctx.summarizer is not None and end > 0
            end = end if model else first_kept
            summarised = await positioned_older_than(source, end, SUMMARY_SOURCE_MESSAGES, phase)
        return _Sliding(kept, within, newest, reserve, overflowing, sliding, block, first_kept, room, summarised, model)

    async def _recall_not_needed(self, source: MessageSource, budget: int, ctx: AssemblyContext) -> str | None:
        """Why the newest turns alone serve this query (None: recall). Recall gives up most of the window's stable
        prefix (recalled messages change every turn), so it runs only when an older message matches the query
        clearly better than any the newest turns already show, or the query turns away from the newest questions:
        a question about something said long ago, not the next question of a conversation going on."""
        kept = await self._fill(source, budget, ctx)
        first_kept = kept[-1][0] if kept else source.total
        if first_kept <= 0:
            return "the whole history fits"
        config = ctx.directives.config
        continuing = option(config, "recall_continues_from", RECALL_CONTINUES_FROM)
        lead = await self._lead_within(ctx, first_kept, continuing)
        if lead is None:
            return f"recall is still indexing this history ({source.total:,} messages); the newest turns meanwhile"
        dense_lead = option(config, "recall_dense_lead", RECALL_DENSE_LEAD)
        lexical_lead = option(config, "recall_lexical_lead", RECALL_LEXICAL_LEAD, minimum=0)
        turning = option(config, "recall_continuity_below", RECALL_CONTINUITY_BELOW)
        if lead.continuity is not None and lead.continuity >= continuing:
            return f"the query goes on with the newest questions ({lead.continuity:.2f}, from {continuing:.2f})"
        assert lead.lexical is not None  # scored: the query does not go on with the newest questions
        if (lead.dense is not None and lead.dense >= dense_lead) or lead.lexical >= lexical_lead:
            return None
        if lead.continuity is not None and lead.continuity < turning:
            return None
        dense = "" if lead.dense is None else f"meaning {lead.dense:+.2f} (recalls from {dense_lead:+.2f}), "
        going_on = "" if lead.continuity is None else f"; it goes on with the newest questions ({lead.continuity:.2f})"
        return (
            f"no older message matches the query clearly better than the newest turns: {dense}"
            f"words x{lead.lexical:.2f} (recalls from x{lexical_lead:.2f}){going_on}"
        )

    async def _lead_within(self, ctx: AssemblyContext, split: int, continuing: float) -> RecallLead | None:
        """How the best older message leads the newest ones (only the continuity when it reaches ``continuing``),
        or None when recall's index is not ready within ``recall_wait_s``."""
        asked = await self._asked_within(ctx)
        return None if asked is None else await asked.lead(split=split, continues_from=continuing)

    async def _asked_within(self, ctx: AssemblyContext) -> HistoryQuestion | None:
        """The query asked of recall, once per assembly (its windows lead and rank it more than once: at the
        allocation and in the fill); None when recall's index is not ready within ``recall_wait_s``
        (it goes on indexing in the background; until it is done, calls do not wait again)."""
        asked: HistoryQuestion | None = ctx.memo.get("asked")
        if asked is not None:
            return asked
        recall = self._recall(ctx)
        key = (recall, ctx.session.id)
        if key in self._indexing:
            return None
        asking = asyncio.ensure_future(recall.ask(ctx.session, ctx.query))
        try:
            asked = ctx.memo["asked"] = await asyncio.wait_for(asyncio.shield(asking), self.recall_wait_s)
        except TimeoutError:
            self._indexing[key] = asking
            asking.add_done_callback(partial(_indexed, self._indexing, key))
            return None
        return asked

    async def _recall_window(
        self, budget: int, ctx: AssemblyContext, strategy: str | None, recall_pct: float
    ) -> Contribution:
        """The newest turns within ``100 - recall_pct`` % of ``budget`` (in cache blocks, opening with a user
        message), then older messages recalled by relevance to the query in all the room left: the history fills
        its allocation. Recalled units come after the newest ones (they change per turn; the prefix stays cached),
        behind a marker, in conversation order."""
        source = _Remembered(ctx.session.message_source())
        assert ctx.tokens is not None
        reserve = _recall_reserve(ctx.directives.config, budget)  # for cleared tool results the question needs
        newest_budget = int((budget - reserve) * (100 - recall_pct) / 100)
        kept = await self._fill(source, newest_budget, ctx)
        forced, cut = not any(unit[0].role == "user" for _, unit, _ in kept), None
        if forced:  # the newest exchange stays, from its question (cut when larger than the room), unaligned
            within = await self._fill(source, budget, ctx)
            asked = next((i for i, (_, unit, _) in enumerate(within) if unit[0].role == "user"), None)
            if asked is not None:
                kept = within[: asked + 1]
            else:
                cut = await self._cut_newest_turn(within, budget - reserve, ctx)
                kept = cut or within[:1]
        overflowing = bool(kept) and kept[-1][0] > 0
        block = block_size(ctx.directives.config, sum(len(unit) for _, unit, _ in kept))
        if overflowing and not forced:  # on a cache block's start, unless that leaves the newest question out
            aligned = without_orphan_opening(block_aligned(kept, block))
            kept = aligned if any(unit[0].role == "user" for _, unit, _ in aligned) else without_orphan_opening(kept)
        first_kept = kept[-1][0] if kept else source.total
        newest = tuple(unit for _, unit, _ in reversed(kept))
        newest_used = sum(ctx.tokens.count_message(m) for unit in newest for m in unit)
        note, clearing = await _recall_cleared(newest, ctx, reserve)
        note_used = ctx.tokens.count_message(note) if note is not None else 0
        room = 0 if cut else budget - newest_used - note_used  # a cut newest turn: older content gave way
        # What recall leaves of the room goes to the newest older units that fit (priced by the walk, newest first;
        # twice the room deep: recall took some of them, and a small one further back may fit where a large did not).
        recent = [entry for entry in await self._fill(source, newest_used + 2 * room, ctx) if entry[0] < first_kept]
        recalled, facts = await self._recalled(ctx, first_kept, room, recent)
        shown = sum(len(unit) for unit in recalled)
        marker = (Message("system", recall_marker(shown, first_kept)),) if recalled else ()
        tail = ((note,),) if note is not None else ()
        units = newest + tuple((m,) for m in marker) + recalled + tail
        return Contribution(
            self.module_id,
            units=units,
            placement="history",
            trim_from="start",
            strategy=strategy or ("newest+recall" if recalled else "sliding_window"),
            volatile_tail=len(marker) + len(recalled) + len(tail),
            left_out=first_kept > 0,
            metadata={
                "messages_total": source.total,
                "messages_kept": sum(len(unit) for _, unit, _ in kept),
                "first_kept_index": first_kept,
                "summary": False,
                "cache_block": block,
                "newest_tokens": newest_used,
                **facts,
                **clearing,
            },
        )

    async def _recalled(
        self, ctx: AssemblyContext, before: int, room: int, recent: Sequence[tuple[int, Unit, int]] = ()
    ) -> tuple[tuple[Unit, ...], dict[str, Any]]:
        """Older units packed into ``room`` by relevance (best first; one that does not fit is passed over for the
        next that does, so the depth is the room's, not a fixed k), then what room is left filled from ``recent``
        (the units just before ``before``, newest first), returned in conversation order."""
        assert ctx.tokens is not None
        count = ctx.tokens.count_message
        room -= count(Message("system", recall_marker(before, before)))  # the most digits it can have
        if before <= 0 or room <= 0:
            return (), {"recalled_messages": 0}
        exponent = option(ctx.directives.config, "recall_cost_exponent", RECALL_COST_EXPONENT, minimum=0)
        tokens = ctx.tokens
        priced = self._priced.get(ctx.session.id)
        if priced is None or priced[0] is not tokens:
            priced = self._priced.put(ctx.session.id, (tokens, {}))
        packing = _Packing(room, exponent, tokens, priced[1])
        asked: HistoryQuestion = ctx.memo["asked"]  # asked by the lead that chose recall, in this assembly
        ranking = await asked.recall(
            before=before,
            enough_tokens=_head_tokens(room),
            tail_tokens=_tail_tokens(room),
            tail_room=packing.head,  # the head packed in recall's step: the tail is made for the room it leaves
        )
        if packing.ranked is not ranking.units:  # a recall that packed no head, or another: packed here
            packing = _Packing(room, exponent, tokens, priced[1])
        # Thousands of units over a long history: counted and ordered off the event loop (``ctx.offload``), unless
        # recall's step packed them.
        chosen, taken, relevant_tokens, left = await run_sized(
            ctx.offload,
            len(ranking.units) if packing.ranked is None else 0,
            lambda: packing.packed(ranking.units, ranking.tail, recent),
        )
        facts: dict[str, Any] = {
            "recall": ranking.method,
            "recalled_messages": sum(len(u.messages) for u in chosen),
            "recalled_tokens": room - left,
            "relevant_tokens": relevant_tokens,
            "recall_searched": ranking.searched,
        }
        if ranking.reason and not taken:  # nothing recalled by relevance (the newest older turns may fill the room)
            facts["recall_reason"] = ranking.reason
        if ranking.pending:  # vectors still being read or embedded in the background: ranked by words meanwhile
            facts["recall_vectors_pending"] = ranking.pending
        return tuple(u.messages for u in chosen), facts

    def _recall(self, ctx: AssemblyContext) -> HistoryRecall:
        """The application's recall (``AssemblyContext.history_recall``); without one (a library call, ``tda
        assemble``), the module indexes the history itself at first use, with the context's embedder (one index per
        embedder: the same history ranks the same way)."""
        if ctx.history_recall is not None:
            return ctx.history_recall
        key = type(ctx.embedder).__name__ if ctx.embedder is not None else ""
        recall = self._recalls.get(key)
        if recall is None:
            recall = self._recalls.put(key, SessionRecall(ctx.embedder, runner=ctx.offload))
        return recall

    async def _fill(self, source: MessageSource, budget: int, ctx: AssemblyContext) -> list[tuple[int, Unit, int]]:
        """Newest units that fit in ``budget``, newest first, as (position of first message, unit, tokens)."""
        return await _walk(source, ctx).within(budget)

    async def _loop_room(self, source: MessageSource, ctx: AssemblyContext) -> int:
        """Room left free for the turn's tool loop, within what the ask may leave (``Directives.loop_spare``): what
        the newest turn's calls and results took, and a twentieth more (results grow as a session goes on), so the
        later steps send this step's history part whole. 0 when the newest turn called no tool, or its loop is
        larger than the spare (the later steps cut then anyway: the window is filled)."""
        spare = ctx.directives.loop_spare
        if spare <= 0:
            return 0
        turn = await _walk(source, ctx).newest_turn()
        loop = sum(cost for _, unit, cost in turn if unit[0].tool_calls)
        return min(spare, loop + loop // 20) if loop <= spare else 0

    async def _cut_newest_turn(
        self, kept: list[tuple[int, Unit, int]], room: int, ctx: AssemblyContext
    ) -> list[tuple[int, Unit, int]] | None:
        """The newest turn cut to ``room`` (newest first, as ``_fill`` gives), when ``kept`` (the newest units within
        ``room``) does not reach its question: the turn stays, older content gives way. None: it fits whole, the
        history asks nothing, or not even its question's first words and its calls fit."""
        if any(unit[0].role == "user" for _, unit, _ in kept):
            return None
        assert ctx.tokens is not None
        turn = await ctx.memo["walk"].newest_turn()
        units = [unit for _, unit, _ in reversed(turn)]
        cut = self._cuts.cut(ctx.session.id, units, room, ctx.tokens, cut_turn) if turn else None
        if cut is None:
            return None
        count = ctx.tokens.count_message
        return [(at, unit, sum(count(m) for m in unit)) for (at, _, _), unit in zip(turn, reversed(cut), strict=True)]

    @staticmethod
    async def _older_units(
        source: MessageSource, ctx: AssemblyContext, kept: list[tuple[int, Unit, int]], room: int
    ) -> list[Unit]:
        """The units older than ``kept`` (the newest, newest first), in conversation order: as many as ``room``
        holds, and the next older one."""
        walk = _walk(source, ctx)
        reach = await walk.within(sum(cost for _, _, cost in kept) + room)
        return [unit for _, unit, _ in reversed(walk.priced[len(kept) : len(reach) + 1])]

    async def _summary(
        self,
        recent_dropped: list[tuple[int, Message]],
        first_kept: int,
        room: int,
        ctx: AssemblyContext,
        *,
        model: bool,
    ) -> Message | None:
        """The summary of ``recent_dropped`` (oldest first, with positions) within ``room``: its oldest lines go
        first until it fits, so a smaller room cuts the same lines rather than asking for new ones."""
        assert ctx.tokens is not None
        body, covers = await self._summary_lines(recent_dropped, ctx, model=model)
        gap = first_kept - recent_dropped[-1][0] - 1  # messages between the summarised ones and those shown

        def header_for(start: int) -> str:  # extractive: a line per request or answer, the oldest cut first
            if covers is None:
                return summary_header(len(body) - start, first_kept, lines=True)
            return summary_header(covers[start], first_kept, gap=gap)

        # Skip the lines that cannot fit by their own counts (cached per line) before counting whole texts:
        # counting the text once per dropped line re-tokenised it dozens of times.
        count = ctx.tokens.count
        estimate = count(header_for(0)) + sum(count(line) + 1 for line in body) + MESSAGE_OVERHEAD
        start = 0
        while start < len(body) - 1 and estimate > room:
            estimate -= count(body[start]) + 1
            start += 1
        turn = recent_dropped[-1][1].turn
        while start < len(body):
            message = Message("system", f"{header_for(start)}\n" + "\n".join(body[start:]), turn=turn)
            if ctx.tokens.count_message(message) <= room:
                return message
            start += 1  # drop the oldest line until it fits
        return None

    async def _summary_lines(
        self, dropped: list[tuple[int, Message]], ctx: AssemblyContext, *, model: bool
    ) -> tuple[list[str], list[int] | None]:
        """The summary's lines, oldest first, and per line how many messages the lines from it on summarise (None:
        extracted lines, one per request or answer). ``model``: one summary per block, each made once."""
        messages = [message for _, message in dropped]
        if not model:
            return extractive_summary(messages), None
        lines: list[str] = []
        covers: list[int] = []
        covered = 0
        for block in reversed(_blocks(dropped)):  # newest first: what the lines from each block on cover adds up
            try:
                text = await self._block_summary(block, ctx)
            except Exception:  # the summary is a nicety: fall back to extraction
                return extractive_summary(messages), None
            written = [line for line in text.splitlines() if line.strip()]
            covered += len(block)
            lines[:0] = written
            covers[:0] = [covered] * len(written)
        return lines, covers

    async def _block_summary(self, block: list[Message], ctx: AssemblyContext) -> str:
        """One block's model-written summary: kept, being written (made ahead, ``ahead``: waited for, never asked
        twice), or written now."""
        key = self._block_key(block, ctx)
        text = self._summaries.get(key)
        if text is not None:
            return text
        writing = self._writing.get(key)
        if writing is not None and (text := await _waited(writing)) is not None:
            return text
        return await self._write(key, _transcript(block), ctx)

    def _block_key(self, block: list[Message], ctx: AssemblyContext) -> tuple[str, str]:
        """A block's summary's key, made of everything the summary is made from: the block's transcript and the bound
        and instruction it is written with (never the room it is shown in). Made once for the same messages
        (``BlockKeys``): every call's plans name the same few blocks."""
        session_id = ctx.session.id
        return self._block_keys.key(session_id, block, lambda b: _block_key(session_id, b))

    async def _write(self, key: tuple[str, str], transcript: str, ctx: AssemblyContext) -> str:
        """The summary of ``transcript`` asked of the model, under way in ``_writing`` until it is kept by ``key``."""
        assert ctx.summarizer is not None
        writing = asyncio.ensure_future(
            labelled(ctx.summarizer, "history_summary").summarize(
                transcript, max_tokens=SUMMARY_BLOCK_TOKENS, instruction=SUMMARY_INSTRUCTION
            )
        )
        self._writing[key] = writing
        writing.add_done_callback(partial(_written, self._writing, self._summaries, key))
        return await writing


_Ask = tuple[int, Directives, str | None, int | None]
"""A window a first step asked for: its budget (before a tool loop's room), directives and strategy, and the tokens
of the history when that window held all of it (None: it left some out, or recalled)."""


def _still_whole(whole: int | None, ctx: AssemblyContext, room: int) -> bool:
    """Whether the next turn's history (``ctx``'s, the turn's messages joined) is sure to fit ``room`` whole, given
    ``whole``, what it took when the last window held all of it: the joined messages' counts are at least what the
    walk prices them at (clearing only shortens). Only when they open a new unit (a question): a tool loop's results
    would complete a call the last walk left out."""
    history = ctx.session.message_source()
    if whole is None or not isinstance(history, JoinedMessages) or not history.messages:
        return False
    if history.messages[0].role != "user":
        return False
    assert ctx.tokens is not None
    return whole + sum(ctx.tokens.count_message(m) for m in history.messages) <= room


def _blocks(dropped: list[tuple[int, Message]]) -> list[list[Message]]:
    """The messages of ``dropped`` (oldest first, with positions) in their ``SUMMARY_BLOCK`` blocks, oldest first."""
    return [[m for _, m in group] for _, group in groupby(dropped, key=lambda p: p[0] // SUMMARY_BLOCK)]


def _block_key(session_id: str, block: Sequence[Message]) -> tuple[str, str]:
    """``ConversationHistoryModule._block_key``, made."""
    return session_id, content_key(_transcript(block), SUMMARY_BLOCK_TOKENS, SUMMARY_INSTRUCTION)


def _transcript(block: Sequence[Message]) -> str:
    """What a block's summary is written from: a line per message."""
    return "\n".join(f"{m.role}: {m.content} {media_note(m.parts)}".rstrip() for m in block)


async def _waited(writing: asyncio.Future[str]) -> str | None:
    """The summary another window (or the work ahead) is writing, waited for; None when that writing failed or was
    stopped: the caller then asks for it itself, as it would have. Shielded: the caller's cancellation stops only its
    own wait."""
    try:
        return await asyncio.shield(writing)
    except asyncio.CancelledError:
        if not writing.cancelled():
            raise  # the caller's own cancellation
        return None
    except Exception:
        return None


def _written(
    writing: dict[tuple[str, str], asyncio.Future[str]],
    summaries: SessionCache[str],
    key: tuple[str, str],
    done: asyncio.Future[str],
) -> None:
    """A summary's writing ended: no longer waited for, and kept when it was written (unless its session's summaries
    were purged meanwhile: then it is no longer under ``key``)."""
    if writing.get(key) is not done:
        return
    del writing[key]
    if not done.cancelled() and done.exception() is None:
        summaries.put(key, done.result())


_Priced = tuple[tuple[Message, ...], int, str]
"""A recalled unit's messages, its tokens and its text (repeats of what is chosen are left out)."""


def _packed(
    ranked: Sequence[RecalledUnit],
    recent: Sequence[tuple[int, Unit, int]],
    room: int,
    exponent: float,
    tokens: TokenCounter,
    known: dict[int, _Priced] | None = None,
    tail: Sequence[RecalledUnit] = (),
) -> tuple[list[RecalledUnit], set[int], int, int]:
    """``ranked`` units packed into ``room`` by relevance (best first; one that does not fit is passed over for the
    next that does), then what room is left packed from ``tail`` (the units ranked next) by the same rule, then
    filled from ``recent`` (newest first): ``_Packing``'s steps at once."""
    return _Packing(room, exponent, tokens, known).packed(ranked, tail, recent)


class _Packing:
    """A recall room packed in two steps: the best of the ranking's head in rank order (``head``: recall calls it as
    ``tail_room`` once the head is collected, so that its tail is collected only for the room they leave), then the
    rest of the head and the tail by value in that room and the newest older turns in what is left (``packed``).

    ``known``: units priced by ``tokens`` before, by position (kept for the next call; one whose messages changed is
    priced again): it keeps only the units this call priced, which the next call's ranking mostly holds again, not
    every unit a long session's rankings ever held (~1.3 entries a turn for the session's life, each its messages'
    tuple: 4 objects for every full pass of the collector to walk)."""

    def __init__(self, room: int, exponent: float, tokens: TokenCounter, known: dict[int, _Priced] | None) -> None:
        self.room, self.exponent, self.tokens = room, room_exponent(exponent, room), tokens
        self.known = known
        self.priced: dict[int, _Priced] = {} if known is None else known
        self.reached: set[int] = set()
        self.chosen: list[RecalledUnit] = []
        self.seen: set[str] = set()
        self.ranked: Sequence[RecalledUnit] | None = None
        """The head packed (None: not yet)."""
        self.rest: Sequence[RecalledUnit] = ()
        """The head's units past its part packed in rank order (``RECALL_RANKED_SHARE``): packed with the tail."""
        self.left = room

    def price(self, unit: RecalledUnit) -> _Priced:
        """``unit``'s messages, tokens and text: counted only for the units packing reaches, and again only when its
        messages changed (a unit made anew for another ranking holds the same messages: compared one by one, the
        same objects when the history is a list)."""
        self.reached.add(unit.position)
        found = self.priced.get(unit.position)
        messages = unit.messages
        if found is None or found[0] != messages:
            count = self.tokens.count_message
            if len(messages) == 1:  # most units
                found = (messages, count(messages[0]), messages[0].content)
            else:
                found = (messages, sum(count(m) for m in messages), "\n".join(m.content for m in messages))
            self.priced[unit.position] = found
        return found

    def head(self, ranked: tuple[RecalledUnit, ...]) -> int:
        """Packs the best of the ranking's head ``ranked`` (once), in rank order: the room they leave, 0 when even a
        one-word message would not fit."""
        self.ranked = ranked
        first = len(ranked)  # rank order alone, unless priced by length
        if self.exponent:
            first = _ranking_head([self.price(unit)[1] for unit in ranked], self.room * RECALL_RANKED_SHARE)
        self.left = _packed_by_value(ranked[:first], self.room, 0, self.price, self.chosen, self.seen)
        self.rest = ranked[first:]  # packed by value with the tail: a short tail unit may beat a long one here
        return self.left if _fits_one(self.left) else 0

    def packed(
        self, ranked: Sequence[RecalledUnit], tail: Sequence[RecalledUnit], recent: Sequence[tuple[int, Unit, int]]
    ) -> tuple[list[RecalledUnit], set[int], int, int]:
        """The head ``ranked``'s best packed (unless ``head`` did), then its rest and ``tail`` in the room left, then
        the newest older turns ``recent`` in what is left: the units chosen, in conversation order, the positions
        chosen by relevance, the tokens those take and the room left."""
        if self.ranked is None:  # not packed in recall's step: its tail holds every unit ranked next
            self.head(tuple(ranked))
            likely = self.left * LIKELY_CHARS_PER_TOKEN
            tail = [unit for unit in tail if sum(len(m.content) for m in unit.messages) <= likely]
        chosen, left = self.chosen, self.left
        rest = [*self.rest, *tail]  # the tail only for the room the head leaves, and only what may fit there priced
        if _fits_one(left) and rest:
            left = _packed_by_value(rest, left, self.exponent, self.price, chosen, self.seen, in_order=0.0)
        taken = {u.position for u in chosen}
        relevant_tokens = self.room - left
        left = _recency_filled(chosen, taken, recent, left, self.tokens)
        chosen.sort(key=lambda u: u.position)
        known = self.known
        if known is not None and len(known) > len(self.reached):
            for position in [p for p in known if p not in self.reached]:
                del known[position]
        return chosen, taken, relevant_tokens, left


def _recency_filled(
    chosen: list[RecalledUnit],
    taken: set[int],
    recent: Sequence[tuple[int, Unit, int]],
    left: int,
    tokens: TokenCounter,
) -> int:
    """``left`` filled onto ``chosen`` from ``recent`` (newest first), but the units ``taken``: the room left."""
    for position, messages, cost in recent:
        if position in taken:
            continue
        if cost > left:  # the newest that does not fit whole comes with its results cut, and ends the fill
            cut = cut_unit(messages, left, tokens)
            if cut is not None:
                chosen.append(RecalledUnit(position, cut, 0.0))
                left -= sum(tokens.count_message(m) for m in cut)
            break
        chosen.append(RecalledUnit(position, messages, 0.0))
        left -= cost
    return left


def _packed_by_value(
    ranked: Sequence[RecalledUnit],
    room: int,
    exponent: float,
    price: Callable[[RecalledUnit], _Priced],
    chosen: list[RecalledUnit],
    seen: set[str],
    *,
    in_order: float = RECALL_RANKED_SHARE,
) -> int:
    """``ranked`` packed into ``room`` onto ``chosen`` (leaving out repeats of ``seen`` texts): the ranking's head in
    rank order, the rest by relevance per token past ``RECALL_COST_FREE`` tokens, where long units pay for their
    length and short ones gain nothing from being short (see ``RECALL_COST_EXPONENT`` and ``RECALL_RANKED_SHARE``).
    The room left."""
    order: Iterable[int] = range(len(ranked))
    priced: list[_Priced] = []
    if exponent:  # every unit priced once, for its value
        priced = [price(unit) for unit in ranked]

        def value(at: int) -> tuple[float, int]:
            return -ranked[at].score / max(1, priced[at][1] / RECALL_COST_FREE) ** exponent, ranked[at].position

        head = _ranking_head([found[1] for found in priced], room * in_order)
        order = chain(range(head), sorted(range(head, len(ranked)), key=value))
    left = room

    def take(unit: RecalledUnit, found: _Priced) -> bool:
        """Choose ``unit`` (priced ``found``) unless too large for what is left or a repeat of what is chosen."""
        nonlocal left
        _, cost, text = found
        if cost > left or text in seen:
            return False
        chosen.append(unit)
        seen.add(text)
        left -= cost
        return True

    for at in order:
        if not _fits_one(left):
            break
        unit = ranked[at]
        if take(unit, priced[at] if priced else price(unit)) and unit.dated_by is not None:
            take(unit.dated_by, price(unit.dated_by))  # when it was said, if that fits too (a few tokens)
    return left


def room_exponent(exponent: float, room: int) -> float:
    """The cost exponent for a recall ``room``: at least ``RECALL_AMPLE_EXPONENT`` when the room is ample (its head
    gathers a 16K window's), unless ``exponent`` is 0 (rank order alone, as configured)."""
    return max(exponent, RECALL_AMPLE_EXPONENT) if exponent and is_ample(_head_tokens(room)) else exponent


def _head_tokens(room: int) -> int:
    """How far the ranking is gathered for a recall ``room`` before its tail: twice the room."""
    return room * 2


def _tail_tokens(room: int) -> int:
    """How deep the ranking is collected for a recall ``room``: its head (``_head_tokens``) and the tail past it."""
    return _head_tokens(room) + min(room * (RECALL_TAIL_DEPTH - 2), RECALL_TAIL_MAX_TOKENS)


def _fits_one(left: int) -> bool:
    """Whether even a one-word message fits in ``left`` tokens."""
    return left >= MESSAGE_OVERHEAD + 2


def _ranking_head(costs: Sequence[int], tokens: float) -> int:
    """How many of the best ranked units, in rank order, fit in ``tokens`` together (``costs``: theirs in order)."""
    spent = 0
    for at, cost in enumerate(costs):
        spent += cost
        if spent > tokens:
            return at
    return len(costs)


def _walk(source: MessageSource, ctx: AssemblyContext) -> _Walk:
    """The assembly's walk over ``source``, made at first use. Reused within this assembly only (condensing right after
    contributing, a surplus re-ask): a source's identity says nothing about its content (a list behind it may have
    grown since the last turn)."""
    walk = ctx.memo.get("walk")
    if walk is None:
        walk = ctx.memo["walk"] = _Walk(source, ctx)
    return walk


class _Walk:
    """The newest units priced one by one, kept for the assembly: a smaller budget takes a prefix of what was priced
    (a greedy walk under less is a prefix of this one), a larger one goes on from where the last stopped."""

    def __init__(self, source: MessageSource, ctx: AssemblyContext) -> None:
        assert ctx.tokens is not None
        self._count = ctx.tokens.count_message
        self._rule, self._turn = ClearRule.from_config(ctx.directives.config), ctx.session.turn_number
        self._by_size = ClearRule(over_tokens=self._rule.over_tokens)
        self._ages = UnnumberedAges(self._rule.after_turns)
        self._cleared: dict[int, Cleared] = ctx.memo.setdefault("cleared", {})
        self._pages = unit_pages(source, ctx.session.phase)
        self._page: list[tuple[int, Unit]] = []
        self._done = False
        self.priced: list[tuple[int, Unit, int]] = []
        """Every unit priced so far, newest first."""

    async def within(self, budget: int) -> list[tuple[int, Unit, int]]:
        used = 0
        for i, (_, _, cost) in enumerate(self.priced):
            used += cost
            if used > budget:
                return self.priced[:i]
        while (entry := await self._next()) is not None:
            self.priced.append(entry)
            used += entry[2]
            if used > budget:
                return self.priced[:-1]
        return list(self.priced)

    async def newest_turn(self) -> list[tuple[int, Unit, int]]:
        """The newest turn's units, newest first, back to its question (empty: the history asks nothing)."""
        i = 0
        while True:
            if i == len(self.priced):
                entry = await self._next()
                if entry is None:
                    return []
                self.priced.append(entry)
            if self.priced[i][1][0].role == "user":
                return self.priced[: i + 1]
            i += 1

    async def _next(self) -> tuple[int, Unit, int] | None:
        """The next older unit priced, or None when the history is walked (its pages are then closed)."""
        while not self._page:
            if self._done:
                return None
            try:
                self._page = list(reversed(await anext(self._pages)))  # popped from the end: newest first
            except StopAsyncIteration:
                self._done = True
                return None
        index, whole = self._page.pop()
        count = self._count
        unit, gone = clear_unit(whole, self._rule, self._turn, count, self._ages.old(index, whole))
        self._cleared.update((id(c.reference), c) for c in gone)
        # Priced as the size rule alone leaves it: what the age rule clears saves tokens but never lets the window
        # reach further back, so its start moves as smoothly as without it (a step of the age horizon would
        # otherwise pull it back and rewrite the whole prefix).
        priced = clear_unit(whole, self._by_size, self._turn, count)[0] if self._by_size.active else whole
        return index, unit, count(priced[0]) if len(priced) == 1 else sum(count(m) for m in priced)


MESSAGE_CUT_NOTE = "\n[... the rest of this message, {tokens:,} tokens, is not shown]"
"""Ends a request or an answer cut to fit (its beginning is sent as it was)."""
MIN_CUT_TOKENS = 48
"""Less room than this is not worth a cut message (its note and a line or two)."""


def cut_unit(unit: Unit, room: int, tokens: TokenCounter, *, messages: bool = False) -> Unit | None:
    """``unit`` cut to fit ``room``: a tool call, each result's beginning (shares by water-filling), still answering
    its call; with ``messages``, a request or an answer too, its beginning; each marked as cut. None: not even the
    call and the notes (or a message's first words) fit, or the unit is a message and ``messages`` is off."""
    if room <= 0:
        return None
    if len(unit) == 1:
        return _cut_message(unit[0], room, tokens) if messages else None
    count = tokens.count_message
    head, results = unit[0], unit[1:]
    notes = [noted(r, tokens) for r in results]
    fixed = count(head) + sum(count(n) for n in notes)
    if fixed >= room:
        return None
    cut = _cut_results(unit, water_fill([tokens.count(r.content) for r in results], room - fixed), tokens)
    return cut if sum(count(m) for m in cut) <= room else None


def cut_turn(units: Sequence[Unit], room: int, tokens: TokenCounter) -> tuple[Unit, ...] | None:
    """A turn (``units`` in order, from its question) within ``room``: requests and answers whole, every call with
    its results, the results' beginnings sharing what is left (water-filling), each marked as cut; when even that
    does not fit, the question cut from its end too. None: not even the calls, the notes and a cut question fit."""
    count = tokens.count_message
    results = [r for unit in units[1:] for r in unit[1:]]
    notes = [count(noted(r, tokens)) for r in results]
    fixed = sum(count(unit[0]) for unit in units) + sum(notes)  # every request, answer and call, and each note
    if fixed > room:  # the question gives way: its beginning, and the results only their notes
        question = _cut_message(units[0][0], room - fixed + count(units[0][0]), tokens)
        if question is None:
            return None
        fixed += count(question[0]) - count(units[0][0])
        units = [question, *units[1:]]
    # A turn cut to the last token of its room keeps a token per CHUNK_CHARS spare: it fits by litellm's count too.
    for attempt in range(4):  # a cut text and its note may count a token or two more together than apart
        shares = _shares(units, room - fixed, tokens)
        out = [_cut_results(unit, share, tokens) for unit, share in zip(units, shares, strict=True)]
        over = sum(count(m) + len(m.content) // CHUNK_CHARS for unit in out for m in unit) - room
        if over <= 0:
            return tuple(out)
        fixed += over * 4**attempt  # a cut ends at a sentence: a share a token smaller may give the same text
    return None


def _shares(units: Sequence[Unit], room: int, tokens: TokenCounter) -> list[list[int]]:
    """Each unit's results' shares of ``room`` (water-filled over all of them), per unit."""
    sizes = [[tokens.count(r.content) for r in unit[1:]] for unit in units]
    flat = iter(water_fill([size for unit in sizes for size in unit], room))
    return [[next(flat) for _ in unit] for unit in sizes]


def _cut_results(unit: Unit, shares: list[int], tokens: TokenCounter) -> Unit:
    """``unit`` with each result cut to its share of tokens (whole when it fits), marked as cut."""
    return (unit[0], *(cut_result(result, share, tokens) for result, share in zip(unit[1:], shares, strict=True)))


def _cut_message(message: Message, room: int, tokens: TokenCounter) -> Unit | None:
    """A user or assistant message's beginning within ``room``, marked as cut (None: a call, media, or too little
    room for a few words)."""
    if message.role not in ("user", "assistant") or message.tool_calls or message.parts or not message.content:
        return None
    whole = tokens.count(message.content)
    note_room = tokens.count_message(
        dataclasses.replace(message, content=MESSAGE_CUT_NOTE.format(tokens=whole), tokens=None)
    )
    text = cut_to_tokens(message.content, room - note_room, tokens)
    if len(text) < MIN_CUT_CHARS:
        return None
    note = MESSAGE_CUT_NOTE.format(tokens=whole - tokens.count(text))
    cut = dataclasses.replace(message, content=text + note, tokens=None)
    return (cut,) if tokens.count_message(cut) <= room else None


MIN_CUT_CHARS = 40
"""A message cut to fewer characters than this says nothing worth its room."""


LOOP_TAIL_PCT = 25
"""With tools, the history's stable part (from the cache block's start) takes at most this much less of its room
than it could: the rest goes to the per-turn tail, which the next steps of the turn's tool loop cut from its end to
make room for their calls and results (see the handler's fill pass). So each step sends the first step's history
part, or its beginning, and the provider's prompt cache holds within the turn."""


def _stable_room(room: int, ctx: AssemblyContext) -> int:
    """The room of the history's stable part: ``room``, less ``LOOP_TAIL_PCT`` when the turn may run a tool loop."""
    return room * (100 - LOOP_TAIL_PCT) // 100 if ctx.tools or ctx.continuation else room


def _within(kept: list[tuple[int, Unit, int]], room: int) -> list[tuple[int, Unit, int]]:
    """The newest of ``kept`` (newest first) within ``room`` (at least one)."""
    used = 0
    for i, (_, _, cost) in enumerate(kept):
        used += cost
        if used > room:
            return kept[: max(i, 1)]
    return kept


def _fitted_tail(tail: list[Unit], room: int, tokens: TokenCounter) -> list[Unit]:
    """The newest units of ``tail`` (in conversation order) that fit in ``room`` with the marker before them, and
    the next older one cut to fit what is left (when enough is left to be worth a cut: the window stays full)."""
    count = tokens.count_message
    left = room - count(Message("system", TAIL_MARKER))
    start = len(tail)
    while start > 0 and (cost := sum(count(m) for m in tail[start - 1])) <= left:
        left -= cost
        start -= 1
    if start == 0 or left < MIN_CUT_TOKENS:
        return tail[start:]
    shortened = cut_unit(tail[start - 1], left, tokens, messages=True)
    return [shortened, *tail[start:]] if shortened is not None else tail[start:]


def _indexed(
    indexing: dict[Any, asyncio.Future[HistoryQuestion]], key: Any, asking: asyncio.Future[HistoryQuestion]
) -> None:
    """A background ask is done: later calls wait for recall again."""
    indexing.pop(key, None)
    if not asking.cancelled():
        asking.exception()  # retrieved, not logged: the next call's own ask meets its cause again


def _recall_reserve(config: Any, budget: int) -> int:
    """Room kept for recalling cleared tool results (0 unless results are cleared and recall is on)."""
    if not ClearRule.from_config(config).active:
        return 0
    room = int(budget * option(config, "recall_cleared_pct", RECALL_CLEARED_PCT, minimum=0) / 100)
    return min(room - room % SUMMARY_ROOM_STEP, budget)


async def _recall_cleared(
    units: tuple[Unit, ...], ctx: AssemblyContext, room: int
) -> tuple[Message | None, dict[str, Any]]:
    """A note recalling the cleared tool results among ``units`` that the question needs (within ``room``; the
    caller puts it after the history's stable part), and what the snapshot says about both (nothing when no rule
    clears)."""
    if not ClearRule.from_config(ctx.directives.config).active:
        return None, {}
    known: dict[int, Cleared] = ctx.memo.get("cleared", {})
    cleared = [known[id(m)] for unit in units for m in unit if id(m) in known]
    assert ctx.tokens is not None
    wanted = option(ctx.directives.config, "recall_cleared_pct", RECALL_CLEARED_PCT, minimum=0) > 0
    tokens, turn = ctx.tokens, ctx.session.turn_number
    note, found, why = recall_cleared(
        ctx.query, cleared, room if wanted else 0, tokens.count_message, tokens.count, turn
    )
    return note, {
        "tool_results_cleared": {
            "count": len(cleared),
            "tokens": sum(c.tokens for c in cleared),
            "results": [c.describe() for c in cleared[-SHOWN_CLEARED:]],
        },
        "tool_results_recalled": [r.describe() for r in found],
        "tool_results_recall": why,
    }

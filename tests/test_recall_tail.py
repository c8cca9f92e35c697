"""The ranking's tail: recall collects the units ranked after its head in the same call, and the history module packs
them only in the room the head leaves, before the newest older turns (docs/knowledge.md, "The ranking's tail fills
the room")."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, RecalledUnit, RecallLead, RecallRanking, Session
from components.context_window.recall.messages import SessionRecall, rough_tokens
from components.context_window.token_estimator import TokenEstimator
from modules.conversation_history.handler import RECALL_MARKER, _packed
from tests.support import conversation, make_ctx, module_ctx, words

FACT = "Something with tofu or chickpeas again please."
RECALL = {"recall_pct": 60, "cache_block": 0}


class FixedRanking:
    """A ``HistoryRecall`` whose ranking is given (best first): units until ``enough_tokens`` of their rough tokens,
    then the tail until ``tail_tokens``, as ``SessionRecall`` collects them; every older message leads."""

    def __init__(self, order: Sequence[int]) -> None:
        self.order = order

    async def recall(
        self,
        session: Session,
        query: str,
        *,
        before: int,
        enough_tokens: int,
        tail_tokens: int = 0,
        tail_room: Callable[[tuple[RecalledUnit, ...]], int] | None = None,
    ) -> RecallRanking:
        units: list[RecalledUnit] = []
        reached: list[int] = []  # the rough tokens of the units up to each
        for position in [p for p in self.order if p < before]:
            if reached and reached[-1] >= max(enough_tokens, tail_tokens):
                break
            units.append(RecalledUnit(position, (session.messages[position],), 1.0 / (60 + len(units))))
            reached.append((reached[-1] if reached else 0) + rough_tokens(session.messages[position]))
        head = next((n + 1 for n, tokens in enumerate(reached) if tokens >= enough_tokens), len(units))
        return RecallRanking(tuple(units[:head]), "lexical", tail=tuple(units[head:]))

    async def lead(
        self, session: Session, query: str, *, split: int, continues_from: float | None = None
    ) -> RecallLead:
        return RecallLead(None, math.inf)


async def test_evidence_ranked_past_twice_the_room_fills_the_room_its_head_leaves(builtin_registry):
    """Long replies ranked first take twice the room (one fits, the rest of the head does not): the short message
    ranked next holds the answer and fits in the room left, which used to go to the newest older turns (fails on
    main: the fact is not in the window)."""
    messages = conversation(60)
    messages[8] = Message("user", FACT, turn=5)
    long_ones = [20, 40, 60]
    for n, at in enumerate(long_ones):
        messages[at] = Message("user", f"dinner plan {n}: " + words(520, "lentils"), turn=at // 2 + 1)
    ctx = make_ctx(messages=messages, query="What kind of dinner recipe would I like tonight?")
    ctx = module_ctx(replace(ctx, history_recall=FixedRanking([*long_ones, 8])), config=RECALL)
    history = builtin_registry.modules["conversation_history"]
    c = await history.contribute(1_500, ctx)
    contents = [m.content for m in c.messages()]
    assert any(text.startswith(RECALL_MARKER) for text in contents)
    assert FACT in contents
    assert sum(ctx.tokens.count_message(m) for m in c.messages()) <= 1_500


async def test_nothing_relevant_adds_nothing_from_the_tail():
    """An abstention (a name no message mentions) ranks nothing: no head, and no tail however deep it is asked."""
    messages = conversation(40)
    ranking = await SessionRecall().recall(
        Session("s", messages=messages), "What is Dmitri's dog called?", before=70, enough_tokens=500, tail_tokens=10**6
    )
    assert ranking.units == () and ranking.tail == () and ranking.reason


@settings(max_examples=30, deadline=None)
@given(st.integers(50, 3_000), st.sampled_from([0, 2, 4, 8]))
def test_the_tail_goes_on_from_the_head_as_one_deeper_ranking_would(enough, depth):
    """The head and its tail are the ranking collected ``tail_tokens`` deep, cut where ``enough_tokens`` is reached."""
    messages = conversation(120, words_per_message=25)
    for n in range(0, 240, 9):
        messages[n] = Message(messages[n].role, f"the dinner {n} was " + words(n % 40, "lentils"), turn=n // 2 + 1)
    session = Session("s", messages=messages)

    def recalled(**tokens: int) -> RecallRanking:
        return asyncio.run(SessionRecall().recall(session, "What was the dinner?", before=200, **tokens))

    ranking = recalled(enough_tokens=enough, tail_tokens=enough * depth)
    alone = recalled(enough_tokens=enough)
    deeper = recalled(enough_tokens=max(enough, enough * depth))
    assert ranking.units == alone.units
    assert ranking.units + ranking.tail == deeper.units


def _unit(position: int, size: int) -> tuple[Message, ...]:
    return (Message("user" if position % 2 else "assistant", f"line {position}: " + words(size, "beans")),)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 300), min_size=1, max_size=30),
    st.data(),
    st.integers(0, 2_000),
    st.sampled_from([0.0, 0.5, 1.0]),
)
def test_the_tail_only_takes_room_the_recency_fill_had(sizes, data, room, exponent):
    """Within the room (counted message by message), the head's choice kept whole (main's), the tail's units chosen
    by relevance only in what the head left, and only the newest older turns giving way."""
    estimator = TokenEstimator()
    units = [RecalledUnit(p, _unit(p, size), 1.0 / (60 + rank)) for rank, (p, size) in enumerate(enumerate(sizes))]
    cut = data.draw(st.integers(0, len(units)))
    head, tail = units[:cut], units[cut:]
    newest = data.draw(st.lists(st.integers(1, 300), max_size=10))
    recent = [(100 + n, _unit(100 + n, size), 0) for n, size in enumerate(newest)]
    recent = [(p, unit, estimator.count_message(unit[0])) for p, unit, _ in reversed(recent)]
    chosen, taken, relevant, left = _packed(head, recent, room, exponent, estimator, None, tail)
    main_chosen, main_taken, main_relevant, _ = _packed(head, recent, room, exponent, estimator, None)
    assert sum(estimator.count_message(m) for u in chosen for m in u.messages) == room - left <= room
    assert main_taken <= taken <= {u.position for u in units}
    assert {u.position for u in chosen} - taken <= {p for p, _, _ in recent}
    assert {u.position for u in main_chosen} - {u.position for u in chosen} <= {p for p, _, _ in recent}
    assert relevant >= main_relevant
    assert all(u.position in {t.position for t in tail} for u in chosen if u.position in taken - main_taken)

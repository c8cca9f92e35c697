"""The ranking's tail: recall collects the units ranked after its head in the same call, and the history module packs
them only in the room the head leaves, before the newest older turns (docs/knowledge.md, "The ranking's tail fills
the room")."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, RecalledUnit, RecallLead, RecallRanking, Session
from components.context_window.fitting import LIKELY_CHARS_PER_TOKEN
from components.context_window.recall.messages import (
    WHOLE_TEXT_ROOM,
    HistoryIndex,
    SessionRecall,
    collect_units,
    rough_tokens,
)
from components.context_window.token_estimator import MESSAGE_OVERHEAD, TokenEstimator
from modules.conversation_history.handler import (
    RECALL_COST_FREE,
    RECALL_MARKER,
    RECALL_RANKED_SHARE,
    _packed,
    _Packing,
    _tail_tokens,
)
from tests.support import conversation, make_ctx, module_ctx, words

FACT = "Something with tofu or chickpeas again please."
RECALL = {"recall_pct": 60, "cache_block": 0}


class FixedRanking:
    """A ``HistoryRecall`` whose ranking is given (best first): units until ``enough_tokens`` of their rough tokens,
    then the tail until ``tail_tokens``, as ``SessionRecall`` collects them; every older message leads."""

    def __init__(self, order: Sequence[int]) -> None:
        self.order = order

    async def ask(self, session: Session, query: str) -> FixedQuestion:
        return FixedQuestion(self.order, session)


@dataclass
class FixedQuestion:
    """``FixedRanking``'s answers for one session."""

    order: Sequence[int]
    session: Session

    async def recall(
        self,
        *,
        before: int,
        enough_tokens: int,
        tail_tokens: int = 0,
        tail_room: Callable[[tuple[RecalledUnit, ...]], int] | None = None,
    ) -> RecallRanking:
        units: list[RecalledUnit] = []
        reached: list[int] = []  # the rough tokens of the units up to each
        messages = self.session.messages
        for position in [p for p in self.order if p < before]:
            if reached and reached[-1] >= max(enough_tokens, tail_tokens):
                break
            units.append(RecalledUnit(position, (messages[position],), 1.0 / (60 + len(units))))
            reached.append((reached[-1] if reached else 0) + rough_tokens(messages[position]))
        head = next((n + 1 for n, tokens in enumerate(reached) if tokens >= enough_tokens), len(units))
        return RecallRanking(tuple(units[:head]), "lexical", tail=tuple(units[head:]))

    async def lead(self, *, split: int, continues_from: float | None = None) -> RecallLead:
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
    """Within the room (counted message by message), the units chosen by relevance are the head's and the tail's,
    the newest older turns fill what they leave, and the head and its tail pack as the rule written out does."""
    estimator = TokenEstimator()
    units = [RecalledUnit(p, _unit(p, size), 1.0 / (60 + rank)) for rank, (p, size) in enumerate(enumerate(sizes))]
    cut = data.draw(st.integers(0, len(units)))
    head, tail = units[:cut], units[cut:]
    newest = data.draw(st.lists(st.integers(1, 300), max_size=10))
    recent = [(100 + n, _unit(100 + n, size), 0) for n, size in enumerate(newest)]
    recent = [(p, unit, estimator.count_message(unit[0])) for p, unit, _ in reversed(recent)]
    chosen, taken, relevant, left = _packed(head, recent, room, exponent, estimator, None, tail)
    _, main_taken, _, _ = _packed(head, recent, room, exponent, estimator, None)
    assert sum(estimator.count_message(m) for u in chosen for m in u.messages) == room - left <= room
    assert main_taken <= {u.position for u in head} and taken <= {u.position for u in units}
    assert {u.position for u in chosen} - taken <= {p for p, _, _ in recent}
    assert sorted(_oracle_packed(head, tail, room, exponent, estimator)[0]) == sorted(taken)
    assert relevant == sum(estimator.count_message(m) for u in chosen if u.position in taken for m in u.messages)


def _oracle_packed(
    head: Sequence[RecalledUnit], tail: Sequence[RecalledUnit], room: int, exponent: float, tokens: TokenEstimator
) -> tuple[list[int], int]:
    """The packing rule written out, over the whole tail: the head's best units in rank order until half the room,
    then the rest of the head and the tail's units whose characters may fit the room left, by score per token past
    ``RECALL_COST_FREE``; a unit taken when it fits and repeats no text taken, its dated line after it.
    The positions taken, in order, and the room left."""
    taken: list[int] = []
    seen: set[str] = set()

    def cost(unit: RecalledUnit) -> int:
        return sum(tokens.count_message(m) for m in unit.messages)

    def pack(units: Sequence[RecalledUnit], left: int, *, ranked: bool) -> int:
        order = list(units)
        if exponent and ranked:  # by score per token past ``RECALL_COST_FREE``
            order = sorted(units, key=lambda u: (-u.score / max(1, cost(u) / RECALL_COST_FREE) ** exponent, u.position))
        for unit in order:
            if left < MESSAGE_OVERHEAD + 2:
                break
            for one in (unit, unit.dated_by):
                text = "\n".join(m.content for m in one.messages) if one is not None else ""
                if one is None or cost(one) > left or text in seen:
                    break
                taken.append(one.position)
                seen.add(text)
                left -= cost(one)
        return left

    first, spent = 0, 0  # the head's best units in rank order until half the room
    while exponent and first < len(head) and spent + cost(head[first]) <= room * RECALL_RANKED_SHARE:
        spent += cost(head[first])
        first += 1
    left = pack(head if not exponent else head[:first], room, ranked=False)
    if left >= MESSAGE_OVERHEAD + 2:  # then the rest of the head and the tail's units that may fit, by value
        likely = left * LIKELY_CHARS_PER_TOKEN
        fitting = [u for u in tail if sum(len(m.content) for m in u.messages) <= likely]
        left = pack([*head[first:], *fitting] if exponent else fitting, left, ranked=True)
    return taken, left


def _chat(shapes: Sequence[tuple[int, int]]) -> list[Message]:
    """A chat from (kind, size): a line of ``size`` words, a session's dated opening, or a tool call whose result
    holds them."""
    messages: list[Message] = []
    for n, (kind, size) in enumerate(shapes):
        if kind == 0:
            messages.append(Message(("user", "assistant")[n % 2], f"line {n}: " + words(size, "beans")))
        elif kind == 1:
            messages.append(Message("user", f"[{n % 28 + 1} March 2024] Hey!"))
        else:
            call = {"id": f"c{n}", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            messages.append(Message("assistant", "", tool_calls=(call,)))
            messages.append(Message("tool", f"result {n}: " + words(size, "data"), tool_call_id=f"c{n}"))
    return messages


def _asked_index(
    messages: list[Message], positions: np.ndarray, scores: np.ndarray, dates: bool, known: bool, gathered: int
) -> HistoryIndex:
    """``messages`` indexed as a session's index may be when ``positions`` is ranked: every unit's rough tokens known
    from another ranking (``known``), this ranking gathered before until ``gathered`` tokens (0: not asked)."""
    index = HistoryIndex()
    index.add(messages)
    if known:
        collect_units(index, positions[::-1].copy(), scores, "lexical", None, None, 10**9, dates=dates)
    if gathered:  # a window before asked this ranking with more room: its units gathered past the head
        collect_units(index, positions, scores, "lexical", None, None, gathered, dates=dates)
    return index


def _whole(
    messages: list[Message], positions: np.ndarray, scores: np.ndarray, enough: int, tail_tokens: int, dates: bool
) -> RecallRanking:
    """The head until ``enough`` and the whole tail until ``tail_tokens``, as a head asked as deep (every unit made),
    on an index of its own."""
    index = HistoryIndex()
    index.add(messages)
    head = collect_units(index, positions, scores, "lexical", None, None, enough, dates=dates).units
    deeper = collect_units(index, positions, scores, "lexical", None, None, tail_tokens, dates=dates).units
    return RecallRanking(head, "lexical", tail=deeper[len(head) :])


def _may_fit(units: Sequence[RecalledUnit], room: int) -> tuple[RecalledUnit, ...]:
    return tuple(u for u in units if sum(len(m.content) for m in u.messages) <= room * LIKELY_CHARS_PER_TOKEN)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([0, 0, 0, 1, 2]), st.integers(0, 120)), min_size=1, max_size=80),
    st.integers(1, 800),
    st.integers(0, 3_000),
    st.integers(0, 150),
    st.sampled_from([0, 1, 3]),
    st.booleans(),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_a_tail_asked_for_a_room_is_the_whole_tails_units_that_may_fit_it(
    shapes, enough, deeper, room, asked_before, dates, known, rng
):
    """``tail_room`` says the room the head leaves: the tail is then the units of the whole tail (collected unasked,
    as a head asked as deep) whose characters may fit it, however far the ranking was gathered before and whatever
    the index knows of its units from other rankings (a unit known too long is passed over unmade)."""
    messages = _chat(shapes)
    positions = np.asarray(rng.sample(range(len(messages)), len(messages)), dtype=np.intp)
    scores = np.linspace(1.0, 0.1, len(messages))
    index = _asked_index(messages, positions, scores, dates, known, enough * asked_before)
    heads: list[tuple[RecalledUnit, ...]] = []

    def tail_room(head: tuple[RecalledUnit, ...]) -> int:
        heads.append(head)
        return room

    tail_tokens = enough + deeper
    lazy = collect_units(
        index, positions, scores, "lexical", None, None, enough, tail_tokens, dates=dates, tail_room=tail_room
    )
    whole = _whole(messages, positions, scores, enough, tail_tokens, dates)
    assert heads == [whole.units] and lazy.units == whole.units
    assert lazy.tail == (_may_fit(whole.tail, room) if room and deeper else ())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([0, 0, 0, 1, 2]), st.integers(0, 300)), min_size=1, max_size=80),
    st.integers(10, 600),
    st.sampled_from([0.0, 0.5, 1.0]),
    st.booleans(),
    st.sampled_from([0, 3, 8]),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_the_tail_made_for_the_room_the_head_leaves_chooses_as_the_whole_tail_would(
    shapes, room, exponent, dates, asked_before, known, rng
):
    """Recall makes the tail only for the room the head leaves (``tail_room``: the head packed in its step, the
    units whose characters cannot fit passed over unmade): the window chooses what an oracle packing the whole
    tail, collected unasked, chooses."""
    messages = _chat(shapes)
    estimator = TokenEstimator()
    positions = np.asarray(rng.sample(range(len(messages)), len(messages)), dtype=np.intp)
    scores = np.linspace(1.0, 0.1, len(messages))
    index = _asked_index(messages, positions, scores, dates, known, room * asked_before)
    packing = _Packing(room, exponent, estimator, None)
    lazy = collect_units(
        index,
        positions,
        scores,
        "lexical",
        None,
        None,
        room * 2,
        _tail_tokens(room),
        dates=dates,
        tail_room=packing.head,
    )
    chosen, taken, _, left = packing.packed(lazy.units, lazy.tail, ())
    whole = _whole(messages, positions, scores, room * 2, _tail_tokens(room), dates)
    expected, expected_left = _oracle_packed(whole.units, whole.tail, room, exponent, estimator)
    assert lazy.units == whole.units
    assert sorted(expected) == [u.position for u in chosen] and set(expected) >= taken
    assert left == expected_left


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 1_500), min_size=1, max_size=80),
    st.one_of(st.integers(0, 7_999), st.integers(8_000, 24_000)),
    st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5]),
)
def test_an_ample_room_is_packed_by_relevance_per_token_in_full(sizes, room, exponent):
    """At an ample recall room (twice it reaches ``WHOLE_TEXT_ROOM``: a 16K window's), the units past the ranking's
    head are packed by score per token in full (the oracle's rule at exponent 1, or the configured one when higher;
    0 stays rank order); below it, at the configured exponent. Fails on main (0.5 at every room)."""
    estimator = TokenEstimator()
    units = [RecalledUnit(p, _unit(p, size), 1.0 / (60 + p)) for p, size in enumerate(sizes)]
    ample = room * 2 >= WHOLE_TEXT_ROOM
    expected, expected_left = _oracle_packed(
        units, [], room, max(exponent, 1.0) if ample and exponent else exponent, estimator
    )
    chosen, _, _, left = _packed(units, (), room, exponent, estimator)
    assert [u.position for u in chosen] == sorted(expected) and left == expected_left


def test_at_16k_short_lines_ranked_below_a_long_ramble_keep_their_room():
    """A 16K window's recall room (~11,600 tokens) past its rank-order half: a 1,200-token unit ranked just above
    sixty 100-token lines no longer takes the room of twelve of them (by score per token it holds 1 / 30 of its score
    against their 1 / 2.5); a 4K room's packing is unchanged (the long unit first, as on main, where 16K was too)."""
    estimator = TokenEstimator()

    def packed(room: int) -> tuple[bool, int]:
        """Whether the ramble is chosen, and how many of the lines."""
        head: list[RecalledUnit] = []
        while sum(estimator.count_message(u.messages[0]) for u in head) < room // 2 - 120:  # the rank-order half
            head.append(RecalledUnit(len(head), _unit(len(head), 100), 1.0))
        first = len(head)
        ramble = RecalledUnit(first, _unit(first, 1_200), 0.5)
        lines = [RecalledUnit(first + 1 + i, _unit(first + 1 + i, 100), 0.1) for i in range(60)]
        chosen = {u.position for u in _packed([*head, ramble, *lines], (), room, 0.5, estimator)[0]}
        return first in chosen, len(chosen - set(range(first + 1)))

    (ramble_16k, lines_16k), (ramble_4k, lines_4k) = packed(11_600), packed(3_000)
    assert not ramble_16k and lines_16k >= 50
    assert ramble_4k and lines_4k <= 3

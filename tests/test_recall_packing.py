"""Recall's packing (conversation_history's ``_packed``): each ranked unit priced once a pack, and the units chosen
those the one-by-one packing (the oracle below, as it was written first) chooses."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from components.context_window.base import Message, RecalledUnit
from components.context_window.token_estimator import MESSAGE_OVERHEAD, estimator_for
from tda.builtins import module_registry

HANDLER = sys.modules[type(module_registry(entry_point_group=None).load().get("conversation_history")).__module__]
TOKENS = estimator_for("gpt-4o")


class Looked(dict):  # type: ignore[type-arg]
    """A price cache that counts its look-ups."""

    gets = 0

    def get(self, key: Any, default: Any = None) -> Any:
        self.gets += 1
        return super().get(key, default)


def _units(sizes: Sequence[int], scores: Sequence[float], dated: bool = False) -> list[RecalledUnit]:
    when = RecalledUnit(10_000, (Message("user", "[2 March 2024] Hey!"),), 0.0) if dated else None
    return [
        RecalledUnit(i, (Message("user", f"unit {i}: " + "word " * size),), score, when)
        for i, (size, score) in enumerate(zip(sizes, scores, strict=False))
    ]


def test_each_ranked_unit_is_priced_once_a_pack():
    """~200 units a pack at 100 gateway turns, each looked up in the price cache by its value, the ranking's head and
    the take (2-3 times): once now."""
    ranked = _units([5 + (i * 37) % 300 for i in range(200)], [1.0 - i / 400 for i in range(200)])
    known = Looked()
    HANDLER._packed(ranked, [], 4_000, 0.5, TOKENS, known)
    assert known.gets == len(ranked)
    again = Looked(known)
    chosen = HANDLER._packed(ranked, [], 4_000, 0.5, TOKENS, again)
    assert again.gets == len(ranked) and chosen == HANDLER._packed(ranked, [], 4_000, 0.5, TOKENS)


def _oracle(
    ranked: Sequence[RecalledUnit], recent: Sequence[tuple[int, Any, int]], room: int, exponent: float
) -> tuple[list[RecalledUnit], set[int], int, int]:
    """The packing one unit at a time, each priced when asked (the first version)."""
    count = TOKENS.count_message

    def price(unit: RecalledUnit) -> tuple[int, str]:
        return sum(count(m) for m in unit.messages), "\n".join(m.content for m in unit.messages)

    def value(unit: RecalledUnit) -> tuple[float, int]:
        return -unit.score / max(1, price(unit)[0] / HANDLER.RECALL_COST_FREE) ** exponent, unit.position

    by_value = list(ranked)
    if exponent:
        spent, head = 0, len(ranked)
        for at, unit in enumerate(ranked):
            spent += price(unit)[0]
            if spent > room * HANDLER.RECALL_RANKED_SHARE:
                head = at
                break
        by_value = [*ranked[:head], *sorted(ranked[head:], key=value)]
    chosen: list[RecalledUnit] = []
    seen: set[str] = set()
    left = room

    def take(unit: RecalledUnit) -> bool:
        nonlocal left
        cost, text = price(unit)
        if cost > left or text in seen:
            return False
        chosen.append(unit)
        seen.add(text)
        left -= cost
        return True

    for unit in by_value:
        if left < MESSAGE_OVERHEAD + 2:
            break
        if take(unit) and unit.dated_by is not None:
            take(unit.dated_by)
    taken = {u.position for u in chosen}
    relevant = room - left
    for position, messages, cost in recent:
        if position in taken:
            continue
        if cost > left:
            cut = HANDLER.cut_unit(messages, left, TOKENS)
            if cut is not None:
                chosen.append(RecalledUnit(position, cut, 0.0))
                left -= sum(count(m) for m in cut)
            break
        chosen.append(RecalledUnit(position, messages, 0.0))
        left -= cost
    chosen.sort(key=lambda u: u.position)
    return chosen, taken, relevant, left


scores = st.floats(min_value=0.0, max_value=5.0, allow_nan=False)


@given(
    st.lists(st.tuples(st.integers(0, 120), scores), max_size=60),
    st.integers(0, 3_000),
    st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    st.booleans(),
    st.integers(0, 4),
    st.integers(0, 1),
)
def test_packing_chooses_what_the_one_by_one_packing_chooses(sized, room, exponent, dated, recent_n, repeat):
    ranked = _units([s for s, _ in sized], [score for _, score in sized], dated)
    if repeat and ranked:  # a unit whose text repeats another's is passed over
        ranked.append(RecalledUnit(500, ranked[0].messages, 0.1))
    recent = [(1_000 + i, (Message("assistant", "recent " * (20 * i + 1)),), 0) for i in range(recent_n)]
    recent = [(p, u, sum(TOKENS.count_message(m) for m in u)) for p, u, _ in recent]
    assert HANDLER._packed(ranked, recent, room, exponent, TOKENS, {}) == _oracle(ranked, recent, room, exponent)

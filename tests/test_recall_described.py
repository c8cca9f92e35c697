"""A question describing someone ("the person who vouched for Theo"): the message fitting the description and the
one telling the answer each name that person, and each is told in its own words."""

from __future__ import annotations

import numpy as np

from components.context_window.base import Message
from components.context_window.recall.messages import DESCRIBED_HOP_FROM, HistoryIndex

VOUCHED = "What animals does the person who vouched for Theo look after these days?"
REFERENCE = "Theo: My old mentor Greta wrote me the loveliest reference, I teared up reading it."
AT = 3
"""Where the reference is: apart from the walks (a hit's short neighbours come with it)."""
ALPACAS = "Theo: Greta retired to a farm in Wales and keeps alpacas now, living the dream."


def _unit(*weights: float) -> list[float]:
    vector = np.asarray(weights + (0.0,) * (6 - len(weights)))
    return list(vector / np.linalg.norm(vector))


def chat(near: int) -> tuple[list[str], list[list[list[float]]]]:
    """60 lines of chatter far from the question, ``near`` of them (from the 10th) nearer it than the reference."""
    texts = [f"Theo: rain again, number {t} of the week, the bus was late" for t in range(60)]
    vectors = [[_unit(0.1, 0, 1, t / 60)] for t in range(60)]  # each its own: no stock line
    for at in range(10, 10 + near):
        texts[at] = f"Theo: a walk by the canal this morning, number {at}"
        vectors[at] = [_unit(1.0, 0, 1.0 - at / 40)]
    texts[AT], vectors[AT] = REFERENCE, [_unit(0.3, 0, 0, 0, 1)]
    return texts, vectors


def ranked(texts: list[str], vectors: list[list[list[float]]], before: int) -> list[int]:
    index = HistoryIndex()
    index.add([Message("user", t) for t in texts], vectors)
    positions, _, _, _ = index.rank(index.focus(VOUCHED), np.asarray(_unit(1.0)), before)
    return positions.tolist()


def test_the_answer_naming_the_one_a_deeper_hit_describes_ranks_just_below_it():
    """The reference is about the tenth best (every walk is nearer the question); the one other message naming Greta
    says what she does now in no word of the question and last in meaning. It comes below its hit
    (``NEIGHBOUR_SHARE`` of its score), in the best ``DESCRIBED_HOP_FROM``."""
    texts, vectors = chat(near=8)
    texts[45], vectors[45] = ALPACAS, [_unit(0, 0, 0, 0, 0, 1)]
    order = ranked(texts, vectors, len(texts))
    assert 3 <= order.index(AT) < DESCRIBED_HOP_FROM  # past the second hop's sources, within the pairs'
    assert order.index(AT) < order.index(45) < DESCRIBED_HOP_FROM  # on main: last


def test_the_message_a_shown_answer_describes_its_person_by_comes_back_first():
    """The window shows the answer (Greta and her alpacas, the best message in meaning); the reference it names is
    older and far down the ranking.
    It is the one older message naming Greta: it ranks with the best (``NEIGHBOUR_SHARE`` of its score)."""
    texts, vectors = chat(near=20)
    vectors[AT] = [_unit(0, 0, 0, 0, 1)]  # below every line of chatter in meaning
    texts[58], vectors[58] = ALPACAS, [_unit(1.0)]
    order = ranked(texts, vectors, 55)
    assert order.index(AT) < 10  # on main: last


def test_a_name_said_in_more_than_one_other_message_pairs_nothing():
    """Greta named in two other messages: which one tells the answer is not known, so neither is lifted."""
    texts, vectors = chat(near=20)
    vectors[AT] = [_unit(0, 0, 0, 0, 1)]
    texts[58], vectors[58] = ALPACAS, [_unit(1.0)]
    texts[40], vectors[40] = "Theo: saw Greta at the market, she says hi", [_unit(0, 0, 1)]
    order = ranked(texts, vectors, 55)
    assert order.index(AT) >= DESCRIBED_HOP_FROM

"""The long-conversation bench's baselines (bench/conversation_bench.py): what a user could write in an afternoon,
each packed in its own ranking's order into tda's history tokens, and issue 31's bar over the best of them."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.conversation_bench import BASELINES, Baselines, bar
from bench.conversation_data import Conversation
from tests.support import ConceptEmbedder

FILLER = [
    "Morning! How was the weekend?",
    "Busy, the kids had football all Saturday and it rained the whole time.",
    "Ha, same here. Work has been mad this week.",
    "Did you watch the match last night?",
]
NEWS = "We adopted a puppy from the shelter, he sleeps on my feet every night."
QUESTION = "Which breed of dog?"


def _embed(concepts: ConceptEmbedder) -> Any:
    return lambda texts: np.asarray(asyncio.run(concepts.embed(list(texts))), dtype=np.float32)


def _chat(news_at: int, fillers: int) -> Conversation:
    lines = [FILLER[i % len(FILLER)] + f" ({i})" for i in range(fillers)]
    lines.insert(news_at, NEWS)
    return Conversation("toy", "friends", [{"role": "user", "content": line} for line in lines])


def test_dense_alone_holds_news_told_in_other_words_that_bm25_alone_and_a_tight_room_miss() -> None:
    chat = _chat(news_at=3, fillers=40)
    baselines = Baselines(chat, _embed(ConceptEmbedder({"puppy": "dog"})))
    room = baselines.costs[3]  # just the news's tokens
    chosen = baselines.packed(QUESTION, room)
    assert set(chosen) == set(BASELINES)
    assert 3 in chosen["dense"]  # "puppy" is a dog to the embedder
    assert 3 not in chosen["bm25"]  # it shares no word with the question: BM25 ranks it with every other line


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 20), st.integers(5, 20), st.integers(0, 600), st.sampled_from([QUESTION, "football match?"]))
def test_each_baseline_fills_the_room_down_its_own_ranking_and_nothing_left_out_would_still_fit(
    news_at: int, fillers: int, room: int, question: str
) -> None:
    chat = _chat(min(news_at, fillers), fillers)
    baselines = Baselines(chat, _embed(ConceptEmbedder({"puppy": "dog"})))
    ranks = baselines.ranked(question)
    for name, chosen in baselines.packed(question, room).items():
        used = sum(baselines.costs[i] for i in chosen)
        assert used <= room
        left_out = set(range(len(chat.messages))) - chosen
        assert all(baselines.costs[i] > room - used for i in left_out)  # greedy: what is left out does not fit
        order = ranks[BASELINES[name]]
        taken = [i for i in order if i in chosen]
        first_skipped = next((i for i in order if i not in chosen), None)
        if first_skipped is not None:  # everything ranked above the first skipped message was taken
            assert set(order[: order.index(first_skipped)]) <= set(taken)


def test_the_bar_is_the_limits_floor_or_the_best_baseline_and_five_points_never_above_every_question() -> None:
    assert bar(4000, 60.0) == 75.0
    assert bar(4000, 82.0) == 87.0
    assert bar(8000, 91.0) == 96.0
    assert bar(16000, 91.0) == 96.0
    assert bar(16000, 98.0) == 100.0
    assert bar(32000, 50.0) == 55.0  # a limit the issue names no floor for: the best baseline + 5

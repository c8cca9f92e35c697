"""A question that asks two things gets the second's evidence through a rare word it shares with the first's answer
(``HistoryIndex._linked``). Once every message has its vectors the links come from more hits (``LINK_FROM_WIDE``):
the first thing's answer may rank past the fifth by words and best part, and the message the
second is said in passing in shares nothing with the question."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import components.context_window.recall.messages as recall_messages
from components.context_window.base import Message
from components.context_window.recall.messages import (
    LINK_FROM,
    LINK_MAX_OTHERS,
    LINK_TOP,
    SessionRecall,
    embedded_text,
    parts_of,
)
from components.context_window.relevance import terms
from tests.support import TurnedEmbedder, generated_chat, index_vectored_to, recalled_contents

QUESTION = "Which piece did the county show turn down, and where had he found what it was made of?"
REFUSED = "The county show turned down my jug, the one with the blue glaze."
DUG = "Finished the jug at last, thrown from mud we dug out of the riverbank below the cottage."
DECOYS = 12


class ShowEmbedder(TurnedEmbedder):
    """The question's decoys (lines about the show) nearest it, then the refusal, then the one-sentence lines; the
    message where the jug's clay was dug, and the rest, their own directions (384 of them: little noise)."""

    question, dimensions = QUESTION, 384

    @classmethod
    def share(cls, text: str) -> float:
        if text.startswith("Any new piece"):
            return 2.0
        if text == REFUSED:
            return 1.6
        return 1.2 if text.startswith("One ") else 0.0


def chat(messages: int, refused: int, seed: int = 0) -> list[Message]:
    """A generated chat, two of three lines of one sentence, every third of two; ``DECOYS`` lines asking about a new
    piece for the show; the refusal at ``refused`` and, 200 messages before it, where the jug's clay came from."""
    out = generated_chat(messages, seed)
    for k in range(DECOYS):
        at = refused + 20 + 7 * k
        out[at] = Message("user", f"Any new piece made for the show on day {k}? Found a stall yet?", turn=at // 2 + 1)
    out[refused] = Message("assistant", REFUSED, turn=refused // 2 + 1)
    out[refused - 200] = Message("assistant", DUG, turn=(refused - 200) // 2 + 1)
    return out


FOUR_K_ROOM = 5_700
"""The tokens recall gathers for a 4K window (``enough_tokens``, twice its room): ~45 messages."""


async def recalled(messages: list[Message], enough_tokens: int) -> list[str]:
    return await recalled_contents(ShowEmbedder(), messages, QUESTION, enough_tokens)


@pytest.mark.parametrize("enough_tokens", [FOUR_K_ROOM, 16_000])
async def test_the_second_things_evidence_comes_through_a_link_from_a_deeper_hit_at_any_room(enough_tokens):
    """Fails without ``LINK_FROM_WIDE``: the refusal ranks 9th by words and best part (the show's decoys lead), so
    the first five hits link nothing, and where the clay was dug, sharing no word with the question and said in
    other words, comes after every one-sentence line by whole meaning: recall never gets to it."""
    messages = chat(2_400, refused=1_000)
    wide = await recalled(messages, enough_tokens)
    assert REFUSED in wide and DUG in wide
    assert wide.index(DUG) < len(wide) // 2  # inside the room: the link, not the room, holds it
    with patch.object(recall_messages, "LINK_FROM_WIDE", LINK_FROM):  # the first five hits only, as before
        assert DUG not in await recalled(messages, enough_tokens)


def _ranked(messages: list[Message], query: str, vectored: int, *, deeper: bool = True) -> dict[int, float]:
    """Each ranked position's score from ``HistoryIndex.rank``, ``deeper``: with ``LINK_FROM_WIDE`` (else
    ``LINK_FROM``)."""
    index = index_vectored_to(
        messages, vectored, lambda m: [ShowEmbedder.vector(p) for p in parts_of(embedded_text(m))]
    )
    evidence = SessionRecall(ShowEmbedder()).evidence
    with patch.object(recall_messages, "LINK_FROM_WIDE", recall_messages.LINK_FROM_WIDE if deeper else LINK_FROM):
        positions, scores, _, _ = index.rank(query, ShowEmbedder.vector(query), len(messages), evidence=evidence)
    return dict(zip(positions.tolist(), scores.tolist(), strict=True))


def _links(messages: list[Message], query: str) -> set[int]:
    """Oracle: the messages holding a word the query does not say that one to ``LINK_MAX_OTHERS`` others hold too."""
    asked = set(terms(query))
    held: dict[str, set[int]] = {}
    for position, message in enumerate(messages):
        for term in set(terms(message.content)) - asked:
            held.setdefault(term, set()).add(position)
    return {p for holders in held.values() if 1 < len(holders) <= LINK_MAX_OTHERS + 1 for p in holders}


NOTHING = "Which kiln did Dmitri crack in the frost, and who mended it?"  # no Dmitri in the chat: abstains


@settings(max_examples=15, deadline=None)
@given(st.integers(320, 480), st.integers(200, 220), st.integers(0, 10_000), st.sampled_from([QUESTION, NOTHING]))
def test_deeper_links_only_add_linked_messages_and_never_to_an_abstention_nor_before_every_vector(
    messages, refused, seed, query
):
    history = chat(messages, refused, seed)
    shallow = _ranked(history, query, len(history), deeper=False)
    deeper = _ranked(history, query, len(history))
    assert set(shallow) <= set(deeper)
    raised = {p for p, score in deeper.items() if score > shallow.get(p, 0.0) + 1e-12}
    assert all(deeper[p] >= score - 1e-12 for p, score in shallow.items())  # a link only lifts
    assert len(raised) <= LINK_TOP * recall_messages.LINK_FROM_WIDE and raised <= _links(history, query)
    if query == QUESTION:  # the refusal ranks past the fifth hit by words and best part: its link is lifted
        assert refused - 200 in raised
    else:  # an abstention stays one
        assert not shallow and not deeper
    # an index one message short of its vectors ranks as without the rule: cold and warm alike
    cold = _ranked(history, query, len(history) - 1)
    assert cold == _ranked(history, query, len(history) - 1, deeper=False)

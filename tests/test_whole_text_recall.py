"""News said in passing after a sentence of chatter is recalled by its message's whole text when the room is ample
(``WHOLE_TEXT_WEIGHT``, ``WHOLE_TEXT_ROOM``): its news sentence alone is less near the question than many one-line
messages, and its parts' mean cosine is halved by the chatter; the message read whole (its parts' mean vector) is the
nearest of the messages of its kind."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from components.context_window.recall.messages import WHOLE_TEXT_ROOM, HistoryIndex, SessionRecall
from tests.support import TurnedEmbedder, generated_chat, index_vectored_to, recalled_contents

QUESTION = "Where is home these days?"
CHATTER = "I've been binge-watching a baking show all week."
NEWS = "Other news: we got the keys to a place in Ludlow on Sunday."
PASSING = f"{CHATTER} {NEWS}"


class PassingEmbedder(TurnedEmbedder):
    """Every sentence its own direction, a one-sentence line's turned well toward the question's (so hundreds of lines
    are nearer it than the news by their best part and by their parts' mean); the news less so, its chatter not."""

    question, dimensions = QUESTION, 48

    @classmethod
    def share(cls, text: str) -> float:
        if text == NEWS:
            return 0.8
        return 1.2 if text.startswith("One ") else 0.0  # the chatter and two-line sentences: their own


def chat(messages: int, at: int, seed: int = 0) -> list[Message]:
    """A generated chat, two of three lines of one sentence (~20 tokens each), every third of two, the news in passing
    at ``at``, and one line sharing the question's word "home" (so the question has evidence by words)."""
    out = generated_chat(messages, seed)
    out[at] = Message("user", PASSING, turn=at // 2 + 1)
    out[at + 40] = Message("user", "Home cooking beats a takeaway, honestly.", turn=(at + 40) // 2 + 1)
    return out


async def recalled(messages: list[Message], enough_tokens: int) -> list[str]:
    return await recalled_contents(PassingEmbedder(), messages, QUESTION, enough_tokens)


async def test_news_said_in_passing_is_recalled_by_the_whole_message_when_the_room_is_ample():
    """Fails without the whole-text ranking: by its best part and by its parts' mean cosine the message comes after
    the ~1,600 one-line messages, so a 16K window's recall never gets to it."""
    messages = chat(2_400, at=300)
    ample = await recalled(messages, WHOLE_TEXT_ROOM)
    assert PASSING in ample
    assert ample.index(PASSING) < len(ample) // 3  # well inside the room: the ranking, not the room, holds it
    assert PASSING not in await recalled(messages, WHOLE_TEXT_ROOM - 1)  # below the gate: as before


def _index(messages: list[Message], vectored: int) -> HistoryIndex:
    """An index of ``messages``, the first ``vectored`` given their part vectors (the rest still waiting for theirs)."""
    return index_vectored_to(messages, vectored, lambda m: [PassingEmbedder.vector(s) for s in _sentences(m.content)])


def _sentences(text: str) -> list[str]:
    return [s.strip() + "." for s in text.split(".") if s.strip()]


@settings(max_examples=25, deadline=None)
@given(st.integers(100, 200), st.integers(0, 50), st.integers(0, 10_000), st.sampled_from([QUESTION, "chess ferry"]))
def test_the_whole_text_ranking_only_adds_the_messages_it_ranks_and_never_to_an_abstention(messages, at, seed, query):
    history = chat(messages, at, seed)
    index = _index(history, len(history))
    vector = PassingEmbedder.vector(query)
    evidence = SessionRecall(PassingEmbedder()).evidence
    plain = index.rank(query, vector, len(history), evidence=evidence)[0]
    ample = index.rank(query, vector, len(history), evidence=evidence, ample=True)[0]
    two_or_three = {i for i, m in enumerate(history) if len(_sentences(m.content)) in (2, 3)}
    assert set(ample.tolist()) == set(plain.tolist()) | (two_or_three if len(plain) else set())
    # an index whose messages have not all had their vectors ranks as without the rule: cold and warm alike
    cold = _index(history, len(history) - 1)
    cold_plain = cold.rank(query, vector, len(history), evidence=evidence)[0]
    assert cold.rank(query, vector, len(history), evidence=evidence, ample=True)[0].tolist() == cold_plain.tolist()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=60), st.integers(0, 60), st.integers(0, 2**32 - 1))
def test_a_messages_whole_text_is_ranked_by_the_cosine_of_its_parts_mean_vector(parts, split, seed):
    """Oracle: the cosine of each 2-3-part message's parts' mean vector (each part a unit vector, rounded to float16
    as the index holds it) with the query, for messages added in two batches."""
    assume(any(parts))  # dense scores need a part
    rng = np.random.default_rng(seed)
    history = [Message("user", " ".join(f"Line {i} part {k}." for k in range(count))) for i, count in enumerate(parts)]
    vectors = [[rng.standard_normal(8) for _ in range(count)] for count in parts]
    index = HistoryIndex()
    split = min(split, len(history))
    index.add(history[:split], vectors[:split])
    index.add(history[split:], vectors[split:])
    query = rng.standard_normal(8)

    def cosine(per_message: list[np.ndarray]) -> float:
        held = [(v / np.linalg.norm(v)).astype(np.float16).astype(np.float64) for v in per_message]
        mean = np.mean(held, axis=0)
        return float(mean @ query / np.linalg.norm(mean) / np.linalg.norm(query))

    ranked = index.whole_text_ranking(query, len(history))
    assert ranked is not None
    assert sorted(ranked.tolist()) == [i for i, count in enumerate(parts) if count in (2, 3)]
    cosines = [cosine(vectors[i]) for i in ranked.tolist()]
    assert all(a >= b - 1e-3 for a, b in itertools.pairwise(cosines))


def test_a_room_under_the_gate_then_one_over_it_ranks_the_messages_once(monkeypatch):
    """An old gateway session's first step asks for a recall room under ``WHOLE_TEXT_ROOM`` and then one over it, for
    the same query over the same messages: the ranking is made once, the whole texts fused into it apart (main made
    it again at each switch: 4 rankings here)."""
    history = chat(150, at=20)
    index = _index(history, len(history))
    vector = PassingEmbedder.vector(QUESTION)
    made = []
    rank = HistoryIndex._rank
    monkeypatch.setattr(HistoryIndex, "_rank", lambda self, *a: made.append(a) or rank(self, *a))
    for ample in (False, True, False, True):
        index.rank(QUESTION, vector, len(history), ample=ample)
    assert len(made) == 1


@settings(max_examples=25, deadline=None)
@given(
    st.integers(60, 160),
    st.integers(0, 10_000),
    st.lists(st.tuples(st.booleans(), st.integers(1, 160), st.sampled_from([QUESTION, "chess ferry"])), max_size=8),
)
def test_a_kept_ranking_is_the_ranking_made_anew(messages, seed, asks):
    """Equivalence test (an optimisation: the ranking kept apart from the whole texts fused into it): every ask, ample
    or not, in any order, gives what an index ranking anew each time gives (the oracle keeps nothing), bit for bit."""
    history = chat(messages, at=10, seed=seed)
    kept, anew = _index(history, len(history)), _index(history, len(history))
    evidence = SessionRecall(PassingEmbedder()).evidence
    for ample, before, query in asks:
        vector = PassingEmbedder.vector(query)
        anew._rank_cache = None
        expected = anew.rank(query, vector, min(before, messages), evidence=evidence, ample=ample)
        positions, scores, method, reason = kept.rank(
            query, vector, min(before, messages), evidence=evidence, ample=ample
        )
        assert np.array_equal(positions, expected[0]) and np.array_equal(scores, expected[1])
        assert (method, reason) == expected[2:]

"""A hypothetical question about someone: every line of theirs said in one sentence, by whole meaning
(``HistoryIndex.one_liners``, ``ONE_LINE_WEIGHT``; bench/fresh6_chats.py's inference questions)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, Session
from components.context_window.recall.messages import HistoryIndex, SessionRecall, parts_of
from tests.support import seeded_direction

DIMENSIONS = 64
TOPIC = seeded_direction("the question's topic", DIMENSIONS)
DISPOSITION = "Joss: The hotter the better, my mouth is numb."
QUESTION = "Would Joss like a Sichuan hotpot dinner?"


class TopicEmbedder:
    """Each text at a set cosine with the question's topic (by a mark word it holds), the rest of it its own seeded
    direction: what a model gives a question and lines that are more or less about it."""

    vector_space = "test-topic"
    LEVELS: ClassVar[dict[str, float]] = {
        "hotpot": 1.0,
        "numb": 0.2,
        "market": 0.35,
        "kitchen": 0.3,
        "dinner": 0.3,
        "okay": 0.1,
    }

    async def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            level = next((v for word, v in self.LEVELS.items() if word in text.lower()), 0.0)
            own = seeded_direction(text, DIMENSIONS)
            own = own - (own @ TOPIC) * TOPIC
            own /= np.linalg.norm(own)
            out.append((level * TOPIC + np.sqrt(1 - level**2) * own).tolist())
        return out


def chat() -> list[Message]:
    """Malin and Joss over 400 lines: Malin's about the market (0.35 from the topic), one naming the hotpot; Joss's
    two-sentence chatter about his kitchen and dinners (0.3 a sentence) and one-sentence lines a little off the topic
    (0.1); Joss's disposition one sentence at 0.2, sharing no word with the question, 250 lines back."""
    messages = []
    for t in range(200):
        messages.append(Message("user", f"Malin: the market stall {t} had a queue again."))
        if t % 4 == 3:
            messages.append(Message("assistant", f"Joss: okay, day {t} was long."))
        else:
            messages.append(Message("assistant", f"Joss: My kitchen shelf {t} fell down. We ate dinner out."))
    messages[20:20] = [Message("user", "Malin: the hotpot place by the market shut.")]
    messages[150:150] = [Message("assistant", DISPOSITION)]
    return messages


async def _gathered(question: str, messages: list[Message], enough_tokens: int) -> list[str]:
    recall = SessionRecall(TopicEmbedder())
    session = Session("chat", messages=messages)
    await recall.sync(session, dense=True)
    ranking = await recall.recall(session, question, before=len(messages), enough_tokens=enough_tokens)
    return [m.content for unit in ranking.units for m in unit.messages]


async def test_a_hypothetical_about_someone_gathers_their_one_sentence_disposition_in_other_words():
    """Joss's "The hotter the better" is under the dense floor, shares no word with the question and is 352nd of 402
    lines by whole meaning (his kitchen and dinner chatter, Malin's market): 354th in the ranking without the rule, so a
    gather of ~1,000 tokens (66-79 lines) leaves it out; it is the nearest of his one-sentence lines, 11th with it."""
    messages = chat()
    gathered = await _gathered(QUESTION, messages, enough_tokens=1_000)
    assert DISPOSITION in gathered
    assert len(gathered) < 120  # a small gather: not the whole chat


async def test_a_question_that_is_not_hypothetical_does_not_get_the_list():
    """The same chat asked what happened: no list of his one-sentence lines, the line stays out of that gather."""
    gathered = await _gathered("What did Joss say about the hotpot dinner?", chat(), enough_tokens=1_000)
    assert DISPOSITION not in gathered


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Al", "Bo"]),
            st.sampled_from(["I love it.", "Fine. Really fine.", "ok", "One. Two. Three."]),
            st.booleans(),
        ),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.sampled_from([-1.0, 0.1, 0.5, 0.9]), min_size=40, max_size=40),
)
def test_one_liners_are_the_candidates_of_one_sentence_with_vectors_best_first(said, whole):
    """``one_liners``: the candidate messages embedded as one part, with vectors (whole meaning above -1), best first
    by whole meaning, ties in order: an oracle walking the messages and counting their sentences."""
    index = HistoryIndex()
    messages = [Message("user", f"{who}: {text}") for who, text, _ in said]
    index.add(messages, [[[1.0, 0.0]] * len(parts_of(m.content)) for m in messages])
    n = len(said)
    candidates = np.array([who == "Al" and pick for who, _, pick in said], bool)
    scores = np.array(whole[:n])
    sentences = {"I love it.": 1, "Fine. Really fine.": 2, "ok": 1, "One. Two. Three.": 3}
    expected = [i for i, (_, text, _) in enumerate(said) if candidates[i] and sentences[text] == 1 and scores[i] > -1]
    expected.sort(key=lambda i: -scores[i])  # a stable sort: ties in order
    assert index.one_liners(candidates, scores).tolist() == expected

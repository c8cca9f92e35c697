"""A question about someone asked in general words ("What does Maya do to unwind?") is answered by lines of theirs that
share no word with it and are no outliers in meaning among what they said (``THEIRS_AMPLE_WEIGHT``): at an ample room
every message of theirs is ranked by whole meaning, so those lines come before the other speaker's nearer chatter."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from components.context_window.recall.messages import OWN_MEANING_MIN_WORDS, WHOLE_TEXT_ROOM, HistoryIndex
from components.context_window.relevance import terms
from tests.support import TurnedEmbedder, generated_chat, recalled_contents

QUESTION = "What does Maya do to unwind?"
HOBBIES = (
    "I have gotten really into crochet lately, made a wonky little frog and adore him.",
    "Took the kayak out across the reservoir at dawn, just me and the ducks, pure bliss.",
    "My new thing is thousand piece jigsaws with a pot of tea and some jazz playing.",
)
WORDY = "Theo, the ferry was late again and I missed the whole of the morning briefing."


class HobbyEmbedder(TurnedEmbedder):
    """Theo's one-line chatter turned well toward the question, one in four of Maya's a little more than her hobbies,
    the rest of hers not at all: her hobbies stand out by meaning neither in the chat nor among her own lines."""

    question, dimensions = QUESTION.replace("Maya", " "), 48  # as recall asks it: without the speaker's name

    @classmethod
    def share(cls, text: str) -> float:
        if text in HOBBIES:
            return 0.45
        if text.startswith("One "):
            return 1.0
        if text.startswith("Two "):
            return 0.8 if zlib.crc32(text.encode()) % 4 == 0 else 0.0
        return 0.0


def chat(messages: int, seed: int = 0) -> list[Message]:
    """A generated chat between Maya and Theo (tagged lines, Maya's one-liners "Two ..."), her hobbies each its own
    message in a different stretch, and a line sharing the question's word "unwind" (evidence by words)."""
    out = []
    for i, message in enumerate(generated_chat(messages, seed)):
        text = message.content if i % 2 else message.content.replace("One ", "Two ", 1)
        out.append(Message(message.role, f"{'Theo' if i % 2 else 'Maya'}: {text}", turn=message.turn))
    for k, hobby in enumerate(HOBBIES):
        at = (k + 1) * messages // 5 // 2 * 2
        out[at] = Message("user", f"Maya: {hobby}", turn=at // 2 + 1)
    out[messages // 2 + 1] = Message("assistant", "Theo: I never know how to unwind on a Sunday.", turn=messages // 4)
    return out


async def test_their_lines_by_meaning_come_inside_an_ample_room():
    """Fails on main: ~1,250 lines (Theo's, and a quarter of Maya's) are nearer the question than her hobbies by best
    part and whole meaning, and her hobbies stand out among her lines by under a standard deviation (her own news
    list passes them over): they rank 550th-860th, past a 16K window's recall (~600 lines here)."""
    messages = chat(2_000)
    ample = await recalled(messages, WHOLE_TEXT_ROOM)
    assert all(f"Maya: {hobby}" in ample for hobby in HOBBIES)
    below = await recalled(messages, WHOLE_TEXT_ROOM - 1)
    assert not all(f"Maya: {hobby}" in below for hobby in HOBBIES)  # below the gate: as before


async def recalled(messages: list[Message], enough_tokens: int) -> list[str]:
    return await recalled_contents(HobbyEmbedder(), messages, QUESTION, enough_tokens)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["Maya", "Theo"]), st.booleans()), min_size=1, max_size=40),
    st.integers(0, 2**32 - 1),
)
def test_theirs_by_meaning_is_every_wordy_line_of_theirs_by_cosine(lines, seed):
    """Oracle: the cosine of each one-sentence line's vector (a unit vector, rounded to float16 as the index holds it)
    with the query, over the asked-about speaker's lines of at least ``OWN_MEANING_MIN_WORDS`` words."""
    rng = np.random.default_rng(seed)
    texts = [f"{who}: {WORDY if wordy else 'Ok then'} {n}" for n, (who, wordy) in enumerate(lines)]
    vectors = [rng.standard_normal(8) for _ in texts]
    index = HistoryIndex()
    index.add([Message("user", t) for t in texts], [[v] for v in vectors])
    query = rng.standard_normal(8)
    got = index.theirs_by_meaning(index.asked_about("What does Maya do?"), query, len(texts)).tolist()
    assert sorted(got) == [i for i, (who, wordy) in enumerate(lines) if who == "Maya" and wordy]
    held = [(v / np.linalg.norm(v)).astype(np.float16).astype(np.float64) for v in vectors]
    cosines = [float(held[i] @ query / np.linalg.norm(held[i]) / np.linalg.norm(query)) for i in got]
    assert all(a >= b - 1e-3 for a, b in itertools.pairwise(cosines))
    assert len(terms(WORDY)) >= OWN_MEANING_MIN_WORDS > len(terms("Ok then 0"))

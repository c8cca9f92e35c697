"""A thing the chat names ("a narrowboat, she's called Marigold") is found by its name when a question asks about it
by its word ("How many trips has Theo taken the boat on?"): later messages use only the name."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message
from components.context_window.recall import messages as recall_messages
from components.context_window.recall.messages import HistoryIndex
from components.context_window.recall.named import bindings, names_for
from components.context_window.relevance import terms
from tests.test_history_recall import HistoryEmbedder, _recalled, chat_between_people

BOUGHT = "Theo: I've bought a half share in a narrowboat with Geoff from bowls, she's called Marigold."
TRIPS = (
    "Theo: Took Marigold up to Skipton and back over the weekend, two days, one sunburn.",
    "Theo: Marigold's engine seized at Bingley and a hen party towed us through.",
    "Theo: Took Marigold into Leeds for the first time, moored up by the museum.",
)


def names_given(texts: list[str], asked: list[str]) -> list[str]:
    """The names ``texts`` give a thing an ``asked`` term says, as ``HistoryIndex._given_names`` reads them."""
    return names_for((binding for text in texts for binding in bindings(text)), asked)


def with_a_named_boat(messages: list[Message]) -> list[Message]:
    """The boat named once, three trips told by its name only, and forty lines about "the boat" and "trips"."""
    out = list(messages)
    chatter = [
        Message("user", f"Maya: How is the boat doing on day {t}? Any trips planned, or taken it out yet?")
        for t in range(40)
    ]
    out[10:10] = [Message("assistant", BOUGHT)]
    for at, trip in zip((40, 80, 120), TRIPS, strict=True):
        out[at:at] = [Message("assistant", trip)]
    out[140:140] = chatter
    return out


@pytest.mark.parametrize("embedder", [None, HistoryEmbedder()], ids=["words", "words+vectors"])
async def test_a_thing_asked_about_by_its_word_brings_the_messages_that_use_only_the_name_the_chat_gave_it(embedder):
    messages = with_a_named_boat(chat_between_people())
    recalled = await _recalled("How many trips has Theo taken the boat on?", messages, embedder)
    assert all(trip in recalled[:8] for trip in TRIPS)  # on main: not recalled by words, 3rd-14th with vectors


def test_a_name_binds_to_the_lower_case_words_just_before_it_in_its_sentence():
    assert names_given([BOUGHT], terms("the boat")) == ["marigold"]  # "boat" ends "narrowboat"
    assert names_given(["Dan: the builder, a bloke called Gary Price, reckons eight weeks."], ["builder"]) == [
        "gari",
        "price",
    ]
    assert names_given(["Nadia: Isla bit a boy called Rory at nursery."], terms("Isla")) == []  # a name is no thing
    assert (
        names_given(["Nadia: Isla bit a boy called Rory. The nursery rang."], terms("nursery")) == []
    )  # another sentence
    assert names_given([BOUGHT], terms("Marigold the boat")) == []  # the question says the name already
    assert names_given(["Five-a-side was called off, so the boat stayed in."], ["boat"]) == []  # no capital: no name
    assert names_given(["the boat of the so-called Admiral"], ["boat"]) == []  # "so-called" names nothing
    far = "the cat in the flat across the road from the boat is called Tom"
    assert names_given([far], ["cat"]) == [] and names_given([far], ["boat"]) == ["tom"]  # the words just before


WORDS = ["boat", "narrowboat", "cat", "tea", "rain", "trip", "garden"]
NAMES = ["Marigold", "Biscuit", "Tom"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(WORDS), max_size=4),
            st.one_of(st.none(), st.sampled_from(NAMES)),
            st.lists(st.sampled_from([*WORDS, *NAMES]), max_size=3),
        ),
        min_size=2,
        max_size=14,
    ),
    st.sampled_from(["How many trips on the boat?", "Where is the cat?", "Any rain?"]),
)
def test_the_named_list_only_raises_messages_and_only_those_holding_a_name_given_a_thing_asked(lines, query):
    """Each message ``_named`` lists holds a name a sentence gives a word of the question, and turning the list on
    never lowers any message's score (a message holding such a name ranks no lower)."""
    texts = [
        " ".join([*before, *(["is called", name] if name else []), ".", *after]) or "ok"
        for before, name, after in lines
    ]
    index = HistoryIndex()
    index.add([Message("user", text) for text in texts])
    n = len(texts)
    listed = index._named(query, n)
    given_names = set(names_given(texts, terms(query)))
    if listed is not None:
        assert len(set(listed.tolist())) == len(listed)
        assert all(given_names & set(terms(texts[row])) for row in listed.tolist())
    scores = {}
    for weight in (0.0, recall_messages.NAMED_WEIGHT):
        old, recall_messages.NAMED_WEIGHT = recall_messages.NAMED_WEIGHT, weight
        try:
            index._rank_cache = None
            positions, ranked, _, _ = index.rank(query, None, n)
        finally:
            recall_messages.NAMED_WEIGHT = old
        scores[weight] = np.zeros(n)
        scores[weight][positions] = ranked
    assert (scores[recall_messages.NAMED_WEIGHT] >= scores[0.0]).all()

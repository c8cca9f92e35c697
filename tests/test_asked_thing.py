"""A question about a thing the chat never mentions ("What is the name of Dan's dog?" where no message says "dog"):
recall brings nothing and says which thing (components/context_window/asked_thing.py,
``HistoryIndex._thing_unmentioned``), unless meaning finds it called another way ("we got a puppy")."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.asked_thing import thing_asked
from components.context_window.base import Message, Session
from components.context_window.recall.messages import SessionRecall
from tests.support import ConceptEmbedder


@pytest.mark.parametrize(
    ("question", "thing"),
    [
        ("What is the name of Dan's dog?", "dog"),
        ("What breed is Kofi's dog?", "dog"),
        ("What is Ray's wife called?", "wife"),
        ("What's my yoga teacher called?", "teacher"),
        ("What is the name of Tom's flatmate's girlfriend?", "girlfriend"),
        ("What colour is my motorbike?", "motorbike"),
        ("What is the tortoise in Arjun's classroom called?", "tortoise"),
        ("Which football team does Maya support?", None),  # the noun after "which" is the answer's kind
        ("What injury has Dana had?", None),
        ("What instrument is Arjun learning?", None),  # the subject is someone
        ("What was the cat's name when Marta adopted him?", None),  # a name, asked of a clause
        ("What is Elsie's middle name?", None),  # an attribute of someone
        ("What did the vet say about my tortoise?", None),
        ("Where did Lou go skiing?", None),
        ("What is the name of the hospital Nell's dad was taken to?", "hospital"),  # a clause, not an owner
        ("What is my sister Ana's dog called?", "dog"),  # a name, then its owner's possessive
        ("Does Grant have any children?", "children"),  # whether someone has a thing
        ("Has Sam got a car?", "car"),
        ("Has Bex ever been skiing?", "skiing"),  # whether someone has ever done or had it
        ("Did Theo ever own a dog?", "dog"),
        ("Has Maya ever been to Lisbon?", None),  # a place, a name: the names rule's
        ("Did Maya go to the party?", None),  # whether an event happened: told in any words
    ],
)
def test_a_question_names_the_thing_it_asks_about_only_in_the_form_that_presumes_it(question, thing):
    assert thing_asked(question) == thing


SMALL_TALK = (
    "Work has been a lot lately, deadlines moved up and nobody told me.",
    "I can never remember the name of that café by the station.",
    "I made that lentil soup again, the one with too much cumin.",
    "Traffic on the ring road was awful this morning.",
    "What was the name of the film we saw last winter?",
    "My phone screen cracked again, I should buy a sturdier case.",
    "I've started cycling in. Mostly. When it isn't raining.",
    "The new manager keeps getting my name wrong, it's Dan not Don.",
    "We should book the cottage for the summer before it goes.",
    "My sister is visiting next weekend, she wants to see the castle.",
)
PUPPY = "Dan: Big news, a puppy! A tiny pup, a proper little hound."


def chat(news: str | None = None, sessions: int = 4) -> list[Message]:
    """Two friends' small talk, some of it about names, with ``news`` told in the middle."""
    lines = [f"{'Dan' if i % 2 == 0 else 'Maya'}: {line}" for _ in range(sessions) for i, line in enumerate(SMALL_TALK)]
    if news is not None:
        lines.insert(len(lines) // 2, news)
    return [Message("user" if i % 2 == 0 else "assistant", line) for i, line in enumerate(lines)]


async def _recall(messages: list[Message], question: str, embedder) -> tuple[list[str], str | None]:
    ranking = await SessionRecall(embedder).recall(
        Session("s", messages=messages), question, before=len(messages), enough_tokens=10_000
    )
    return [m.content for unit in ranking.units for m in unit.messages], ranking.reason


async def test_a_question_about_a_thing_no_message_mentions_recalls_nothing_and_names_it():
    """ "name" and "Dan" are all over the chat, "dog" nowhere, and no message stands out in meaning: recall brings
    nothing and says the dog was never mentioned (before this rule, the lines about names were recalled)."""
    recalled, reason = await _recall(chat(), "What is the name of Dan's dog?", ConceptEmbedder())
    assert recalled == []
    assert reason is not None and reason.startswith("nothing relevant found: no earlier message mentions dog")


@pytest.mark.parametrize(
    ("news", "same"),
    [
        (PUPPY, {"puppy": "dog", "pup": "dog", "hound": "dog"}),  # called another way: found by meaning alone
        ("Dan: Both dogs are at the groomer's, Biscuit hates it.", {}),  # an inflection of the word
    ],
    ids=["in-other-words", "inflected"],
)
async def test_a_thing_the_chat_calls_another_way_or_inflects_is_still_recalled(news, same):
    recalled, reason = await _recall(chat(news), "What is the name of Dan's dog?", ConceptEmbedder(same))
    assert reason is None and news in recalled


YES_NO_TALK = (
    "Any plans for the weekend? I need a lie-in.",
    "Did you get any sleep with the storm?",
    "Have you ever tried that ramen place by the canal?",
    "Best thing I ever ate was my gran's trifle, no contest.",
    "Any news on the job? I've got everything crossed.",
    "The boiler is making that noise again, I'll ring the landlord.",
    "Is it me or has bread got really expensive?",
    "Any chance you're free Thursday? Quiz night.",
    "Did you ever finish that crime podcast?",
    "Work is quiet, I'm mostly answering emails.",
)


@pytest.mark.parametrize("question", ["Does Dan have any children?", "Has Maya ever been skiing?"])
async def test_a_yes_no_question_about_a_thing_no_message_mentions_recalls_nothing(question):
    """ "any" and "ever" are all over the chat (they let the question through the gate: a shared word), children
    and skiing nowhere, and no message stands out in meaning: recall brings nothing and names the thing (before this
    form was read, the small talk sharing "any" or "ever" was recalled)."""
    lines = [f"{'Dan' if i % 2 == 0 else 'Maya'}: {line}" for _ in range(4) for i, line in enumerate(YES_NO_TALK)]
    messages = [Message("user" if i % 2 == 0 else "assistant", line) for i, line in enumerate(lines)]
    recalled, reason = await _recall(messages, question, ConceptEmbedder())
    assert recalled == []
    assert reason is not None and reason.startswith("nothing relevant found: no earlier message mentions")


NEIGHBOUR_TALK = (
    "Dan: The neighbour's cat basil.",
    "Maya: The neighbour's kids trumpet.",
    "Dan: The neighbour's hedge light.",
)
"""Lines of one length each sharing one word with the question: alike, so none stands out far."""


async def test_a_thing_unmentioned_is_not_vetoed_by_a_line_sharing_only_a_word_of_the_question():
    """ "What breed is my neighbour's parrot?" where no message says "parrot": three lines about the neighbour stand out
    2.5-3.0 standard deviations by sharing "neighbour" alone, as the dev chats' chatter does for the questions nothing
    answers (2.58-2.96), under every answerable question about a thing no message names (3.11 and up): recall brings
    nothing (at ``thing_z`` 2.5 it recalled the neighbour's lines)."""
    messages = chat()
    for k, line in enumerate(NEIGHBOUR_TALK):
        messages.insert(3 + 6 * k, Message("user", line))
    question, embedder = "What breed is my neighbour's parrot?", ConceptEmbedder()
    vectors = np.array(await embedder.embed([m.content for m in messages]))
    asked = np.array((await embedder.embed([question]))[0])
    cosines = vectors @ asked / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(asked))
    assert 2.5 < (cosines.max() - cosines.mean()) / cosines.std() < 3.0  # the band the raised ``thing_z`` covers
    recalled, reason = await _recall(messages, question, embedder)
    assert recalled == []
    assert reason is not None and reason.startswith("nothing relevant found: no earlier message mentions parrot")


async def test_without_meaning_to_veto_a_thing_unmentioned_is_not_a_reason_to_abstain():
    """Words alone cannot tell "puppy" is a dog: the rule needs vectors, so recall still searches."""
    recalled, reason = await _recall(chat(PUPPY), "What is the name of Dan's dog?", None)
    assert reason is None and recalled


THING = st.sampled_from("boat dog kitten guitar allotment scooter parrot bakery shed loom".split())
FORMS = st.sampled_from(
    (
        "What is the name of my {}?",
        "What is my {} called?",
        "What make was Maya's old {}?",
        "What's my neighbour's {} called?",
        "Which breed is the {}?",
        "Does Dan have a {}?",
        "Has Maya ever had a {}?",
        "What is the name of the {} Dan's sister was looking at?",
    )
)


@settings(max_examples=40, deadline=None)
@given(THING, FORMS, st.integers(0, 39), st.sampled_from(("{}", "{}s")), st.integers(0, 3))
async def test_a_question_whose_thing_the_history_mentions_is_never_abstained_on_by_the_rule(
    thing, form, at, inflected, more
):
    """Whatever the chat, the form of the question and where the thing is said (in any inflection), the rule never
    makes recall abstain on a question about a thing an earlier message names."""
    question = form.format(thing)
    assert thing_asked(question) == thing
    messages = chat()
    for k in range(more + 1):
        where = (at + 7 * k) % len(messages)
        said = f"{messages[where].content} Anyway, the {inflected.format(thing)} is fine."
        messages[where] = Message(messages[where].role, said)
    recalled, reason = await _recall(messages, question, ConceptEmbedder())
    assert reason is None and recalled

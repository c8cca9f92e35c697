"""bench/context_chats.py: the dev set of short reports read by their context holds its labels: each contextual
question's evidence is its thread's report, which shares no content word with the question and never names the
thread's topic, said in one of the three messages before it; a seed writes the same chats, another seed others."""

from __future__ import annotations

import pytest

from bench.context_chats import PAIRS, THREADS, context_conversations
from tests.test_fresh_chats import _words

content_words = _words  # content words by an independent tokenizer (not recall's), cut to a crude stem


@pytest.fixture(scope="module")
def chats():
    return {seed: context_conversations(seed=seed) for seed in (0, 1)}


def test_a_seed_writes_the_same_chats_and_another_seed_others(chats):
    again = context_conversations(seed=0)
    assert [c.messages for c in again] == [c.messages for c in chats[0]]
    assert [c.messages for c in chats[1]] != [c.messages for c in chats[0]]


def test_every_thread_is_asked_about_in_every_chat_both_ways(chats):
    for conversation in chats[0] + chats[1]:
        kinds = [q.kind for q in conversation.questions]
        assert kinds.count("contextual") == kinds.count("single_hop") == len(THREADS)
        assert len(conversation.messages) > 600  # more than a 4K or 8K window holds


def test_a_report_shares_no_word_with_its_question_and_its_topic_is_named_just_before(chats):
    reports = {t.report: t for t in THREADS}
    for conversation in chats[0] + chats[1]:
        texts = [m["content"] for m in conversation.messages]
        names = {w.lower() for pair in PAIRS for w in pair}
        for question in (q for q in conversation.questions if q.kind == "contextual"):
            (at,) = question.evidence
            speaker, report = texts[at].split(": ", 1)
            thread = reports[report]
            assert speaker.split("] ")[-1] in question.text  # told by the one asked about
            assert not (content_words(question.text) - names) & content_words(report)
            topic = content_words(thread.context.lstrip("?")) & content_words(" ".join(thread.chatter))
            assert topic and not topic & content_words(report)  # the report never names its topic
            before = " ".join(texts[at - 3 : at])
            assert topic <= content_words(before)  # ...said in the three messages before it
            assert sum(bool(topic & content_words(t)) for t in texts) >= 4  # and elsewhere: no rare word


def test_an_opening_question_is_answered_by_the_opening_message(chats):
    openings = {t.opening: t for t in THREADS}
    for conversation in chats[0] + chats[1]:
        for question in (q for q in conversation.questions if q.kind == "single_hop"):
            (at,) = question.evidence
            said = conversation.messages[at]["content"].split(": ", 1)[1]
            assert said in openings
            assert question.text in {openings[said].opening_asked.format(t=name) for pair in PAIRS for name in pair}

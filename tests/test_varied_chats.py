"""bench/varied_chats.py: the out-of-distribution chats the conversation bench's figures rest on."""

from __future__ import annotations

import re

from bench.conversation_data import KINDS, UNANSWERABLE
from bench.varied_chats import varied_conversations


def test_the_chats_are_the_same_for_a_seed_and_differ_between_seeds():
    first, again = varied_conversations(2), varied_conversations(2)
    assert [c.messages for c in first] == [c.messages for c in again]
    assert [c.questions for c in first] == [c.questions for c in again]
    said = [{m["content"] for m in c.messages if len(m["content"]) > 80} for c in first]
    assert len(said[0] & said[1]) < len(said[0]) / 4  # long messages are drawn afresh, not a shared script


def test_every_question_is_labelled_with_evidence_that_can_answer_it():
    for chat in varied_conversations(4):
        assert 300 <= len(chat.messages) <= 700
        assert {q.kind for q in chat.questions} <= set(KINDS)
        for question in chat.questions:
            assert (question.kind in UNANSWERABLE) == (not question.evidence)
            assert all(0 <= at < len(chat.messages) for at in question.evidence)
            if question.kind == "temporal":  # the news is dated relative to its session: its dated line is evidence
                assert re.match(r"\[\d+ \w+ 20\d\d", chat.messages[min(question.evidence)]["content"])


def test_speakers_are_named_only_in_the_name_field():
    for chat in varied_conversations(4):
        names = {m["name"] for m in chat.messages}
        assert len(names) == 2
        assert not any(m["content"].startswith(tuple(f"{n}:" for n in names)) for m in chat.messages)

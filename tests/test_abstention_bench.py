"""The abstention bench (bench/abstention_bench.py) counts a question as one nothing answers exactly when its set
gives it no evidence, on every set it reads, so the cost it reports (answerable questions abstained on) and the
frontier it searches never take a ``wrong_speaker`` question for an answerable one."""

from __future__ import annotations

import pytest

from bench.abstention_bench import HELD_OUT, NOTHING, Asked, frontier
from bench.conversation_data import conversations
from bench.dense_chats import dense_conversations


@pytest.mark.parametrize("data", [*HELD_OUT, "default"])
def test_a_kind_counts_as_nothing_answers_exactly_when_its_questions_have_no_evidence(data: str) -> None:
    chats = conversations(2) + dense_conversations(2) if data == "default" else HELD_OUT[data](1)
    for question in (q for chat in chats for q in chat.questions):
        assert (question.kind in NOTHING) == (not question.evidence), (data, question.kind, question.text)


def test_the_frontier_catches_a_wrong_speaker_question_below_every_answerable_ones_signals() -> None:
    asked = [
        Asked("single_hop", "What did Dara buy?", abstained=False, best_z=5.0, coverage=0.8, unseen=0.0),
        Asked("wrong_speaker", "What did Ilse buy?", abstained=False, best_z=2.0, coverage=0.1, unseen=0.0),
        Asked("unanswerable", "Which team does Dara support?", abstained=True, best_z=1.5, coverage=0.0, unseen=1.0),
    ]
    found = frontier(asked)
    assert found is not None
    (z, coverage, _), caught = found
    assert 2.0 < z <= 5.0 and 0.1 < coverage <= 0.8  # fires on the wrong speaker's signals, not the answerable one's
    assert caught["wrong_speaker"] == 1
    assert caught["unanswerable"] == 0  # recall already abstains on it: nothing beyond recall to catch

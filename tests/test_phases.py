"""IFOC phase isolation: what each phase may see, and what a phase change carries."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.context_window.base import Message, TurnRecord
from components.context_window.phases import PHASES, VISIBLE_FROM, filter_visible, is_forward, transition, visible

ALLOWED = {  # the rule from the issue, written out independently of the module's table
    ("ideate", "ideate"),
    ("focus", "ideate"),
    ("focus", "focus"),
    ("operate", "focus"),
    ("operate", "operate"),
    ("complete", "operate"),
    ("complete", "complete"),
}


@pytest.mark.parametrize(("current", "item"), list(itertools.product(PHASES, PHASES)))
def test_visibility_matrix(current, item):
    assert visible(item, current) == ((current, item) in ALLOWED)


def test_items_without_phase_are_visible_everywhere_and_a_session_without_phase_sees_all():
    assert all(visible(None, p) for p in PHASES)
    assert all(visible(p, None) for p in PHASES)
    items = [Message("user", p, phase=p) for p in PHASES]
    assert filter_visible(items, None) == items


def test_filter_works_for_turn_records_and_keeps_order():
    turns = [TurnRecord(i, f"q{i}", phase=p) for i, p in enumerate(["ideate", None, "focus", "operate", "focus"])]
    assert [t.turn for t in filter_visible(turns, "focus")] == [0, 1, 2, 4]


def test_unknown_phases_are_clear_errors():
    with pytest.raises(ValueError, match="unknown IFOC phase 'done'; use one of ideate, focus, operate, complete"):
        filter_visible([], "done")
    with pytest.raises(ValueError, match="unknown IFOC phase"):
        visible("focus", "Focus")
    with pytest.raises(ValueError, match="unknown IFOC phase"):
        transition("focus", "shipping", "x")


def test_forward_carries_a_summary_tagged_with_the_new_phase_back_carries_nothing():
    carried = transition("focus", "operate", "  Chose the EMEA dataset.  ", turn=7)
    assert carried == Message(
        "system",
        "[Summary carried from the focus phase into operate]\nChose the EMEA dataset.",
        turn=7,
        phase="operate",
    )
    assert transition("operate", "focus", "anything") is None
    assert transition("focus", "focus", "anything") is None
    assert transition("ideate", "complete", None) is None  # forward, but nothing to carry
    assert transition("ideate", "focus", "   ") is None
    assert transition(None, "ideate", "x") is None  # entering IFOC: no earlier phase to summarise
    assert is_forward("ideate", "complete") and not is_forward("complete", "ideate")


def test_back_and_forth_scenario():
    log: list[Message] = [Message("user", "idea A", phase="ideate")]
    current = "ideate"

    def go(to: str, summary: str | None = None) -> None:
        nonlocal current
        carried = transition(current, to, summary)
        if carried:
            log.append(carried)
        current = to

    go("focus", "A looks best")
    log.append(Message("user", "narrow A", phase="focus"))
    go("ideate", "should not be carried back")
    assert [m.content for m in filter_visible(log, current)] == ["idea A"]  # the focus work and its summary are hidden
    log.append(Message("user", "idea B", phase="ideate"))
    go("operate", "run B")
    log.append(Message("assistant", "ran B", phase="operate"))
    seen = [m.content for m in filter_visible(log, current)]
    assert "idea A" not in seen and "idea B" not in seen and "ran B" in seen and "narrow A" in seen
    go("complete", "done")
    assert [m.content for m in filter_visible(log, current)][-2:] == [
        "ran B",
        "[Summary carried from the operate phase into complete]\ndone",
    ]


steps = st.lists(
    st.one_of(
        st.tuples(st.just("say"), st.sampled_from(["user", "assistant", "tool"])),
        st.tuples(st.just("legacy"), st.just("user")),  # an item from before IFOC: phase None
        st.tuples(st.just("go"), st.sampled_from(PHASES), st.booleans()),
    ),
    max_size=60,
)


@given(start=st.sampled_from(PHASES), steps=steps)
def test_no_phase_ever_sees_what_it_must_not(start, steps):
    current, log = start, []
    for step in steps:
        if step[0] == "say":
            log.append(Message(step[1], f"#{len(log)}", phase=current))
        elif step[0] == "legacy":
            log.append(Message("user", f"#{len(log)}"))
        else:
            _, to, with_summary = step
            carried = transition(current, to, f"summary of {current}" if with_summary else None, turn=len(log))
            if PHASES.index(to) <= PHASES.index(current):
                assert carried is None  # going back (or staying) carries nothing
            else:
                assert (carried is not None) == with_summary
                assert carried is None or (carried.phase == to and carried.role == "system")
            if carried:
                log.append(carried)
            current = to
        seen = filter_visible(log, current)
        assert all(m.phase is None or (current, m.phase) in ALLOWED for m in seen)  # nothing forbidden
        assert seen == [m for m in log if m.phase is None or (current, m.phase) in ALLOWED]  # nothing allowed hidden
        newest_first = [m for m in reversed(log) if visible(m.phase, current)]
        assert newest_first == seen[::-1]  # the per-item predicate agrees when walking history backwards


def test_table_is_what_the_issue_says():
    assert {(c, i) for c, allowed in VISIBLE_FROM.items() for i in allowed} == ALLOWED

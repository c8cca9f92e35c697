"""A chat's dated lines, however an importer spells the date: each opens a session of the chat."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.context_window.recall.dates import HEADER_CHARS, after_date, dated_among, opens_with_date

SESSION_OPENINGS = [
    "[24 January 2024, 8:47 PM] Hiii",
    "[spring 2024] hi",
    "(24 January 2024, 8:47 PM) Oluwaseun: Hiii",
    "8:47 pm on 24 January, 2024 - Oluwaseun: Hiii",
    "1:56 pm on 8 May, 2023\nCaroline: Hey Mel!",
    "2024-01-24 20:47: Oluwaseun: Hiii",
    "Session date: 24 January 2024\nhi",
    "Session 3 (8 May 2023): hi",
    "Session 12 — 10:37 am on 27 June, 2023\nhi",
    "DATE: 2023-05-08",
    "May 8, 2023 — Hey",
    "Monday, 8 May 2023: hi",
    "8/5/2023 | hi",
    "--- 8 May 2023 ---",
    "## Session 2 — 8 May 2023\nhi",
    "**8 May 2023**",
    "Maya: Fri 23 Jun 2023 · Dan says hi",
    "Fri 23 Jun 2023 • hi",
]
SAID_IN_PASSING = [
    "I moved in May 2019 - it was great",
    "In May 2019 I moved to Leeds",
    "May 2019 was the best year",
    "We met on 8 May 2023 at the station",
    "It was 8 May 2023 and the sun shone",
    "Maya: in 2019 we went",
    "Remember 2019?",
    "[note] 2019",
    "2019 tickets sold out",
    "- 2019 was long",
    "We paid on 23 Jun 2023 · it cleared",
]


@pytest.mark.parametrize("text", SESSION_OPENINGS)
def test_a_message_opening_with_a_date_opens_a_session(text):
    assert opens_with_date(text)


@pytest.mark.parametrize("text", SAID_IN_PASSING)
def test_a_year_said_in_passing_opens_no_session(text):
    assert not opens_with_date(text)


def test_the_text_after_the_date_is_the_message_its_speaker_tag_first():
    assert after_date("2024-01-24 20:47: Maya: hi") == "Maya: hi"
    assert after_date("Session date: 24 January 2024\nTheo Ng: hey") == "Theo Ng: hey"
    assert after_date("In May 2019 I moved") == "In May 2019 I moved"


def test_the_dated_lines_of_a_chat_are_found_among_many_messages():
    """Only the openings are tried: a year deep in a long message, or in the next message's line, is none."""
    chat = [*SAID_IN_PASSING, *SESSION_OPENINGS, "x" * 100 + " [8 May 2023] late", "hi\n2023-05-08: after a break"]
    found = dated_among(chat)
    assert found == list(range(len(SAID_IN_PASSING), len(SAID_IN_PASSING) + len(SESSION_OPENINGS)))


def _year_in_header(text: str) -> bool:
    """A year (19xx or 20xx) beginning in the text's first ``HEADER_CHARS`` characters: written out, no regex."""
    return any(
        text[at : at + 2] in ("19", "20") and len(text[at + 2 : at + 4]) == 2 and text[at + 2 : at + 4].isdecimal()
        for at in range(min(len(text), HEADER_CHARS))
    )


_PIECES = st.sampled_from([*SESSION_OPENINGS, *SAID_IN_PASSING, "1999", "19", "20", "\n", " ", "x" * 9, "abc"])
_SPACED_DATE = st.builds(  # a header whose date begins anywhere up to past the header's end
    lambda label, gap, date, rest: f"{label}{' ' * gap}{date}{rest}",
    st.sampled_from(["", "Date:", "## Session 2 —", "Session 3 -"]),
    st.integers(0, 90),
    st.sampled_from(["8 May 2023", "2023-05-08", "May 2019", "1999"]),
    st.sampled_from(["", ": hi", " hi", "\nhi"]),
)
_TEXTS = st.one_of(_SPACED_DATE, st.lists(_PIECES, max_size=12).map("".join))


@given(st.lists(_TEXTS, max_size=12))
def test_the_dated_lines_are_those_opening_with_a_date_with_a_year_in_their_header(texts):
    """Whatever the texts hold and wherever their years fall (a year crossing the header's end, or the end of the text
    searched): those found are exactly the texts with a year beginning in their header that open with a date."""
    assert dated_among(texts) == [i for i, text in enumerate(texts) if _year_in_header(text) and opens_with_date(text)]

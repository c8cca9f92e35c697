"""The same chat written the ways an importer might write it: who speaks, and how a session's date is given.

bench/varied_chats.py writes each speaker in the message's ``name`` and a session's date as a bracketed prefix of
its first message ("[19 January 2024, 7:33 PM] hiii"). A user importing a chat from elsewhere may put the speaker in
the text ("Kat: hiii") or nowhere, and the date in another spelling. ``reformatted`` rewrites a conversation's
messages one for one (positions, hence evidence labels, unchanged), so a bench can ask whether recall depends on
one way of writing it.

Speakers (BENCH_SPEAKERS): ``name`` as generated; ``tag``: "Kat: " opening the text, no ``name``; ``bare``: neither.
Dates (BENCH_DATES): ``bracket`` as generated; ``paren``: "(19 January 2024, 7:33 PM) hiii"; ``spoken``: "7:33 pm on
19 January, 2024 - hiii"; ``iso``: "2024-01-19 19:33: hiii"; ``line``: "Session date: 19 January 2024\nhiii"."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import replace

from bench.conversation_data import Conversation

SPEAKERS = ("name", "tag", "bare")
DATES = ("bracket", "paren", "spoken", "iso", "line")
_BRACKETED = re.compile(r"^\[([^\]]+)\] ")
_WRITTEN = "%d %B %Y, %I:%M %p"


def reformatted(conversation: Conversation, speakers: str = "name", dates: str = "bracket") -> Conversation:
    """``conversation`` with each message's speaker and date written as asked (its questions unchanged)."""
    if speakers not in SPEAKERS or dates not in DATES:
        raise ValueError(f"speakers must be one of {SPEAKERS} and dates one of {DATES}")
    if (speakers, dates) == ("name", "bracket"):
        return conversation
    return replace(conversation, messages=[_message(m, speakers, dates) for m in conversation.messages])


def _message(message: dict[str, str], speakers: str, dates: str) -> dict[str, str]:
    out = dict(message)
    text = out["content"]
    when = _opening_date(text)
    if when:
        text = text[text.index("] ") + 2 :]
    name = out.pop("name", None) if speakers != "name" else None
    if speakers == "tag" and name:
        text = f"{name}: {text}"
    out["content"] = _dated(text, when, dates) if when else text
    return out


def _opening_date(text: str) -> dt.datetime | None:
    """The date a message opens with, as bench/varied_chats.py writes it."""
    opening = _BRACKETED.match(text)
    try:
        return dt.datetime.strptime(opening.group(1), _WRITTEN) if opening else None
    except ValueError:
        return None


def _dated(text: str, when: dt.datetime, dates: str) -> str:
    if dates == "bracket":
        return f"[{when:%-d %B %Y, %-I:%M %p}] {text}"
    if dates == "paren":
        return f"({when:%-d %B %Y, %-I:%M %p}) {text}"
    if dates == "spoken":
        return f"{when:%-I:%M} {when:%p}".lower() + f" on {when:%-d %B, %Y} - {text}"
    if dates == "iso":
        return f"{when:%Y-%m-%d %H:%M}: {text}"
    return f"Session date: {when:%-d %B %Y}\n{text}"

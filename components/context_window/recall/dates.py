"""The dated lines of a chat: a message opening with a date starts a session, and what is said in it is dated by it
("we moved on Friday" says when only beside "[8 May 2023] Hey!").

A chat imported from elsewhere writes that date its own way: "[8 May 2023, 7:41 pm] hi", "(8 May 2023) hi",
"1:56 pm on 8 May, 2023 - hi", "2023-05-08 13:56: hi", "Session 3 (8 May 2023): hi", "Date: 8 May 2023\\nhi",
"--- 8 May 2023 ---", "Fri 23 Jun 2023 · hi". What they share: the date (a year with a month name, or a numeric date)
opens the message, after at most a heading's marks and a label, and a separator, a line break or the closing bracket
ends it. A year said in passing ("In May 2019 I moved") opens no session."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from itertools import accumulate, repeat
from operator import getitem

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d\d\b"
_TIME = r"(?:\d{1,2}(?:[:.]\d\d)?\s*[ap]\.?m\b\.?|\d{1,2}:\d\d)"
_DATE = (
    rf"(?:(?:{_DAY}\s+(?:of\s+)?)?{_MONTH},?\s+(?:{_DAY},?\s+)?{_YEAR}"  # 8 May 2023, May 8, 2023, May 2023
    rf"|{_YEAR}-\d\d-\d\d|\d{{1,2}}/\d{{1,2}}/{_YEAR})"  # 2023-05-08, 8/5/2023
)
_HEADER = (
    r"[#*=~>\-\s]{0,6}"  # a heading's marks: "## ", "--- "
    r"(?:[A-Za-z][\w ]{0,24}?(?:\s*[:\-–—]\s*|\s+(?=[\[(])))?"  # a label: "Date: ", "Session 3 - ", "Session 3 "
    r"(?:(?P<open>[\[(])\s*)?"
    rf"(?:{_TIME}\s+(?:on\s+)?)?(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+)?{_DATE}(?:,?\s+(?:at\s+)?{_TIME})?"
    r"(?(open)\s*[\])]|\s*(?:[:\-–—|*=#~·•]|\n|$))"  # closed as opened, or followed by a separator or the line's end
)
DATE_HEADER = re.compile(_HEADER, re.IGNORECASE)
"""A date opening a message (``DATE_HEADER.match``), its end where the message's own text begins."""
_BRACKETED = re.compile(r"\[[^\]\n]{0,40}\b(?:19|20)\d\d\b[^\]\n]{0,40}\]")
"""Any bracketed opening holding a year ("[spring 2024] ..."): a chat's own header, whatever its spelling."""
_YEARS = (re.compile(r"19\d\d"), re.compile(r"20\d\d"))
"""Where a text may hold a year: patterns opening with a literal, which the regex engine finds at C speed."""
HEADER_CHARS = 80
"""A date header opens its message: a year further in is never part of one."""
_HEAD = slice(0, HEADER_CHARS + 3)
"""A text's head searched for a year: a year beginning in its first ``HEADER_CHARS`` characters ends in it."""


def opens_with_date(text: str) -> bool:
    """Whether ``text`` opens with a date: it starts a session of the chat."""
    return bool(_BRACKETED.match(text) if text.startswith("[") else DATE_HEADER.match(text))


def after_date(text: str) -> str:
    """``text`` after the date opening it (all of it when none does)."""
    header = DATE_HEADER.match(text)
    return text[header.end() :].lstrip() if header else text


def dated_among(contents: Sequence[str]) -> list[int]:
    """The positions of ``contents`` that open with a date. Only a text with a year in its first ``HEADER_CHARS``
    characters is tried: those are found in the texts' heads, joined by line breaks and searched at C speed (the
    heads, not the whole texts: a long history met cold is ~3.5 MB of text, its heads a fifth of it)."""
    heads: list[str] = list(map(getitem, contents, repeat(_HEAD)))
    joined = "\n".join(heads)
    hits = [hit.start() for pattern in _YEARS for hit in pattern.finditer(joined)]
    if not hits:
        return []
    ends = list(accumulate(len(head) + 1 for head in heads))  # where each head ends, its line break included
    near = set()
    for at in hits:
        text = bisect.bisect_right(ends, at)
        if at - (ends[text - 1] if text else 0) < HEADER_CHARS:
            near.add(text)
    return [i for i in sorted(near) if opens_with_date(contents[i])]

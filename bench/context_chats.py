"""Short reports read by their context: a recall dev set (docs/history/knowledge-log.md, "Context of short messages").

Real chats are full of lines whose meaning comes from the messages before them: "passed!! only two minors" means
a driving test because a few messages earlier someone said "driving test is on friday". A question asked in other
words ("How many faults did Sam pick up during the road exam?") shares no word with the report and little meaning
with it alone; the thread's topic, said just before it, carries what the question asks about.

Two friends catch up over 40 dated sessions (``Name: text``, the session's first message opening with its date, as
bench/conversation_data.py writes): small talk from that file's stock, and a dozen threads of one of them (an
allotment, a puppy, a driving test, ...). Each thread's topic is said in chatter over several sessions ("how's the
allotment?"); once, a message naming it (the teller's own, or the other's question) is followed one to three
messages later by a short report that never names it. Questions: ``contextual`` (the report, asked in other words:
no content word shared with it) and, for contrast, ``single_hop`` (a thread's opening news, asked with its words).

Development data only (the held-out sets stay held out): ``BENCH_DATA=context`` in bench/conversation_bench.py.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from bench.conversation_data import GREETING_REPLIES, GREETINGS, REACTIONS, SMALL_TALK, Conversation, Question

KINDS = ("single_hop", "contextual")
PAIRS = (("Sam", "Priya"), ("Owen", "Lucia"), ("Hana", "Dev"))


@dataclass(frozen=True)
class Thread:
    """One of a teller's threads: the news opening it, chatter naming its topic, the message a report follows and
    the report, and the questions."""

    opening: str
    chatter: tuple[str, ...]
    context: str
    """Names the topic; said by the teller, or asked by the other when it opens with "?" (then it is a question)."""
    report: str
    """Short, never names the topic."""
    asked: str
    """The report asked in other words (``{t}``: the teller)."""
    opening_asked: str


THREADS = (
    Thread(
        "I finally got an allotment! Plot 14, right by the railway line.",
        ("how's the allotment?", "Allotment was all slugs this week.", "the allotment committee is a nightmare"),
        "Spent all morning at the allotment weeding the onion beds.",
        "the first ones came up tonight, a whole bucketful",
        "How much did the earliest dig yield at {t}'s vegetable plot?",
        "Which plot number is {t}'s allotment?",
    ),
    Thread(
        "I've started baking sourdough, the starter lives on top of the fridge and I've named it Doughlas.",
        (
            "how's the sourdough going?",
            "Sourdough starter smells like nail varnish today.",
            "more sourdough photos pls",
        ),
        "?is the sourdough behaving yet",
        "it actually rose this time, ears and everything",
        "Did {t}'s homemade bread finally come out right?",
        "What did {t} name the sourdough starter?",
    ),
    Thread(
        "Signed up for the Manchester marathon in April. No going back now.",
        ("how's marathon training?", "Marathon training is eating my weekends.", "my marathon playlist needs work"),
        "Marathon training week six, my legs are complaining.",
        "did twenty on sunday, didn't stop once",
        "What's the longest distance {t} has covered without a break while preparing for the race?",
        "Which marathon did {t} sign up for?",
    ),
    Thread(
        "I've started guitar lessons with a teacher called Rhian, Tuesdays after work.",
        ("how are the guitar lessons?", "Guitar practice annoyed the neighbours again.", "my guitar needs new strings"),
        "Had my third guitar lesson last night, my fingertips are wrecked.",
        "finally nailed the F chord, no buzzing",
        "Which tricky shape has {t} mastered on the instrument?",
        "Who teaches {t} guitar?",
    ),
    Thread(
        "The builders start on our kitchen next month, we're gutting the whole thing.",
        ("how's the kitchen coming on?", "Kitchen is still a building site.", "living without a kitchen is grim"),
        "?have the kitchen people been in this week",
        "the tops went in today, oak, it looks unreal",
        "What material did {t} choose for the new counters at home?",
        "Which room are the builders gutting at {t}'s house?",
    ),
    Thread(
        "Had a first interview at an architecture firm in Leeds, Harlow & Finch.",
        (
            "any news from the architecture firm?",
            "The interview nerves are real.",
            "architecture firms never ring back",
        ),
        "Second interview at the architecture firm this morning, it went on for two hours.",
        "she rang, they want me, start in march!",
        "When does {t} begin the new position?",
        "Which architecture firm did {t} interview with?",
    ),
    Thread(
        "We got a puppy!! A collie cross called Biscuit.",
        ("how's the puppy?", "The puppy chewed another charger.", "puppy classes are chaos"),
        "The puppy is doing my head in, he won't listen to a word.",
        "he sat and stayed for a full minute today, treats worked",
        "How long can {t}'s young dog hold an obedience command now?",
        "What is {t}'s puppy called?",
    ),
    Thread(
        "Dad's been taken into hospital, they think it's his heart.",
        ("how's your dad?", "Hospital parking is daylight robbery.", "dad hates the hospital food"),
        "?any word from the hospital about your dad",
        "they're letting him out thursday, grumpy as ever",
        "Which day is {t}'s father being discharged?",
        "Why was {t}'s dad taken into hospital?",
    ),
    Thread(
        "Put the old Fiesta up for sale online, it's done 140,000 miles.",
        ("sold the fiesta yet?", "Fiesta buyers are all time wasters.", "the fiesta failed to start again"),
        "Had three people message about the Fiesta today.",
        "got 2,400 for it, cash, bloke drove it away an hour later",
        "What price did {t} get for the old vehicle?",
        "How many miles has {t}'s Fiesta done?",
    ),
    Thread(
        "We're engaged!! Wedding planning starts now, send help.",
        ("how's wedding planning?", "Wedding venues are so expensive.", "my mum has opinions about the wedding"),
        "?found a wedding venue yet",
        "we went with the barn in the end, the one with the fairy lights",
        "Where will {t}'s marriage ceremony be held?",
        "What news did {t} share about wedding planning?",
    ),
    Thread(
        "Booked a pottery course at the community centre, eight Wednesdays.",
        ("how was pottery?", "Pottery clay gets everywhere.", "the pottery teacher is very intense"),
        "Pottery tonight, I'm determined to make something that isn't wonky.",
        "made a mug that holds tea without leaking",
        "What has {t} shaped on the wheel that works?",
        "Where is {t}'s pottery course held?",
    ),
    Thread(
        "My driving test is booked for the end of the month, at the Gorgie centre.",
        ("nervous about the driving test?", "Driving lessons cost a fortune.", "my driving instructor sighs a lot"),
        "?driving test is tomorrow right",
        "passed!! only two minors",
        "How many faults did {t} pick up during the road exam?",
        "Where is {t}'s driving test booked?",
    ),
)
FIRST_SPEAKERS = {first for first, _ in PAIRS}
"""Who speaks as ``user`` (the other is ``assistant``: a chat between two people imported as one session)."""
PLAIN_REPLIES = ("ha, fair", "oh nice", "go on", "no way", "ooh", "lol", "tell me everything", "aw")


def context_conversations(count: int = 3, seed: int = 0, sessions: int = 40) -> list[Conversation]:
    """``count`` chats (at most ``len(PAIRS)``), the same for a seed."""
    return [_conversation(PAIRS[i], random.Random(f"context-{seed}-{i}"), sessions) for i in range(count)]


def _conversation(pair: tuple[str, str], rng: random.Random, sessions: int) -> Conversation:
    conv = Conversation(name=f"context-{pair[0].lower()}", style="friends")
    threads = list(THREADS)
    rng.shuffle(threads)
    tellers = {t: pair[i % 2] for i, t in enumerate(threads)}
    # each thread opens in the first half, chatters over several sessions, and its report comes later
    opens = {t: rng.randrange(0, sessions // 2) for t in threads}
    reports = {t: rng.randrange(opens[t] + 2, sessions) for t in threads}
    later = {t: [s for s in range(opens[t] + 1, sessions) if s != reports[t]] for t in threads}
    chatters = {t: set(rng.sample(later[t], rng.randint(3, 6))) for t in threads}
    day = dt.date(2024, 1, 8) + dt.timedelta(days=rng.randrange(30))
    for session in range(sessions):
        day += dt.timedelta(days=rng.randrange(3, 10))
        first = len(conv.messages)
        _say(conv, pair[0], rng.choice(GREETINGS).format(other=pair[1]), day)
        _say(conv, pair[1], rng.choice(GREETING_REPLIES).format(other=pair[0]))
        events = [("talk", None)] * rng.randrange(5, 9)
        events += [("open", t) for t in threads if opens[t] == session]
        events += [("report", t) for t in threads if reports[t] == session]
        events += [("chatter", t) for t in threads if session in chatters[t]]
        rng.shuffle(events)
        for what, thread in events:
            if thread is None:
                line, reply = rng.choice(SMALL_TALK)
                teller = rng.choice(pair)
                _say(conv, teller, line.format(other=_other(pair, teller)))
                _say(conv, _other(pair, teller), reply.format(other=teller))
            else:
                _thread_event(conv, rng, pair, tellers[thread], thread, what)
        assert conv.messages[first]["content"].startswith("[")
    return conv


def _thread_event(
    conv: Conversation, rng: random.Random, pair: tuple[str, str], teller: str, t: Thread, what: str
) -> None:
    other = _other(pair, teller)
    if what == "open":
        _say(conv, teller, t.opening)
        conv.questions.append(Question(t.opening_asked.format(t=teller), "single_hop", (len(conv.messages) - 1,)))
        _say(conv, other, rng.choice(REACTIONS).format(other=teller))
    elif what == "chatter":
        line = rng.choice(t.chatter)
        _say(conv, other if line.endswith("?") else teller, line)
        _say(conv, teller if line.endswith("?") else other, rng.choice(PLAIN_REPLIES))
    else:  # the topic named, then one to three messages later the report
        if t.context.startswith("?"):
            _say(conv, other, t.context[1:] + "?")
        else:
            _say(conv, teller, t.context)
        for _ in range(rng.randrange(0, 3)):
            speaker = rng.choice(pair)
            _say(conv, speaker, rng.choice(PLAIN_REPLIES))
        _say(conv, teller, t.report)
        conv.questions.append(Question(t.asked.format(t=teller), "contextual", (len(conv.messages) - 1,)))
        _say(conv, other, rng.choice(REACTIONS).format(other=teller))


def _say(conv: Conversation, speaker: str, text: str, day: dt.date | None = None) -> None:
    role = "user" if speaker in FIRST_SPEAKERS else "assistant"
    head = f"[{day.day} {day:%B %Y}] " if day is not None else ""
    conv.messages.append({"role": role, "content": f"{head}{speaker}: {text}"})


def _other(pair: tuple[str, str], speaker: str) -> str:
    return pair[1] if speaker == pair[0] else pair[0]

"""A ninth long-conversation set (``BENCH_DATA=fresh8``): three users, each with an AI assistant over months, the way
people use one, written apart from recall's code.

fresh3-fresh7 are chats between friends; one set only (bench/assistant_chats.py, tuned on since) is a user and an
assistant. This one is that shape again, written from scratch:

* **Tasks, not chat.** 58-68 dated sessions 2-6 days apart (8-10 months), nearly every one a task: plan a trip, fix a
  spreadsheet formula, draft an email, compare two gadgets, a recipe for guests, debug a script, a training plan, an
  explanation, gift ideas, a budget. Follow-ups ("can you make it shorter?") and thanks.
* **Long answers.** The assistant's replies run 150-600 tokens (headings, numbered lists, code and formula blocks),
  so nine tenths of a chat's tokens are the assistant's; replies often open by echoing the user's words ("A garden
  treasure hunt for a seventh birthday is a lovely idea").
* **Personal facts in passing**, inside a request ("...for my daughter Isla, who turns seven next month"), never as
  news on their own; most sessions say nothing personal at all.
* **Facts that change** (a shift, a flat, a car, a plan) across sessions: the newest state answers.
* **Facts only the assistant said** (the guesthouse it suggested, the laptop it picked), one line of a long reply.
* **Dates**: each session's first message opens with its date, written one way per user ("Date: 5 March 2024",
  "[Tuesday, March 5, 2024]", "(2024-03-05)"); some facts are dated by a relative phrase from it ("yesterday",
  "last Thursday", "two weeks ago").

Kinds: ``user_fact`` (one request's passing fact), ``assistant_fact`` (what a reply said), ``preference`` (a question
whose good answer rests on a stated like or dislike: the statement is the evidence), ``multi_session`` (facts from
two to four sessions, counted or combined), ``knowledge_update`` (the newest state; the older one labelled too when
the question asks for both), ``temporal`` (the day a relative phrase points at from its session's date, or the days
between two such) and ``unanswerable`` (never said, or said of someone else: the neighbour's dog, not "my dog").
Questions are in the user's voice ("my", "I"); each answerable one is asked in its evidence's words or in others.

Each chat (seeds 0-1): 62-68 sessions, 578-612 messages, 91-99K tokens, 92% of them the assistant's (88-92% of its
answers 150-600 tokens, the longest 692; requests 24-25 tokens on average); 36-43 sessions hold no question's
evidence. 33 questions (user_fact 8, assistant_fact 5, preference 4, multi_session 4, knowledge_update 4, temporal 5,
unanswerable 3); about 30% share no content word with their evidence. A seed (``BENCH_FRESH_SEED``)
draws the sessions, their dates and tasks, places each story, dates its phrases and picks each question's wording.

Caveats: the assistant's replies are composed from per-task stocks of sentences, so a sentence comes back in other
replies of the same task, and a reply follows its task's form more than the request's particulars (a three-day trip
may get four days, a recipe's steps are generic); a follow-up ("what would you do first?") gets a shorter take on
the same task, not an answer to it; each user's stories are fixed (a seed moves and dates them, it does not reword
them); a told fact's words come back only in that session's answers, never in later small talk.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.conversation_data import Conversation
from bench.fresh4_chats import Asked

KINDS = (
    "user_fact",
    "assistant_fact",
    "preference",
    "multi_session",
    "knowledge_update",
    "temporal",
    "unanswerable",
)
NOTHING = ("unanswerable",)
"""The kind no message answers (no evidence)."""
__all__ = ["KINDS", "NOTHING", "USERS", "Asked", "fresh8_conversations", "time_answer"]

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


# -- what a user tells, and what is asked -------------------------------------------------------------------------


@dataclass(frozen=True)
class Told:
    """One request of a session (``text``; "{when}": a relative phrase dated from the session) and the task its
    answer does (``task``: a writer of ``TASKS``, on ``topic``). ``echo`` opens the answer in the user's words;
    ``said``, when given, is a line of the answer the assistant alone says (an assistant_fact)."""

    label: str
    text: str
    task: str
    topic: str
    echo: str = ""
    said: str = ""


@dataclass(frozen=True)
class Q:
    """A question: ``same`` in its evidence's words, ``other`` in others; ``labels`` the Told it rests on (their
    request, or their answer for an assistant_fact); ``keys`` one word each evidence message holds (unanswerable:
    phrases no message says). A temporal question's ``answer`` is "{date}" (the day its phrase points at) or
    "{days}" (the days between its two)."""

    kind: str
    same: str
    other: str
    labels: tuple[str, ...]
    answer: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class User:
    name: str
    start: dt.date
    stamp: Callable[[dt.date, str], str]
    """A session's first message, given its date and text."""
    threads: tuple[tuple[Told, ...], ...]
    """Stories told over sessions, in order, one Told a session (a single fact is a thread of one)."""
    questions: tuple[Q, ...]


def _t(label: str, text: str, task: str, topic: str, echo: str = "", said: str = "") -> Told:
    return Told(label, text, task, topic, echo, said)


# -- Maren: a radiographer in Rotterdam, a daughter (Isla), a partner (Joost) --------------------------------------

MAREN = User(
    "maren",
    dt.date(2024, 1, 8),
    lambda day, text: f"Date: {day:%-d %B %Y}\n{text}",
    threads=(
        (
            _t(
                "isla",
                "Isla turns seven next month and she's begged for a treasure hunt in the garden. Can you write eight "
                "rhyming clues a seven-year-old could solve, hidden around a small garden with a shed and a "
                "trampoline?",
                "party",
                "a garden treasure hunt",
                "A garden treasure hunt for a seventh birthday is a lovely idea, and a shed and a trampoline give you "
                "good hiding spots.",
            ),
        ),
        (
            _t(
                "allotment",
                "We finally got an allotment plot after two years on the waiting list! It's plot 14 at the Kralingen "
                "gardens. What should a total beginner plant first in spring?",
                "plan",
                "a first season on an allotment",
                "Congratulations on the allotment, two years is a long wait.",
            ),
        ),
        (
            _t(
                "joost",
                "My partner Joost is turning forty and he's impossible to buy for. He's into cycling and bad puns. "
                "Gift ideas under 100 euros?",
                "gifts",
                "a fortieth birthday, a cyclist",
                "Fortieth birthdays for people who are impossible to buy for are a classic problem.",
            ),
        ),
        (
            _t(
                "mother",
                "My mum is coming to stay for three weeks while she recovers from her hip operation. Can you help me "
                "make the flat safer for her? It has steep Dutch stairs.",
                "plan",
                "making a home safe after a hip operation",
                "Having your mum stay while she recovers is a kind thing to do, and steep stairs are the first thing "
                "to plan around.",
            ),
        ),
        (
            _t(
                "dutch",
                "I've been in the Netherlands eleven years and my Dutch is still embarrassing at work. Can you make me "
                "a study plan for the B2 exam, twenty minutes a day?",
                "plan",
                "a B2 language exam study plan",
            ),
        ),
        (
            _t(
                "shift.0",
                "I'm on the early shift at the hospital this quarter, so I start at 6:30. Can you suggest breakfasts "
                "I can prep the night before?",
                "recipe",
                "overnight breakfasts",
            ),
            _t(
                "shift.1",
                "They've moved me to the night shift in radiology, starting {when}. How do I sleep during the day "
                "without blackout blinds?",
                "plan",
                "sleeping in the daytime",
                "Moving onto nights is hard on sleep, and light is the biggest enemy.",
            ),
        ),
        (
            _t(
                "car.0",
                "Our old Opel Corsa failed its inspection, so we're looking at cars. Can you compare leasing and "
                "buying secondhand for a family that drives maybe 8,000 km a year?",
                "compare",
                "leasing or buying a car",
            ),
            _t(
                "car.1",
                "Update on the car: we went for a used Kia Niro hybrid in the end. What maintenance should I keep an "
                "eye on in the first year?",
                "plan",
                "looking after a used hybrid car",
            ),
        ),
        (
            _t(
                "trip.0",
                "We're thinking of taking Isla to Denmark over the May holiday, maybe Legoland. Can you sketch a "
                "five-day plan by car from Rotterdam?",
                "trip",
                "Denmark",
            ),
            _t(
                "trip.1",
                "Change of plan for May: Denmark was too far for Isla in the car, we've booked a cabin in the "
                "Ardennes instead. What can we do there with a young child when it rains?",
                "trip",
                "the Ardennes",
            ),
        ),
        (
            _t(
                "bike.0",
                "Someone stole my bike from outside Rotterdam Centraal {when}, the second one this year. Can you draft "
                "a short police report description? It was a black Gazelle with a child seat.",
                "email",
                "a police report for a stolen bike",
                "I'm sorry about the bike, a second theft in a year is miserable.",
            ),
        ),
        (
            _t(
                "course",
                "I signed up for a pottery course on Thursday evenings, it started {when}. Can you explain what "
                "the difference between stoneware and earthenware is? The teacher kept saying both.",
                "explain",
                "stoneware and earthenware",
            ),
        ),
        (
            _t(
                "neighbour",
                "Our neighbour's dog, a huge Bernese mountain dog called Bruno, barks every time I try to sleep after "
                "work. Can you draft a friendly note to put through their door?",
                "email",
                "a friendly note about a barking dog",
            ),
        ),
        (
            _t(
                "pieter",
                "Joost's brother Pieter just started at Philips in Eindhoven and is throwing a housewarming. Can you "
                "suggest a nice bring-along dish that travels well on a train?",
                "recipe",
                "a dish that travels well",
            ),
        ),
        (
            _t(
                "podcast",
                "I need a way to organise my podcast subscriptions, I have far too many. It's nearly all true crime, "
                "I listen on every bike ride. Any app tips?",
                "compare",
                "podcast apps",
            ),
        ),
        (
            _t(
                "coriander",
                "Can you give me a Thai green curry for six? And please no coriander, I can't stand it, it tastes "
                "like soap to me.",
                "recipe",
                "a Thai green curry for six",
                "A green curry for six is very doable, and it is easy to leave the coriander out.",
            ),
        ),
        (
            _t(
                "cold",
                "I want to plan a winter weekend away with Joost without Isla. Nothing cold though, I hate being cold, "
                "I'm miserable below ten degrees.",
                "trip",
                "a winter weekend",
            ),
        ),
        (
            _t(
                "guesthouse",
                "Can you plan three days in Porto for Joost and me in April? We like walking and food markets.",
                "trip",
                "Porto",
                said="For a base, I'd suggest the Casa Azulejo, a small guesthouse in Ribeira with a roof terrace "
                "over the river.",
            ),
        ),
        (
            _t(
                "laptop",
                "My laptop is dying. I mainly need something light for writing reports and video calls, budget about "
                "900 euros. What would you pick?",
                "compare",
                "light laptops",
                said="My pick for you is the Lenovo Yoga Slim 7: light, a long battery life and a very good keyboard "
                "for the money.",
            ),
        ),
        (
            _t(
                "formula",
                "In my shift rota spreadsheet I use VLOOKUP to pull each colleague's hours from another sheet but it "
                "breaks when someone adds a column. Any better way?",
                "formula",
                "pull hours from another sheet",
                said='Use XLOOKUP instead of VLOOKUP: =XLOOKUP(A2, Hours!A:A, Hours!D:D, "missing") keeps working '
                "when columns are added.",
            ),
        ),
        (
            _t(
                "soup",
                "Can you give me a soup that freezes well? I'd like to have lunches ready for my night weeks.",
                "recipe",
                "a soup that freezes well",
                said="The secret ingredient here is a spoon of white miso stirred in at the end, it gives the soup a "
                "deep savoury taste.",
            ),
        ),
        (
            _t(
                "book",
                "I need a novel for the ferry to England, something gripping but not too dark.",
                "gifts",
                "novels for a journey",
                said="If you only take one, take The Thursday Murder Club by Richard Osman: clever, warm and very "
                "easy to read on a boat.",
            ),
        ),
        (
            _t(
                "swim.0",
                "Isla started swimming lessons {when} at the Zwemparadijs, she's nervous in the deep end. How can I "
                "help her feel braver?",
                "explain",
                "helping a child feel brave in water",
            ),
        ),
        (
            _t(
                "fine.0",
                "I got a parking fine of 95 euros in Delft even though I paid, the machine was broken. Can you write "
                "an appeal email?",
                "email",
                "appealing a parking fine",
            ),
            _t(
                "fine.1",
                "Another parking ticket, 65 euros this time, in Schiedam. Same broken machine story. Can you adapt the "
                "appeal you wrote last time?",
                "email",
                "appealing a second parking fine",
            ),
        ),
        (
            _t(
                "runs.0",
                "I ran my first 5K fun run with colleagues from radiology. Now I want to keep going, can you make me "
                "a simple plan?",
                "plan",
                "keeping up running after a first race",
            ),
            _t(
                "runs.1",
                "Did the 10K at the Rotterdam harbour run, slow but I finished! What should I eat the day after?",
                "recipe",
                "recovery meals",
            ),
        ),
    ),
    questions=(
        Q(
            "user_fact",
            "How old is my daughter turning?",
            "What age will my little girl be at her party?",
            ("isla",),
            "seven",
            ("seven",),
        ),
        Q(
            "user_fact",
            "What number is our allotment plot?",
            "What number is on the patch of land we finally got to grow vegetables?",
            ("allotment",),
            "14",
            ("plot 14",),
        ),
        Q(
            "user_fact",
            "How old is my Joost turning?",
            "Which big birthday is my partner having?",
            ("joost",),
            "forty",
            ("forty",),
        ),
        Q(
            "user_fact",
            "What operation is my mum recovering from?",
            "Why is my mum recovering at ours?",
            ("mother",),
            "a hip operation",
            ("hip",),
        ),
        Q(
            "user_fact",
            "How long have I lived in the Netherlands?",
            "How many years ago did I move to this country?",
            ("dutch",),
            "eleven years",
            ("eleven",),
        ),
        Q(
            "user_fact",
            "What make was my stolen bike?",
            "Which brand of bicycle did I lose at the station?",
            ("bike.0",),
            "a black Gazelle",
            ("gazelle",),
        ),
        Q(
            "user_fact",
            "What evening is my pottery course?",
            "Which day of the week do I go to the clay class?",
            ("course",),
            "Thursday evenings",
            ("thursday evenings",),
        ),
        Q(
            "user_fact",
            "Where does my Isla have her swimming lessons?",
            "At which pool does my daughter learn to swim?",
            ("swim.0",),
            "the Zwemparadijs",
            ("zwemparadijs",),
        ),
        Q(
            "assistant_fact",
            "What was the name of the guesthouse you suggested in Porto?",
            "Which place did you recommend as our base by the Douro?",
            ("guesthouse",),
            "Casa Azulejo",
            ("azulejo",),
        ),
        Q(
            "assistant_fact",
            "Which laptop did you pick for me?",
            "What computer did you recommend when mine was dying?",
            ("laptop",),
            "the Lenovo Yoga Slim 7",
            ("yoga",),
        ),
        Q(
            "assistant_fact",
            "Which function did you tell me to use instead of VLOOKUP?",
            "What did you propose to fix my broken lookups in the staff schedule?",
            ("formula",),
            "XLOOKUP",
            ("xlookup",),
        ),
        Q(
            "assistant_fact",
            "What was the secret ingredient in the soup you gave me that freezes well?",
            "What did you say to stir into my lunch batch at the end?",
            ("soup",),
            "white miso",
            ("miso",),
        ),
        Q(
            "assistant_fact",
            "Which novel did you tell me to take on the ferry?",
            "What story did you think I should take on the boat?",
            ("book",),
            "The Thursday Murder Club",
            ("osman",),
        ),
        Q(
            "preference",
            "Any podcast to recommend for my commute?",
            "Got any audio show ideas for my way in to the hospital?",
            ("podcast",),
            "true crime",
            ("crime",),
        ),
        Q(
            "preference",
            "Can you suggest a herb to garnish a noodle salad for me?",
            "What topping would I like on a Vietnamese noodle dish?",
            ("coriander",),
            "not coriander",
            ("coriander",),
        ),
        Q(
            "preference",
            "Would a ski trip in Norway be a good surprise for me?",
            "Should Joost book me a week in Lapland?",
            ("cold",),
            "no, she hates the cold",
            ("cold",),
        ),
        Q(
            "preference",
            "What sort of audiobook should I get for the night shifts?",
            "Which kind of story would keep me awake at work?",
            ("podcast",),
            "true crime",
            ("crime",),
        ),
        Q(
            "multi_session",
            "How much have I paid in parking fines in total?",
            "How much have my two appeals been about, added up?",
            ("fine.0", "fine.1"),
            "160 euros",
            ("95", "65"),
        ),
        Q(
            "multi_session",
            "Which races have I run this year?",
            "What running events have I finished so far?",
            ("runs.0", "runs.1"),
            "a 5K fun run and the 10K harbour run",
            ("5k", "10k"),
        ),
        Q(
            "multi_session",
            "Which two places did we consider for the May holiday?",
            "Where were we thinking of going in May, before and after we changed our minds?",
            ("trip.0", "trip.1"),
            "Denmark, then the Ardennes",
            ("denmark", "ardennes"),
        ),
        Q(
            "multi_session",
            "Which pool is my daughter swimming at, and how old is she turning?",
            "What lessons did my daughter start, and how old is she?",
            ("isla", "swim.0"),
            "swimming lessons at the Zwemparadijs; she is seven",
            ("seven", "zwemparadijs"),
        ),
        Q(
            "knowledge_update",
            "Which shift am I working now?",
            "What hours do I do at the hospital these days?",
            ("shift.1",),
            "the night shift",
            ("early shift", "night shift"),
        ),
        Q(
            "knowledge_update",
            "What car do we drive now?",
            "Which vehicle did we end up with after the inspection?",
            ("car.1",),
            "a used Kia Niro hybrid",
            ("corsa", "niro"),
        ),
        Q(
            "knowledge_update",
            "Where are we going for the May holiday?",
            "What's our spring break destination now?",
            ("trip.1",),
            "the Ardennes",
            ("denmark", "ardennes"),
        ),
        Q(
            "knowledge_update",
            "What car did we replace, and with what?",
            "Which vehicle did we get rid of, and what replaced it?",
            ("car.0", "car.1"),
            "the Opel Corsa, with a used Kia Niro hybrid",
            ("corsa", "niro"),
        ),
        Q(
            "temporal",
            "When did I start on the night shift?",
            "On what date did I move onto nights?",
            ("shift.1",),
            "{date}",
            (),
        ),
        Q(
            "temporal",
            "When was my bike stolen at Rotterdam Centraal?",
            "On what day did I lose my Gazelle?",
            ("bike.0",),
            "{date}",
            (),
        ),
        Q(
            "temporal",
            "When did my pottery course start?",
            "What date was my first clay class?",
            ("course",),
            "{date}",
            (),
        ),
        Q(
            "temporal",
            "How many days were there between my pottery course starting and Isla's swimming lessons starting?",
            "How long, in days, between my first clay class and my daughter's first lesson at the pool?",
            ("course", "swim.0"),
            "{days}",
            (),
        ),
        Q(
            "temporal",
            "How many days passed between my bike being stolen and my first night shift?",
            "How many days were there between the Gazelle theft and my move to nights?",
            ("bike.0", "shift.1"),
            "{days}",
            (),
        ),
        Q("unanswerable", "What breed is my dog?", "What breed is my dog?", (), "", ("my dog", "our dog")),
        Q("unanswerable", "What did I name my sailing boat?", "What did I name my sailing boat?", (), "", ("sailing",)),
        Q(
            "unanswerable",
            "Which company does my brother work for?",
            "Which company does my brother work for?",
            (),
            "",
            ("my brother",),
        ),
    ),
)


# -- Dev: a software tester in Manchester, a cat (Rasputin), a sister getting married in Goa ------------------------

DEV = User(
    "dev",
    dt.date(2024, 2, 5),
    lambda day, text: f"[{day:%A, %B %-d, %Y}] {text}",
    threads=(
        (
            _t(
                "wedding",
                "My sister Priya is getting married in Goa at the end of the year and I've been asked to give a "
                "speech. Can you help me structure a five-minute speech that's funny but not embarrassing?",
                "email",
                "a wedding speech for a sister",
                "Being asked to speak at your sister's wedding is an honour, and five minutes is a good length.",
            ),
        ),
        (
            _t(
                "cat",
                "We adopted a rescue cat {when}, a grumpy black tom called Rasputin. What should I have in the flat "
                "for his first week?",
                "plan",
                "a rescue cat's first week",
                "Congratulations on adopting Rasputin, grumpy rescue toms often turn into the most loyal cats.",
            ),
        ),
        (
            _t(
                "band",
                "I play bass in a covers band called The Loose Ends and we need a setlist for a pub gig. Can you help "
                "me order twelve songs so the energy builds?",
                "plan",
                "ordering a setlist",
            ),
        ),
        (
            _t(
                "gran",
                "I want to recreate my grandmother's dal makhani. She grew up in Amritsar and never wrote anything "
                "down. Can you give me a recipe that's close to a Punjabi home version?",
                "recipe",
                "dal makhani",
                "Recreating your grandmother's dal makhani from memory is a lovely project.",
            ),
        ),
        (
            _t(
                "msc",
                "I'm doing a part-time MSc in data science with the Open University alongside work. Can you explain "
                "what a p-value actually means? My stats module is melting my brain.",
                "explain",
                "p-values",
            ),
        ),
        (
            _t(
                "niece",
                "My niece Asha starts nursery next week and I want to get her something for it. Ideas under 30 pounds?",
                "gifts",
                "starting nursery",
            ),
        ),
        (
            _t(
                "brompton",
                "I bought a secondhand Brompton to fold onto the tram. What should I check on a used folding bike?",
                "plan",
                "checking a used folding bike",
            ),
        ),
        (
            _t(
                "colleague",
                "A colleague's son is off to university and she asked me for advice on laptops for him. What matters "
                "for a first-year engineering student?",
                "compare",
                "student laptops",
            ),
        ),
        (
            _t(
                "flat.0",
                "I rent a one-bed in Ancoats and the boiler is on its last legs again. Can you draft an email to the "
                "letting agent?",
                "email",
                "a broken boiler",
            ),
            _t(
                "flat.1",
                "Bad news: our landlord is selling the flat, we've got two months to find somewhere. Can you make me a "
                "checklist for flat viewings?",
                "plan",
                "flat viewings",
                "I'm sorry your landlord is selling, two months is tight but workable.",
            ),
            _t(
                "flat.2",
                "We got the keys to the new place in Salford Quays {when}! Can you help me plan the move itself, we "
                "have a van for one day?",
                "plan",
                "moving day with a van",
                "Congratulations on the new place, a one-day van move needs a tight plan.",
            ),
        ),
        (
            _t(
                "job.0",
                "I've been a QA tester at Northvale Bank for four years and I'm bored. Can you help me write a "
                "LinkedIn "
                "summary that doesn't sound desperate?",
                "email",
                "a LinkedIn summary",
            ),
            _t(
                "job.1",
                "I accepted an offer from Pixelhive, a games studio, as their test lead! I start in a month. How do I "
                "hand in my notice gracefully?",
                "email",
                "a resignation letter",
                "Congratulations on the test lead role, moving into games is a big change.",
            ),
        ),
        (
            _t(
                "race.0",
                "I've entered the Manchester half marathon in the spring. Can you write me a twelve-week plan? I can "
                "run 10 km comfortably right now.",
                "plan",
                "a half marathon plan",
            ),
            _t(
                "race.1",
                "I pulled out of the Manchester half, the date clashed with the move. I've switched to the Great North "
                "Run in September instead. Can you stretch the plan to fit?",
                "plan",
                "a longer half marathon plan",
            ),
        ),
        (
            _t(
                "exam.0",
                "I passed my ISTQB foundation certificate {when}, finally. What's a sensible next certification for a "
                "tester who wants to move into automation?",
                "compare",
                "testing certifications",
            ),
            _t(
                "exam.1",
                "Passed the AWS Cloud Practitioner exam {when} as well! Can you help me write a short post about it "
                "that isn't cringe?",
                "email",
                "a short post about passing an exam",
            ),
        ),
        (
            _t(
                "gig.0",
                "We played our first gig at the Night and Day Cafe {when}. Can you draft a thank-you "
                "message to the venue?",
                "email",
                "thanking a venue",
            ),
            _t(
                "gig.1",
                "We played the Castle Hotel in the Northern Quarter {when}, proper crowd this time. Can you help me "
                "write a short bio for the band's page?",
                "email",
                "a band bio",
            ),
        ),
        (
            _t(
                "scifi",
                "I keep buying books I never finish. I only really get through sci-fi, Le Guin and Iain M. Banks "
                "mostly. Can you suggest a reading routine that sticks?",
                "plan",
                "a reading routine",
            ),
        ),
        (
            _t(
                "morning",
                "Can you help me set up a weekly routine? One rule: nothing before 9am, I'm useless in the mornings "
                "and I'd rather work late.",
                "plan",
                "a weekly routine for a night owl",
            ),
        ),
        (
            _t(
                "spicy",
                "I'm hosting friends on Saturday. Give me a menu for four, and the hotter the better, I love really "
                "spicy food.",
                "recipe",
                "a spicy dinner for four",
            ),
        ),
        (
            _t(
                "seasick",
                "What's the best way to get from Manchester to Dublin for a weekend? I get horribly seasick so I'd "
                "rather not do the ferry.",
                "compare",
                "getting to Dublin",
            ),
        ),
        (
            _t(
                "library",
                "My Python script reads dates from a CSV in three different formats and chokes on them. What's the "
                "cleanest way to parse them all?",
                "debug",
                "parsing dates in three formats",
                said="The cleanest fix is the dateutil library: dateutil.parser.parse reads all three formats without "
                "you listing them.",
            ),
        ),
        (
            _t(
                "stretch",
                "My hamstrings are really tight from all the running. What stretches should I do after a long run?",
                "plan",
                "stretching after a run",
                said="If you only do one, do the pigeon pose: two minutes a side after every long run.",
            ),
        ),
        (
            _t(
                "stag",
                "I'm organising my mate Callum's stag weekend in Lisbon for eight people. Can you plan two days?",
                "trip",
                "Lisbon",
                said="For eight people, book the Almalusa Hostel in Baixa: private rooms for groups and a bar that "
                "will hold your table.",
            ),
        ),
        (
            _t(
                "ereader",
                "Kindle or Kobo? I read in the bath a lot and borrow from the library.",
                "compare",
                "e-readers",
                said="For you I'd go with the Kobo Libra 2: it's waterproof and borrows library books through "
                "OverDrive.",
            ),
        ),
        (
            _t(
                "icebreaker",
                "I'm running my first team meeting as test lead. Any icebreaker that isn't awful for eight engineers?",
                "plan",
                "a first team meeting",
                said="A good one for engineers is Two Truths and a Lie: quick, and people remember each other's facts.",
            ),
        ),
    ),
    questions=(
        Q(
            "user_fact",
            "Where is my sister's wedding?",
            "Where is my sibling's ceremony taking place?",
            ("wedding",),
            "Goa",
            ("goa",),
        ),
        Q(
            "user_fact",
            "What's my cat called?",
            "What is my rescue pet called?",
            ("cat",),
            "Rasputin",
            ("rasputin",),
        ),
        Q(
            "user_fact",
            "What's the name of my band?",
            "What's my covers act called?",
            ("band",),
            "The Loose Ends",
            ("loose ends",),
        ),
        Q(
            "user_fact",
            "Where did my grandmother grow up?",
            "Which city was my gran from?",
            ("gran",),
            "Amritsar",
            ("amritsar",),
        ),
        Q(
            "user_fact",
            "Which university am I doing my MSc with?",
            "Which institution is my master's with?",
            ("msc",),
            "the Open University",
            ("open university",),
        ),
        Q(
            "user_fact",
            "What's my niece called?",
            "What is the name of my sister's little girl starting nursery?",
            ("niece",),
            "Asha",
            ("asha",),
        ),
        Q(
            "user_fact",
            "What kind of folding bike did I buy?",
            "What did I buy that folds up for my commute?",
            ("brompton",),
            "a secondhand Brompton",
            ("brompton",),
        ),
        Q(
            "user_fact",
            "What instrument do I play in the band?",
            "Which instrument is mine on stage?",
            ("band",),
            "bass",
            ("bass",),
        ),
        Q(
            "assistant_fact",
            "Which library did you suggest for parsing the dates in my CSV?",
            "Which package did you recommend for my CSV problem?",
            ("library",),
            "dateutil",
            ("dateutil",),
        ),
        Q(
            "assistant_fact",
            "Which stretch did you say to do if I only do one?",
            "Which yoga move did you say I should do for my hamstrings?",
            ("stretch",),
            "the pigeon pose",
            ("pigeon",),
        ),
        Q(
            "assistant_fact",
            "What hostel did you recommend for Callum's stag in Lisbon?",
            "Where did you tell us eight to stay in Portugal?",
            ("stag",),
            "the Almalusa Hostel",
            ("almalusa",),
        ),
        Q(
            "assistant_fact",
            "Which e-reader did you recommend for me?",
            "Which gadget did you recommend for my books?",
            ("ereader",),
            "the Kobo Libra 2",
            ("libra",),
        ),
        Q(
            "assistant_fact",
            "What icebreaker did you suggest for my first team meeting?",
            "What did you propose to warm up my new team?",
            ("icebreaker",),
            "Two Truths and a Lie",
            ("truths",),
        ),
        Q(
            "preference",
            "Any book to recommend for my flight to Goa?",
            "What should I read on the long plane ride?",
            ("scifi",),
            "science fiction (Le Guin, Banks)",
            ("sci-fi",),
        ),
        Q(
            "preference",
            "What time should I book my dentist appointment?",
            "When should I schedule my haircut?",
            ("morning",),
            "after 9am",
            ("9am",),
        ),
        Q(
            "preference",
            "Which dish should I order at the new Sichuan place?",
            "What should I get from the takeaway tonight?",
            ("spicy",),
            "something very spicy",
            ("spicy",),
        ),
        Q(
            "preference",
            "Would a whale-watching boat trip be a good idea for me on the stag?",
            "Should we book a day out on a catamaran?",
            ("seasick",),
            "no, he gets seasick",
            ("seasick",),
        ),
        Q(
            "multi_session",
            "Which certifications have I passed this year?",
            "What exams have I got through lately?",
            ("exam.0", "exam.1"),
            "ISTQB foundation and AWS Cloud Practitioner",
            ("istqb", "aws"),
        ),
        Q(
            "multi_session",
            "Which venues has my band played?",
            "Which stages has my group been on?",
            ("gig.0", "gig.1"),
            "the Night and Day Cafe and the Castle Hotel",
            ("night and day", "castle"),
        ),
        Q(
            "multi_session",
            "Which two half marathons have I entered?",
            "What races have I signed up for this year?",
            ("race.0", "race.1"),
            "the Manchester half, then the Great North Run",
            ("manchester half", "great north"),
        ),
        Q(
            "multi_session",
            "Where did I rent before, and where did we move to?",
            "Which neighbourhood did I leave and which one am I in now?",
            ("flat.0", "flat.2"),
            "from Ancoats to Salford Quays",
            ("ancoats", "salford"),
        ),
        Q(
            "knowledge_update",
            "Where do I live now?",
            "Which part of town is my home these days?",
            ("flat.2",),
            "Salford Quays",
            ("ancoats", "salford"),
        ),
        Q(
            "knowledge_update",
            "Where do I work now?",
            "Who's my employer these days?",
            ("job.1",),
            "Pixelhive",
            ("northvale", "pixelhive"),
        ),
        Q(
            "knowledge_update",
            "Which half marathon am I running?",
            "What race am I training for now?",
            ("race.1",),
            "the Great North Run",
            ("manchester half", "great north"),
        ),
        Q(
            "knowledge_update",
            "Which company did I leave, and where did I go?",
            "Who was I working for before my current job, and who do I work for now?",
            ("job.0", "job.1"),
            "Northvale Bank, for Pixelhive",
            ("northvale", "pixelhive"),
        ),
        Q(
            "temporal",
            "When did we adopt Rasputin?",
            "On what date did my Rasputin arrive?",
            ("cat",),
            "{date}",
            (),
        ),
        Q(
            "temporal",
            "When did I get the keys to the Salford Quays flat?",
            "What date did I collect the keys in Salford?",
            ("flat.2",),
            "{date}",
            (),
        ),
        Q(
            "temporal",
            "When did I pass my ISTQB certificate?",
            "On what date did I get through the testing exam?",
            ("exam.0",),
            "{date}",
            (),
        ),
        Q(
            "temporal",
            "How many days were there between The Loose Ends' first gig and our gig at the Castle Hotel?",
            "How long, in days, was it from my group's debut to the Castle Hotel show?",
            ("gig.0", "gig.1"),
            "{days}",
            (),
        ),
        Q(
            "temporal",
            "How many days passed between my passing ISTQB and passing the AWS exam?",
            "How many days apart were my two certifications?",
            ("exam.0", "exam.1"),
            "{days}",
            (),
        ),
        Q("unanswerable", "What's my wife's name?", "What's my wife's name?", (), "", ("my wife",)),
        Q(
            "unanswerable",
            "Which football team do I support?",
            "Which football team do I support?",
            (),
            "",
            ("football",),
        ),
        Q(
            "unanswerable",
            "What is my son studying at university?",
            "What is my son studying at university?",
            (),
            "",
            ("my son",),
        ),
    ),
)


# -- Claire: a history teacher in Cork, a son (Rory), a greyhound (Pilot), a mother in Kinsale ---------------------

CLAIRE = User(
    "claire",
    dt.date(2024, 8, 26),
    lambda day, text: f"({day:%Y-%m-%d}) {text}",
    threads=(
        (
            _t(
                "dog",
                "We brought home a retired racing greyhound {when}, a brindle boy called Pilot. He's scared of the "
                "stairs. How do I help a greyhound settle in?",
                "plan",
                "settling a retired greyhound",
                "Congratulations on Pilot! Retired racers are often nervous of stairs at first.",
            ),
        ),
        (
            _t(
                "rory",
                "My son Rory has his Leaving Cert this year and he's panicking about chemistry. Can you make a "
                "revision "
                "timetable that doesn't eat his whole weekend?",
                "plan",
                "a revision timetable",
                "Exam years are stressful for the whole house, and chemistry rewards steady revision.",
            ),
        ),
        (
            _t(
                "mum",
                "My mother has moved into a care home in Kinsale {when}. I want to put together a memory box for her "
                "room. What should go in it?",
                "gifts",
                "a memory box",
                "A memory box is a lovely way to make a new room feel like home for your mother.",
            ),
        ),
        (
            _t(
                "choir",
                "I sing alto in a community choir and we've a concert coming up. Any tips to stop my voice going "
                "croaky by the second half?",
                "explain",
                "keeping a singing voice fresh",
            ),
        ),
        (
            _t(
                "sister",
                "My sister lives in Boston and is visiting for two weeks with her husband. He's never been to Ireland. "
                "Can you plan a road trip from Cork for the three of us?",
                "trip",
                "a road trip from Cork",
            ),
        ),
        (
            _t(
                "relay",
                "Three colleagues and I ran the Cork marathon relay {when}, I did the last leg! Can you suggest a "
                "cool-down routine for next time?",
                "plan",
                "a cool-down routine",
            ),
        ),
        (
            _t(
                "neighbour",
                "My neighbour's cat, a ginger thing called Marmalade, keeps getting into our kitchen through the dog "
                "flap. How do I stop her without upsetting anyone?",
                "explain",
                "keeping a cat out of a dog flap",
            ),
        ),
        (
            _t(
                "brother",
                "My sister's husband Mark is a firefighter and wants to learn about Irish history before the trip. "
                "Can you suggest five short books?",
                "gifts",
                "books on Irish history",
            ),
        ),
        (
            _t(
                "kitchen.0",
                "We're redoing the kitchen. The builder quoted laminate worktops to keep costs down. Can you help me "
                "compare that with wood?",
                "compare",
                "worktops",
            ),
            _t(
                "kitchen.1",
                "Changed our minds on the kitchen: we're going with quartz worktops after all, my aunt left me a bit "
                "of money. How do I look after them?",
                "plan",
                "looking after quartz",
            ),
        ),
        (
            _t(
                "work.0",
                "I've taught history at St Aidan's for fifteen years. Can you help me plan a lesson on the 1916 Rising "
                "for second years?",
                "plan",
                "a history lesson",
            ),
            _t(
                "work.1",
                "Big news, I've left teaching! I started as education officer at the Crawford Gallery {when}. Can you "
                "help me write a tour script for primary school groups?",
                "email",
                "a gallery tour script",
                "Congratulations on the new role, a tour for primary groups should be short and hands-on.",
            ),
        ),
        (
            _t(
                "holiday.0",
                "Planning our October break: I'm thinking Lisbon with Rory after his exams. Can you rough out four "
                "days?",
                "trip",
                "Lisbon",
            ),
            _t(
                "holiday.1",
                "Lisbon's off, flights doubled in price. We're taking the ferry to Roscoff and driving around Brittany "
                "instead. Any ideas for a teenager?",
                "trip",
                "Brittany",
            ),
        ),
        (
            _t(
                "vet.0",
                "The greyhound had to have a tooth out at the vet, 160 euros. Can you help me work out a monthly pet "
                "budget?",
                "budget",
                "a pet budget",
            ),
            _t(
                "vet.1",
                "Another vet bill for the dog, 95 euros for his vaccinations. Can you update the pet budget so I'm not "
                "caught out again?",
                "budget",
                "a revised pet budget",
            ),
        ),
        (
            _t(
                "alcohol",
                "I'm invited to a dinner party at a colleague's house. I don't drink alcohol at all, never have. "
                "What's "
                "a good thank-you present to bring?",
                "gifts",
                "a host present",
            ),
        ),
        (
            _t(
                "boardgames",
                "What could I plan for a quiet Friday night in? I love board games, the co-operative ones especially, "
                "but Rory will be out.",
                "plan",
                "a quiet Friday night",
            ),
        ),
        (
            _t(
                "heights",
                "Can you suggest a couple of walks near Killarney for a Sunday? I'm terrified of heights, so no narrow "
                "ridges or cliff edges.",
                "trip",
                "Killarney walks",
            ),
        ),
        (
            _t(
                "italian",
                "Give me a weeknight dinner that reminds me of Italy, I adore Italian food and I'm in a rut.",
                "recipe",
                "an Italian weeknight dinner",
            ),
        ),
        (
            _t(
                "paint",
                "What colour should I paint the new kitchen? It faces north and it's quite dark.",
                "explain",
                "paint for a north-facing room",
                said="For a dark north-facing kitchen I'd go for a warm sage green, something like Farrow & Ball's "
                "Vert de Terre.",
            ),
        ),
        (
            _t(
                "campsite",
                "Rory and I want to try camping in Kerry for two nights. Can you suggest where and what to bring?",
                "trip",
                "camping in Kerry",
                said="For a first try, book the Glenbeigh Caravan and Camping Park: flat pitches, hot showers and the "
                "beach a short walk away.",
            ),
        ),
        (
            _t(
                "podcastclass",
                "I want a history podcast for my Transition Year class, something lively. Any ideas?",
                "compare",
                "history podcasts",
                said="My first choice for a class is The Rest Is History: two hosts, lively arguments and short "
                "episodes you can clip.",
            ),
        ),
        (
            _t(
                "game",
                "What's a good co-op game for three people who've only played Monopoly?",
                "gifts",
                "a first co-operative game",
                said="Start with Forbidden Island: it's cheap, it plays in half an hour and everyone wins or loses "
                "together.",
            ),
        ),
        (
            _t(
                "spreadsheet",
                "I track my class marks in Excel. How do I get a grade letter from a percentage without nesting ten IF "
                "statements?",
                "formula",
                "turn a percentage into a grade",
                said='Use IFS: =IFS(B2>=85,"H1",B2>=70,"H2",B2>=55,"H3",TRUE,"H4") reads top to bottom and '
                "stops at the first match.",
            ),
        ),
    ),
    questions=(
        Q(
            "user_fact",
            "What's my greyhound called?",
            "What's the name of the retired racer we took in?",
            ("dog",),
            "Pilot",
            ("pilot",),
        ),
        Q(
            "user_fact",
            "Which subject is my son worried about?",
            "Which exam is my Rory most anxious about?",
            ("rory",),
            "chemistry",
            ("chemistry",),
        ),
        Q(
            "user_fact",
            "Where is my mother's care home?",
            "Which town did my mum move to when she needed looking after?",
            ("mum",),
            "Kinsale",
            ("kinsale",),
        ),
        Q(
            "user_fact",
            "What part do I sing in the choir?",
            "What voice am I in the singing group?",
            ("choir",),
            "alto",
            ("alto",),
        ),
        Q(
            "user_fact",
            "Where does my sister live?",
            "Which city is my sister based in?",
            ("sister",),
            "Boston",
            ("boston",),
        ),
        Q(
            "user_fact",
            "Which leg of the marathon relay did I run?",
            "What part of the Cork race did I do for the team?",
            ("relay",),
            "the last leg",
            ("last leg",),
        ),
        Q(
            "user_fact",
            "What does my sister's husband do for a living?",
            "What is my brother-in-law Mark's job?",
            ("brother",),
            "he's a firefighter",
            ("firefighter",),
        ),
        Q(
            "user_fact",
            "What colour is my greyhound?",
            "What does my Pilot look like?",
            ("dog",),
            "brindle",
            ("brindle",),
        ),
        Q(
            "assistant_fact",
            "What paint colour did you suggest for my north-facing kitchen?",
            "What colour did you recommend for my walls?",
            ("paint",),
            "a warm sage green (Vert de Terre)",
            ("sage",),
        ),
        Q(
            "assistant_fact",
            "Which campsite did you suggest in Kerry?",
            "Where did you tell Rory and me to pitch our tent?",
            ("campsite",),
            "Glenbeigh Caravan and Camping Park",
            ("glenbeigh",),
        ),
        Q(
            "assistant_fact",
            "Which history podcast did you recommend for my class?",
            "What show did you say my Transition Years should listen to?",
            ("podcastclass",),
            "The Rest Is History",
            ("rest is history",),
        ),
        Q(
            "assistant_fact",
            "What co-op game did you say to start with?",
            "What did you suggest we buy as our first team-up game?",
            ("game",),
            "Forbidden Island",
            ("forbidden island",),
        ),
        Q(
            "assistant_fact",
            "Which Excel function did you suggest for my grade letters?",
            "What did you suggest for my marks spreadsheet?",
            ("spreadsheet",),
            "IFS",
            ("ifs",),
        ),
        Q(
            "preference",
            "What drink should I bring to my book club's Christmas night?",
            "What should I order at the staff party bar?",
            ("alcohol",),
            "something non-alcoholic",
            ("alcohol",),
        ),
        Q(
            "preference",
            "What should I put on my birthday wish list?",
            "Any idea what I'd enjoy as a present?",
            ("boardgames",),
            "a co-operative board game",
            ("board games",),
        ),
        Q(
            "preference",
            "Would the Cliffs of Moher edge walk suit me?",
            "Should I do the Carrauntoohil ridge scramble?",
            ("heights",),
            "no, she's terrified of heights",
            ("heights",),
        ),
        Q(
            "preference",
            "Where should I go for dinner on my birthday?",
            "What kind of restaurant should my sister book for me?",
            ("italian",),
            "an Italian place",
            ("italian",),
        ),
        Q(
            "multi_session",
            "How much have I spent on vet bills for Pilot?",
            "How much has my pet's treatment come to in total?",
            ("vet.0", "vet.1"),
            "255 euros",
            ("160", "95"),
        ),
        Q(
            "multi_session",
            "Which two places did I consider for the October break?",
            "Which two destinations did we weigh for the autumn trip?",
            ("holiday.0", "holiday.1"),
            "Lisbon, then Brittany",
            ("lisbon", "brittany"),
        ),
        Q(
            "multi_session",
            "What worktops did the builder quote, and what did we choose?",
            "What was our kitchen surface at first, and what is it now?",
            ("kitchen.0", "kitchen.1"),
            "laminate quoted, quartz chosen",
            ("laminate", "quartz"),
        ),
        Q(
            "multi_session",
            "Who's visiting me from Boston and what does he do?",
            "Which American city are my visitors from, and what does Mark do?",
            ("sister", "brother"),
            "Boston; a firefighter",
            ("boston", "firefighter"),
        ),
        Q(
            "knowledge_update",
            "Where do I work now?",
            "What's my job these days?",
            ("work.1",),
            "education officer at the Crawford Gallery",
            ("aidan", "crawford"),
        ),
        Q(
            "knowledge_update",
            "What worktops are we getting in the kitchen?",
            "What will our new counters be made of?",
            ("kitchen.1",),
            "quartz",
            ("laminate", "quartz"),
        ),
        Q(
            "knowledge_update",
            "Where are Rory and I going for the October break?",
            "What's our autumn holiday now?",
            ("holiday.1",),
            "Brittany",
            ("lisbon", "brittany"),
        ),
        Q(
            "knowledge_update",
            "Where did I work before, and where am I now?",
            "What did I leave and what did I move to?",
            ("work.0", "work.1"),
            "St Aidan's, then the Crawford Gallery",
            ("aidan", "crawford"),
        ),
        Q(
            "temporal",
            "When did we bring Pilot home?",
            "On what date did our greyhound arrive?",
            ("dog",),
            "{date}",
            (),
        ),
        Q(
            "temporal",
            "When did my mother move into the care home?",
            "On what day did my Mum go to Kinsale?",
            ("mum",),
            "{date}",
            (),
        ),
        Q(
            "temporal",
            "When did I start at the Crawford Gallery?",
            "When did I begin at the Crawford?",
            ("work.1",),
            "{date}",
            (),
        ),
        Q(
            "temporal",
            "How many days were there between bringing Pilot home and my marathon relay?",
            "How many days were there from Pilot's arrival to my relay run?",
            ("dog", "relay"),
            "{days}",
            (),
        ),
        Q(
            "temporal",
            "How many days passed between my mum moving to Kinsale and my start at the gallery?",
            "How many days apart were Mum's move and my first day in the new job?",
            ("mum", "work.1"),
            "{days}",
            (),
        ),
        Q("unanswerable", "What is my husband's job?", "What is my husband's job?", (), "", ("my husband",)),
        Q("unanswerable", "What's my cat called?", "What's my cat called?", (), "", ("my cat",)),
        Q("unanswerable", "What is my blood type?", "What is my blood type?", (), "", ("blood type",)),
    ),
)
USERS = (MAREN, DEV, CLAIRE)


# -- the assistant's answers: one writer per task, each from its own stock ------------------------------------------

INTROS = (
    "Here's a plan for {topic} you can adapt.",
    "Happy to help with {topic}. Here's how I'd approach it.",
    "Good question. Below is a practical way to handle {topic}.",
    "Sure! Here's a step-by-step take on {topic}.",
    "Let's break {topic} down into manageable pieces.",
    "Here's a straightforward approach to {topic}, with the reasoning behind each step.",
    "Absolutely. Here's what I'd suggest for {topic}.",
)
OUTROS = (
    "If you tell me more about your constraints, I can tailor this further.",
    "Want me to turn this into a printable checklist?",
    "Let me know how it goes, and I can adjust anything that doesn't fit.",
    "If any step feels like too much, say which one and I'll suggest a lighter version.",
    "Happy to go into more detail on any of these points.",
    "I can also make a shorter version if you need something quick to share.",
    "Shall I add rough costs or timings to this?",
)
PLAN_STEPS = (
    "Start small: pick {n} things you can do this week rather than overhauling everything at once.",
    "Write the plan down somewhere you'll see it every day, such as the fridge or your phone's lock screen.",
    "Block out fixed times in your calendar, and treat them like appointments you can't move.",
    "Check in with yourself after {n} days: what worked, what felt forced, what you skipped.",
    "Keep a short list of fallback options for days when energy or time runs out.",
    "Group similar jobs together so you're not switching context all the time.",
    "Prepare the night before: lay out what you'll need so the first step takes no willpower.",
    "Build in one buffer slot a week for whatever slipped.",
    "Tell someone else about the plan; a little accountability goes a long way.",
    "Track progress with a simple tick chart rather than an app that needs setting up.",
    "Put the hardest part at the time of day you're most alert.",
    "Reward yourself for finishing each stage, even with something tiny.",
    "Expect a dip around week {n}; that's normal and not a sign the plan is failing.",
    "Keep the first session short, about {m} minutes, so it feels easy to repeat.",
    "Make a note of anything you need to buy or borrow before you begin.",
    "Review the whole plan after a month and drop anything that isn't earning its place.",
    "If you miss a day, just pick up the next step rather than trying to catch up twice over.",
    "Keep a box or folder for everything related to this so nothing goes missing.",
    "Ask for help early with any step that depends on someone else.",
    "Set a simple rule you can follow without thinking, such as never skipping twice in a row.",
)
TRIP_STOPS = (
    "a walking tour of the old centre, most start around {hour} from the main square",
    "lunch at the covered food market, where you can graze from several stalls",
    "a slow afternoon in the botanical gardens",
    "the cathedral and the view from its tower, if you're up for the stairs",
    "a riverside walk at sunset followed by dinner in the old quarter",
    "the city museum, which gives a good overview in about {m} minutes",
    "a day trip by train to a nearby town, roughly {n} hours each way",
    "a cooking class or food tour, which is a fun way to meet locals",
    "a morning at the beach or lakeside if the weather holds",
    "browsing the independent shops in the artists' district",
    "a bike rental for a couple of hours along the cycle paths",
    "a boat trip, which is often the best way to see the waterfront",
    "a coffee stop in one of the historic cafes",
    "an evening concert or live music in a small bar",
    "the flea market, which is busiest in the morning",
    "a viewpoint hike at the edge of town, about {m} minutes uphill",
    "a rainy-day backup: the aquarium or the science centre",
    "a picnic in the largest park with supplies from a local bakery",
)
TRIP_TIPS = (
    "Buy a travel card on the first day; it usually pays for itself by the second.",
    "Book the busiest sights online a few days ahead to skip the queues.",
    "Keep the last evening free in case you want to go back somewhere you liked.",
    "Carry a light rain jacket; the weather can turn quickly.",
    "Restaurants fill up early at weekends, so reserve dinner where you can.",
    "Check opening days: many museums close on Mondays.",
    "Leave an hour of slack each day; travelling is more tiring than it looks.",
    "Download offline maps before you go so you're not relying on roaming.",
)
COMPARE_POINTS = (
    "Price: the cheaper option saves about {n}0 up front, but check what the running costs add up to over {n} years.",
    "Reliability: read long-term owner reviews rather than launch reviews, which rarely mention faults.",
    "Weight and size: if you'll carry it daily, a few hundred grams make a real difference.",
    "Battery or running time: real-world figures are usually about {p}% below the advertised ones.",
    "Support and warranty: a longer warranty is worth a small premium for something you rely on.",
    "Ease of use: the simpler option wins if several people in the household will use it.",
    "Resale value: well-known brands hold their value better if you upgrade later.",
    "Flexibility: one option locks you in, the other lets you change your mind more cheaply.",
    "Hidden costs: accessories, subscriptions and fees can change which one is really cheaper.",
    "Noise and comfort: try both in person if you can; specifications don't capture how they feel.",
    "Environmental impact: buying refurbished or secondhand is often the greenest choice.",
    "Availability: check delivery times and whether spare parts are easy to get.",
    "Ecosystem: it's easier to stay with what already works with your other devices or services.",
    "Learning curve: one is ready to go, the other rewards a weekend of setting up.",
)
RECIPE_INGREDIENTS = (
    "2 onions, finely chopped",
    "3 cloves of garlic, crushed",
    "a thumb of ginger, grated",
    "400 g tin of chopped tomatoes",
    "1 tbsp olive oil",
    "500 ml vegetable stock",
    "a handful of spinach",
    "1 tsp smoked paprika",
    "salt and black pepper",
    "a squeeze of lemon juice",
    "200 g rice or crusty bread to serve",
    "1 red pepper, sliced",
    "2 carrots, diced",
    "a small bunch of parsley",
    "150 ml cream or oat cream",
    "1 tsp ground cumin",
    "2 tbsp tomato paste",
    "a pinch of chilli flakes",
    "100 g grated cheese",
    "1 tin of chickpeas, drained",
)
RECIPE_STEPS = (
    "Warm the oil in a large pan over a medium heat and soften the onions for {n} minutes.",
    "Add the garlic and spices and cook for a minute until fragrant.",
    "Stir in the tomatoes and stock, bring to a simmer and cook for {m} minutes.",
    "Taste and adjust the seasoning; a pinch of sugar helps if the tomatoes are sharp.",
    "Meanwhile, cook the rice according to the packet.",
    "Add the vegetables in order of how long they take: the hardest first.",
    "Let it rest for {n} minutes off the heat; the flavours settle.",
    "Finish with lemon juice and fresh herbs just before serving.",
    "If it's too thick, loosen with a splash of water; too thin, simmer uncovered.",
    "Everything up to this point can be done the day before and reheated gently.",
    "Preheat the oven to {t} degrees and line a large tray with baking paper.",
    "Roast for {m} minutes, turning halfway so everything browns evenly.",
    "Serve in warm bowls with the bread on the side.",
    "Leftovers keep for {n} days in the fridge or three months in the freezer.",
)
EMAIL_LINES = (
    "I hope you're well. I'm writing about {topic}.",
    "Thank you for getting back to me so quickly last time.",
    "I'd be grateful if we could find a solution that works for both of us.",
    "I've attached the relevant details for reference.",
    "Could you let me know by the end of next week how you'd like to proceed?",
    "I'm happy to talk it through on the phone if that's easier.",
    "I appreciate this may take a little time to sort out.",
    "To summarise the key points briefly:",
    "Please let me know if you need anything else from me.",
    "Thanks in advance for your help with this.",
    "I wanted to raise this now rather than let it drag on.",
    "I understand things are busy, so I've kept this short.",
    "As discussed, the main issue is the timing.",
    "I'd really value your thoughts on this.",
)
EMAIL_TIPS = (
    "Keep the subject line specific so it's easy to find later.",
    "Put the request in the first two sentences; people skim.",
    "Read it aloud once before sending, awkward phrasing jumps out.",
    "If it's sensitive, wait an hour and reread it with fresh eyes.",
    "One clear next step at the end makes a reply much more likely.",
    "Avoid apologising more than once; it weakens the message.",
)
EXPLAIN_LINES = (
    "The short version: {topic} comes down to a few ideas that fit together.",
    "A useful way to picture it is as a balance: one side pushes, the other resists.",
    "Most confusion comes from two terms that sound alike but mean different things.",
    "In everyday terms, think of it like filling a bath with the plug half out.",
    "The key number to watch is the rate, not the total, at least at first.",
    "There are exceptions, but they only matter in unusual situations.",
    "People often get this backwards, which is why the standard advice can sound odd.",
    "If you remember one thing, remember that small, regular changes add up.",
    "Historically, the idea developed over many years before it was written down clearly.",
    "A simple experiment at home can show the effect in about {m} minutes.",
    "The science is well established, though the details are still being studied.",
    "It helps to separate what you can control from what you can't.",
    "Experts disagree on some of the finer points, but the basics are not controversial.",
    "A common myth is that it happens all at once; in fact it's gradual.",
    "Here's a worked example with round numbers to make it concrete.",
    "Once you see the pattern, you'll notice it in lots of other places.",
)
GIFT_IDEAS = (
    "a personalised mug or print (about {g})",
    "a voucher for an experience, such as a class or a tasting",
    "a good-quality notebook and pen set",
    "a board game the whole family can play",
    "a small plant with a handwritten care card",
    "a subscription box for a few months",
    "a photo book of the past year",
    "tickets to a show or a match",
    "a cosy blanket or pair of slippers",
    "a book by an author they already love, plus a bookmark",
    "a hamper of local treats",
    "a day out you organise yourself, with a printed itinerary",
    "a craft kit to try something new",
    "a framed map of a place that matters to them",
    "a set of nice candles or a diffuser",
    "something handmade, even if it's simple",
)
GIFT_REASONS = (
    "Easy to post if you can't hand it over in person.",
    "Thoughtful without being expensive.",
    "Works even if you're not sure of their taste.",
    "It gets used, rather than sitting in a drawer.",
    "A card explaining why you chose it makes it special.",
    "Good for someone who says they don't want anything.",
    "You can scale it up or down to fit the budget.",
    "Most shops will gift-wrap it for free.",
)
GIFT_ADVICE = (
    "If you're stuck, think about what they talk about most and buy something that goes with it.",
    "An experience often means more than an object, especially for someone who already has a lot.",
    "Set the budget first; it narrows the list quickly.",
    "Pair a small present with a handwritten note; the note is what gets kept.",
)
FORMULAS = (
    ("sum sales by region", '=SUMIFS(C:C, B:B, "North")', "adds column C only where column B says North"),
    ("flag overdue invoices", '=IF(AND(D2<TODAY(), E2=""), "Overdue", "")', "marks unpaid rows past their date"),
    ("count unique customers", "=COUNTA(UNIQUE(A2:A500))", "counts each name once"),
    ("split full names", '=TEXTBEFORE(A2, " ")', "takes everything before the first space"),
    ("working days between two dates", "=NETWORKDAYS(B2, C2)", "skips weekends between the dates"),
    ("highlight duplicates", "=COUNTIF($A$2:$A$500, A2)>1", "is true for any value that appears twice"),
    ("round to the nearest 5", "=MROUND(A2, 5)", "rounds each value to the nearest multiple of five"),
    ("average ignoring zeros", '=AVERAGEIF(B2:B200, "<>0")', "leaves zeros out of the mean"),
    ("join first and last names", '=A2 & " " & B2', "joins the two cells with a space"),
    ("months between two dates", '=DATEDIF(A2, B2, "m")', "counts whole months"),
)
FORMULA_NOTES = (
    "Use absolute references (the dollar signs) for ranges you fill down, or they'll drift.",
    "If the result looks wrong, check for stray spaces with =TRIM() first.",
    "Dates stored as text are the most common cause of errors; format the column as Date.",
    "Wrap it in IFERROR if you'd rather see a blank than an error.",
    "Whole-column references are convenient but can slow down very large sheets.",
    "Name your ranges (Formulas > Define Name) and the formula becomes much easier to read.",
    "Test it on five rows you can check by hand before trusting it on the whole sheet.",
    "Google Sheets supports the same syntax, with small differences in a few functions.",
)
BUGS = (
    (
        "KeyError: 'date'",
        "the column header has a trailing space, so the key doesn't match",
        "row = {k.strip(): v for k, v in row.items()}",
    ),
    (
        "IndexError: list index out of range",
        "the last line of the file is empty, so split() returns too few parts",
        "if not line.strip():\n    continue",
    ),
    (
        'TypeError: can only concatenate str (not "int") to str',
        "a number is being glued to text",
        'message = f"Total: {total}"',
    ),
    (
        "FileNotFoundError",
        "the script runs from another folder, so the relative path points nowhere",
        'path = Path(__file__).parent / "data.csv"',
    ),
    ("UnicodeDecodeError", "the file was saved in Windows-1252, not UTF-8", 'open(path, encoding="cp1252")'),
    (
        "a loop that never ends",
        "the counter is never increased inside the while loop",
        "while i < len(items):\n    ...\n    i += 1",
    ),
    (
        "ValueError: invalid literal for int()",
        "some cells hold '1,200' with a thousands separator",
        'int(cell.replace(",", ""))',
    ),
    (
        "a list that's empty at the end",
        "the list is created inside the loop, so it's reset every time",
        "results = []\nfor item in items:\n    results.append(item)",
    ),
)
DEBUG_NOTES = (
    "Print the repr() of the value just before the failing line; hidden characters show up immediately.",
    "Run it on a five-line sample file first, it's much quicker to see what's going on.",
    "Add a try/except only around the line that fails, so other errors aren't swallowed.",
    "Read the traceback from the bottom up: the last line is the error, the one above is where it happened.",
    "A debugger breakpoint (breakpoint() in Python 3.7+) lets you inspect variables at that moment.",
    "Once it works, add a small test so the bug can't sneak back in.",
    "Logging is kinder than print statements once the script grows.",
)
BUDGET_LINES = (
    "Fixed costs first: rent or mortgage, bills and insurance, about {p}% of take-home pay for most people.",
    "Set aside a buffer of around {n}0 a month for the things that always come up.",
    "Round every category up slightly; underestimating is how budgets fail.",
    "Automate a transfer to savings on payday so you never see the money.",
    "Review the numbers after three months and move money between categories as needed.",
    "Irregular costs (annual fees, check-ups, birthdays) go in a sinking fund: divide the yearly total by twelve.",
    "Keep one small fun category; budgets with no treats don't last.",
    "A spreadsheet with one row per category and one column per month is enough to start.",
)
PARTY_LINES = (
    "Keep the main activity to about {m} minutes; young children lose focus quickly.",
    "Have a quiet corner with books or colouring for anyone who gets overwhelmed.",
    "Plan food that can be eaten with one hand while standing.",
    "Send invitations about three weeks ahead and ask about allergies.",
    "A simple timeline helps: arrival games, main activity, food, cake, goodbye.",
    "Party bags can be small; children remember the games, not the bags.",
    "Ask another adult to be in charge of photos so you can enjoy it.",
    "Prepare a backup indoor plan in case of rain.",
    "Clue {n}: Where the flowers drink when days are dry, look underneath and you'll find it nearby.",
    "Clue {n}: I go up and down but never walk away; bounce on me and find the next clue today.",
    "Clue {n}: Where the tools all sleep at night, open my door and look to the right.",
    "Clue {n}: I'm round and I hold the morning bread; look inside me, the next clue is red.",
)
FOLLOW_UPS = (
    ("Can you make that shorter? I only need the main points.", "short"),
    ("Could you put that into a simple table?", "table"),
    ("What if I only have half the time?", "short"),
    ("Thanks! Could you explain the second point a bit more?", "more"),
    ("That's great, can you give me a version I can print?", "short"),
    ("Hmm, that's a bit much. Simpler please?", "short"),
    ("Perfect, one more thing: what would you do first?", "first"),
    ("Is there anything I've forgotten?", "more"),
    ("Can you make it a bit more casual?", "short"),
    ("Nice. What are the most common mistakes people make with this?", "more"),
)
FOLLOW_OPENINGS = {
    "short": "Sure, here's a shorter version.",
    "table": "Here it is as a simple list you can paste into a table.",
    "more": "Of course. A bit more detail:",
    "first": "If I had to pick where to start:",
}
THANKS = (
    "Thanks, that's really helpful!",
    "Brilliant, thank you.",
    "Perfect, that's exactly what I needed.",
    "Great, I'll try that tonight.",
    "Cheers, that makes sense now.",
    "Thank you so much!",
    "Super, thanks.",
    "Lovely, thank you!",
)
WELCOME = (
    "You're welcome! Good luck with it.",
    "Glad it helped. Come back any time if something doesn't work as expected.",
    "You're very welcome, enjoy!",
    "Happy to help. Let me know how it turns out.",
    "Any time! Feel free to share how it went.",
)


REASONS = (
    "This matters more than it looks.",
    "It saves a surprising amount of time later.",
    "Most people skip this and regret it.",
    "It's the single biggest difference in my experience.",
    "You can always loosen this once it's a habit.",
    "It also makes the next step easier.",
    "It's cheap, quick and easy to undo if it doesn't suit you.",
    "The effect is small at first but builds over a few weeks.",
    "That way nothing depends on remembering it at the last minute.",
    "It keeps the whole thing from feeling overwhelming.",
    "If you only do a few of these, make this one of them.",
    "Expect this to take a little trial and error.",
    "It's worth doing even if the rest slips.",
    "The details vary, but the principle holds almost everywhere.",
    "This is where most of the value comes from.",
    "Give it about {n} tries before you judge it.",
)
"""Why a line of an answer matters: said after about half of them, so answers run long as an assistant's do."""
CONTEXT = (
    "Before the details, it helps to be clear about what a good result looks like for you.",
    "There isn't one right answer here; it depends on your time, budget and how much hassle you'll tolerate.",
    "The most common mistake with {topic} is trying to do everything at once.",
    "A little preparation up front makes the rest much smoother.",
    "I've kept this realistic rather than ideal, since real weeks rarely go to plan.",
    "Most of the effort goes into the first few steps; after that it mostly runs itself.",
    "I've assumed an ordinary budget and no special equipment; tell me if that's wrong.",
    "It's worth deciding now which parts are essential and which are nice to have.",
    "People who get this right usually keep it simple and consistent.",
    "The order matters a bit more than the individual steps.",
    "Where there's a trade-off, I've said so, so you can choose what suits you.",
    "If you've tried something like this before, reuse whatever worked last time.",
)
"""An answer's framing paragraph (a few of these after its opening)."""


def _fill(rng: random.Random, line: str) -> str:
    """A stock line with its numbers drawn ({n}: 2-6, {m}: minutes, {p}: percent, {hour}, {t}: oven degrees,
    {g}: a price)."""
    return line.format(
        n=rng.randint(2, 6),
        m=rng.choice((15, 20, 25, 30, 40, 45, 50, 90)),
        p=rng.choice((10, 15, 20, 25, 30, 35, 40)),
        hour=rng.choice(("10am", "11am", "2pm", "3pm")),
        t=rng.choice((180, 190, 200, 220)),
        g=rng.choice((15, 20, 25, 30, 35)),
        topic="{topic}",
    )


def _items(
    rng: random.Random, stock: tuple[str, ...], count: int, numbered: bool = True, reasons: tuple[str, ...] = ()
) -> str:
    """``count`` lines of ``stock``, most with a reason after them (``REASONS`` unless given)."""
    reasons = reasons or REASONS
    picked = [_fill(rng, line) for line in rng.sample(stock, min(count, len(stock)))]
    picked = [
        f"{line}{'' if line[-1] in '.?!)' else '.'} {_fill(rng, rng.choice(reasons))}" if rng.random() < 0.7 else line
        for line in picked
    ]
    return "\n".join(f"{i}. {line}" if numbered else f"- {line}" for i, line in enumerate(picked, 1))


def _plan(rng: random.Random, topic: str, size: int) -> list[str]:
    parts = []
    titles = ("Getting started", "The first weeks", "Keeping it going", "Before you begin", "Week by week")
    for stage, title in enumerate(rng.sample(titles, 3 if size > 2 else 2)):
        parts.append(f"**{title}**\n{_items(rng, PLAN_STEPS, size + stage, numbered=stage == 0)}")
    return parts


def _trip(rng: random.Random, topic: str, size: int) -> list[str]:
    days = []
    for day in range(1, size + 1):
        stops = [_fill(rng, stop) for stop in rng.sample(TRIP_STOPS, 3)]
        days.append(f"**Day {day}**\n- Start with {stops[0]}\n- Then {stops[1]}\n- Later, {stops[2]}")
    return [*days, f"**Practical tips**\n{_items(rng, TRIP_TIPS, 3, numbered=False)}"]


def _compare(rng: random.Random, topic: str, size: int) -> list[str]:
    verdict = rng.choice(
        (
            "If you value simplicity, go for the first; if you want room to grow, the second.",
            "Neither is a bad choice; the deciding factor is how often you'll really use it.",
            "On balance the cheaper option is enough for most people in your situation.",
            "I'd shortlist both and decide after handling them in a shop.",
        )
    )
    return [f"**What to weigh up**\n{_items(rng, COMPARE_POINTS, size + 2)}", f"**Verdict**\n{verdict}"]


def _recipe(rng: random.Random, topic: str, size: int) -> list[str]:
    serves = rng.choice(("Serves 4", "Serves 6", "Serves 2, with leftovers", "Serves 4-6"))
    return [
        f"**{topic[0].upper()}{topic[1:]}** ({serves}, about {rng.choice((30, 40, 45, 60, 75))} minutes)",
        f"**Ingredients**\n{_items(rng, RECIPE_INGREDIENTS, size + 4, numbered=False)}",
        f"**Method**\n{_items(rng, RECIPE_STEPS, size + 2)}",
    ]


def _email(rng: random.Random, topic: str, size: int) -> list[str]:
    body = " ".join(_fill(rng, line).replace("{topic}", topic) for line in rng.sample(EMAIL_LINES, size + 1))
    more = " ".join(_fill(rng, line).replace("{topic}", topic) for line in rng.sample(EMAIL_LINES, size))
    subject = rng.choice(("Quick question", "Following up", "Request", "Update", "A small favour", "Next steps"))
    return [
        f"**Subject:** {subject}: {topic}",
        f"Hi,\n\n{body}\n\n{more}\n\nBest wishes,\n[Your name]",
        f"**A few tips**\n{_items(rng, EMAIL_TIPS, 3, numbered=False)}",
    ]


def _explain(rng: random.Random, topic: str, size: int) -> list[str]:
    lines = [_fill(rng, line).replace("{topic}", topic) for line in rng.sample(EXPLAIN_LINES, size * 2 + 2)]
    half = len(lines) // 2
    return [" ".join(lines[:half]), "**In practice**\n" + "\n".join(f"- {line}" for line in lines[half:])]


def _gifts(rng: random.Random, topic: str, size: int) -> list[str]:
    return [
        f"**Ideas**\n{_items(rng, GIFT_IDEAS, size + 4, reasons=GIFT_REASONS)}",
        rng.choice(GIFT_ADVICE),
    ]


def _formula(rng: random.Random, topic: str, size: int) -> list[str]:
    what, formula, does = next((f for f in FORMULAS if f[0] == topic), rng.choice(FORMULAS))
    return [
        f"A pattern that often helps here is the one for {what}:\n```\n{formula}\n```\nIt {does}.",
        f"**Things to check**\n{_items(rng, FORMULA_NOTES, size + 1)}",
    ]


def _debug(rng: random.Random, topic: str, size: int) -> list[str]:
    error, cause, fix = next((b for b in BUGS if b[0] == topic), rng.choice(BUGS))
    return [
        f"A common cause of `{error}` in scripts like this is that {cause}. A fix:\n```python\n{fix}\n```",
        f"**How to find it next time**\n{_items(rng, DEBUG_NOTES, size + 1)}",
    ]


def _budget(rng: random.Random, topic: str, size: int) -> list[str]:
    return [f"**How I'd set it up**\n{_items(rng, BUDGET_LINES, size + 2)}"]


def _party(rng: random.Random, topic: str, size: int) -> list[str]:
    return [f"**Plan**\n{_items(rng, PARTY_LINES, size + 4)}"]


TASKS: dict[str, Callable[[random.Random, str, int], list[str]]] = {
    "plan": _plan,
    "trip": _trip,
    "compare": _compare,
    "recipe": _recipe,
    "email": _email,
    "explain": _explain,
    "gifts": _gifts,
    "formula": _formula,
    "debug": _debug,
    "budget": _budget,
    "party": _party,
}
"""Each task's writer: ``(rng, topic, size)`` to the answer's sections (size 1-4: longer answers)."""

FILLERS: tuple[tuple[str, str, str], ...] = (
    ("trip", "Ghent", "Can you plan a long weekend in Ghent? We arrive Friday evening and leave Monday lunchtime."),
    ("trip", "Edinburgh", "What would you do with two days in Edinburgh in late autumn?"),
    ("trip", "Bologna", "I've got three days in Bologna for a conference, with two free afternoons. Ideas?"),
    ("trip", "Copenhagen", "Three days in Copenhagen on a budget, what's worth it?"),
    ("trip", "Vienna", "Help me plan a short city break in Vienna, mostly museums and cake."),
    ("trip", "Seville", "Is two days enough for Seville? If so, how would you spend them?"),
    ("formula", "sum sales by region", "How do I total the sales for one region in Excel when the data is messy?"),
    ("formula", "count unique customers", "What's the formula to count how many different customers are in a list?"),
    (
        "formula",
        "working days between two dates",
        "How do I work out the number of working days between two dates in a spreadsheet?",
    ),
    ("formula", "highlight duplicates", "Is there a quick way to flag duplicate entries in a column?"),
    ("formula", "round to the nearest 5", "My prices need rounding to the nearest 5 in Google Sheets. How?"),
    ("formula", "average ignoring zeros", "How do I average a column but skip the zeros?"),
    ("email", "a delayed delivery", "Can you write a polite complaint about a delivery that's two weeks late?"),
    ("email", "asking for a day off", "Draft a short message asking my manager for a day off next Friday."),
    (
        "email",
        "declining an invitation",
        "Help me decline a wedding invitation from an old friend without hurting her feelings.",
    ),
    ("email", "a reference request", "I need to ask a former teacher for a reference. Can you write it?"),
    ("email", "a refund", "Write an email asking a shop for a refund on a broken kettle."),
    ("email", "chasing an invoice", "How do I politely chase an invoice that's thirty days overdue?"),
    ("compare", "two robot vacuums", "Is a robot vacuum worth it in a small flat? Pros and cons please."),
    ("compare", "phone contracts", "SIM-only or a phone contract, which is usually cheaper over two years?"),
    ("compare", "air fryers", "Air fryer or a small oven, which would you get for a family of three?"),
    ("compare", "running watches", "What should I look for in a running watch? I'm not a serious athlete."),
    ("compare", "electric toothbrushes", "Are expensive electric toothbrushes really better than cheap ones?"),
    ("compare", "mattresses", "Memory foam or pocket sprung mattress for someone with a bad back?"),
    ("recipe", "a one-pot chickpea curry", "Can you give me an easy one-pot dinner with chickpeas?"),
    ("recipe", "a mushroom risotto", "How do I make a mushroom risotto that isn't gluey?"),
    ("recipe", "a sausage and pepper tray bake", "I need a tray bake that needs almost no washing up."),
    ("recipe", "shakshuka", "What's a good brunch to make for friends, something with eggs?"),
    ("recipe", "a vegetable lasagne", "Could you give me a vegetable lasagne I can make ahead for a crowd?"),
    ("recipe", "banana bread", "I have four overripe bananas. Banana bread recipe please?"),
    (
        "debug",
        "KeyError: 'date'",
        "My Python script crashes with KeyError: 'date' when reading a CSV. The column is there!",
    ),
    (
        "debug",
        "IndexError: list index out of range",
        "Why would I get IndexError: list index out of range on the last line of my file?",
    ),
    (
        "debug",
        'TypeError: can only concatenate str (not "int") to str',
        "Getting TypeError: can only concatenate str to str in a print. What am I doing wrong?",
    ),
    ("debug", "FileNotFoundError", "My script works in VS Code but says FileNotFoundError from the terminal. Why?"),
    ("debug", "a loop that never ends", "My while loop never stops and the fan goes mad. Can you spot the problem?"),
    (
        "debug",
        "a list that's empty at the end",
        "I append to a list in a for loop but it's empty at the end. What's going on?",
    ),
    ("plan", "decluttering", "Can you help me declutter the flat over a month without losing my mind?"),
    ("plan", "a study routine", "How should I structure two hours of studying in the evening?"),
    ("plan", "meal prep", "Give me a Sunday meal-prep routine for five weekday lunches."),
    ("plan", "getting up earlier", "I want to start getting up half an hour earlier. How do I make it stick?"),
    ("plan", "a garage clear-out", "How do I tackle a garage full of stuff in one weekend?"),
    ("plan", "a spring clean", "Can you make me a spring cleaning checklist, room by room?"),
    ("explain", "compound interest", "Can you explain compound interest like I'm twelve?"),
    ("explain", "how a heat pump works", "How does a heat pump actually heat a house? It sounds like magic."),
    ("explain", "RAM and storage", "What's the difference between RAM and storage on a computer?"),
    ("explain", "inflation", "What does inflation actually do to money in a savings account?"),
    ("explain", "why bread rises", "Why does bread rise? I've never really understood yeast."),
    ("explain", "jet lag", "Why is jet lag worse flying east than west?"),
    ("gifts", "a retirement present", "A colleague is retiring after thirty years. Group gift ideas?"),
    ("gifts", "a teacher thank-you", "What's a nice end-of-year thank-you for a teacher?"),
    ("gifts", "a housewarming", "Housewarming present ideas for friends who have everything?"),
    ("gifts", "a new baby", "What do you get for friends who just had a baby, that isn't clothes?"),
    ("budget", "a monthly budget", "Can you help me set up a simple monthly budget?"),
    ("budget", "saving for a holiday", "How much should I put aside each month to afford a holiday next summer?"),
    ("budget", "a Christmas budget", "How do I stop Christmas from wrecking my finances?"),
)
"""Tasks that say nothing personal: (task, topic, request)."""
LEADS = ("", "", "", "Quick one. ", "Hi again! ", "Morning! ", "Hello, ", "OK, another question: ", "Hey, ")


# -- time phrases -------------------------------------------------------------------------------------------------


PHRASES = ("yesterday", "today", "last", "a week ago", "two weeks ago", "three days ago", "the day before yesterday")
"""The relative phrases a told event is dated by ("last": "last Thursday", two to six days back, never ambiguous)."""
DAYS_BACK = {
    "today": 0,
    "yesterday": 1,
    "the day before yesterday": 2,
    "three days ago": 3,
    "a week ago": 7,
    "two weeks ago": 14,
}


def time_phrase(rng: random.Random, day: dt.date) -> str:
    """A phrase placing a told event before ``day``."""
    phrase = PHRASES[rng.randrange(len(PHRASES))]
    if phrase == "last":
        return f"last {WEEKDAYS[(day - dt.timedelta(days=rng.randint(2, 6))).weekday()]}"
    return phrase


def time_answer(phrase: str, day: dt.date) -> dt.date:
    """The day ``phrase`` said on ``day`` points at."""
    if phrase in DAYS_BACK:
        return day - dt.timedelta(days=DAYS_BACK[phrase])
    weekday = WEEKDAYS.index(phrase.removeprefix("last ").capitalize())
    return day - dt.timedelta(days=(day.weekday() - weekday) % 7 or 7)


# -- the writer ---------------------------------------------------------------------------------------------------


@dataclass
class _Writer:
    """Writes one user's chat: the stories placed in sessions of their own, in order, among filler tasks."""

    user: User
    rng: random.Random
    chat: Conversation = field(init=False)
    evidence: dict[str, int] = field(default_factory=dict)
    """A Told's label to its request's position ("label.said": its answer's)."""
    days: dict[str, dt.date] = field(default_factory=dict)
    """A dated Told's label to the day its phrase points at."""
    said: set[str] = field(default_factory=set)
    day: dt.date | None = None
    """The session's date, until its first message is written."""

    def __post_init__(self) -> None:
        self.chat = Conversation(f"fresh8-{self.user.name}", "assistant")

    def write(self) -> Conversation:
        rng, user = self.rng, self.user
        sessions = rng.randint(58, 68)
        told = sum(len(thread) for thread in user.threads)
        at = rng.sample(range(sessions), told)
        plan: dict[int, Told] = {}
        for thread in user.threads:
            mine, at = sorted(at[: len(thread)]), at[len(thread) :]
            plan.update(zip(mine, thread, strict=True))
        fillers = list(FILLERS)
        rng.shuffle(fillers)
        day = user.start
        for number in range(sessions):
            if number:
                day += dt.timedelta(days=rng.randint(2, 6))
            self.session(day, plan.get(number), fillers)
        self.chat.questions = [self.ask(q) for q in user.questions]
        rng.shuffle(self.chat.questions)
        return self.chat

    def ask(self, q: Q) -> Asked:
        """The question in one of its wordings, its labels as positions, a time answer worked out."""
        text = q.same if self.rng.random() < 0.35 else q.other
        evidence = tuple(self.evidence[f"{label}.said" if q.kind == "assistant_fact" else label] for label in q.labels)
        answer = q.answer
        if answer == "{date}":
            answer = f"{self.days[q.labels[0]]:%-d %B %Y}"
        elif answer == "{days}":
            first, second = (self.days[label] for label in q.labels)
            answer = f"{abs((second - first).days)} days"
        return Asked(text, q.kind, evidence, answer, q.keys)

    def session(self, day: dt.date, told: Told | None, fillers: list[tuple[str, str, str]]) -> None:
        """A filler task (or two), the told one among them, follow-ups and now and then thanks."""
        rng = self.rng
        self.day = day
        tasks: list[Told | None] = [None] * (1 if told or rng.random() < 0.6 else 2)
        if told:
            tasks.insert(rng.randrange(len(tasks) + 1), told)
            if rng.random() < 0.5:
                tasks.remove(None)
        for task in tasks:
            if task is None:
                kind, topic, request = fillers.pop() if fillers else rng.choice(FILLERS)
                if not fillers:
                    fillers.extend(FILLERS)
                    rng.shuffle(fillers)
                self.exchange(rng.choice(LEADS) + request, kind, topic)
            else:
                self.tell(task, day)
                kind, topic = task.task, task.topic
            for _ in range(rng.choice((0, 1, 2, 2, 3, 3))):
                follow, how = rng.choice(FOLLOW_UPS)
                self.say("user", follow)
                self.say("assistant", self.answer(kind, topic, size=rng.randint(4, 5), follow=how))
        if rng.random() < 0.35:
            self.say("user", rng.choice(THANKS))
            self.say("assistant", rng.choice(WELCOME))

    def tell(self, told: Told, day: dt.date) -> None:
        text = told.text
        if "{when}" in text:
            phrase = time_phrase(self.rng, day)
            self.days[told.label] = time_answer(phrase, day)
            text = text.replace("{when}", phrase)
        self.evidence[told.label] = self.say("user", text, once=True)
        reply = self.answer(told.task, told.topic, size=self.rng.randint(4, 6), echo=told.echo, said=told.said)
        self.evidence[f"{told.label}.said"] = self.say("assistant", reply, once=bool(told.said))

    def exchange(self, request: str, task: str, topic: str) -> None:
        self.say("user", request)
        self.say("assistant", self.answer(task, topic, size=self.rng.randint(4, 6)))

    def answer(self, task: str, topic: str, size: int, echo: str = "", said: str = "", follow: str = "") -> str:
        """A long answer: an opening (the user's words echoed, else a stock one; a follow-up's own), a framing
        paragraph, the task's sections (``said`` inside one of them, never first), a closing."""
        rng = self.rng
        sections = TASKS[task](rng, topic, size)
        if said:
            sections.insert(rng.randint(1, len(sections)), said)
        framing = " ".join(line.format(topic=topic) for line in rng.sample(CONTEXT, 2 if follow else rng.randint(2, 4)))
        if follow:  # a shorter take on the same task, no closing
            return "\n\n".join([FOLLOW_OPENINGS[follow], framing, *sections])
        opening = echo or rng.choice(INTROS).format(topic=topic)
        return "\n\n".join([opening, framing, *sections, rng.choice(OUTROS)])

    def say(self, role: str, text: str, once: bool = False) -> int:
        """A message not said before in this chat (a repeat gets a stock line more, or fails if it holds a fact)."""
        while text in self.said:
            assert not once, text
            text = f"{text} {self.rng.choice(OUTROS if role == 'assistant' else THANKS)}"
        self.said.add(text)
        if self.day is not None:
            text, self.day = self.user.stamp(self.day, text), None
        self.chat.messages.append({"role": role, "content": text})
        return len(self.chat.messages) - 1


def fresh8_conversations(count: int = 3, seed: int = 0) -> list[Conversation]:
    """The first ``count`` users' chats, written from ``seed`` (the same seed writes the same chats)."""
    return [_Writer(user, random.Random(f"fresh8:{seed}:{user.name}")).write() for user in USERS[:count]]


if __name__ == "__main__":  # a look at the data: sizes and kinds
    from collections import Counter

    for chat in fresh8_conversations():
        kinds = Counter(q.kind for q in chat.questions)
        chars = sum(len(m["content"]) for m in chat.messages)
        mine = sum(len(m["content"]) for m in chat.messages if m["role"] == "assistant")
        print(
            chat.name, len(chat.messages), "messages,", chars, "chars,", f"{mine / chars:.0%} assistant,", dict(kinds)
        )

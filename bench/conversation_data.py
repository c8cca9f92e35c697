"""Long conversations between people, written offline for bench/conversation_bench.py (evidence labelled).

Not one style: two kinds of chat, each many sessions over weeks.

* ``friends``: two people catching up every few days (role ``user`` is one, ``assistant`` the other, each message
  opens with its speaker's name, a session's first message with its date). Mostly small talk and reactions
  ("Haha, sure, Theo!"), with life news told in passing: a pet adopted, a trip, a new job after an interview
  elsewhere, hobbies taken up over months, a relative who taught a skill and later moves away, a race run.
  The other asks a follow-up and the answer holds a detail without the topic's words ("A beagle mix, we think").
* ``assistant``: a person asking an assistant for help (recipes, plans, emails), mentioning their life in passing
  inside requests; the assistant answers at length.

Questions come in nine kinds, each labelled with the positions of the messages that hold its evidence:
``single_hop`` (the fact's own words), ``paraphrased`` (other words for it), ``multi_hop`` (two or more messages:
a follow-up's detail, a person named in one message and their news in another, hobbies gathered over months),
``temporal`` (when something happened: the message telling it, in a dated session), ``indirect`` (life news told in
passing and asked in other words: only bench/dense_chats.py writes it), ``counting`` (how many: every message telling
one, only bench/varied_chats.py writes it), and three kinds nothing
answers (no evidence): ``unanswerable`` (a topic never raised), ``unknown_person`` (someone never named, asked about
with words the chat uses: "What is Maya's neighbour Dmitri's dog called?") and ``missing_detail`` (something talked
about, asked for a detail never given: the colour of the pet's collar, the price of the flights). Several templates
per statement and question, and distractors sharing their words (someone else's dog, a city one only dreams of, an
interview that led nowhere).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

KINDS = (
    "single_hop",
    "paraphrased",
    "multi_hop",
    "temporal",
    "indirect",
    "counting",
    "unanswerable",
    "unknown_person",
    "missing_detail",
)
UNANSWERABLE = ("unanswerable", "unknown_person", "missing_detail")
"""The kinds nothing in the chat answers: a topic never raised, a person never named, a detail never given about
something that was talked about (recall should add nothing, or only the few messages on that topic)."""


@dataclass(frozen=True)
class Question:
    text: str
    kind: str
    evidence: tuple[int, ...]
    """Positions of the messages holding the answer (empty: unanswerable)."""


@dataclass
class Conversation:
    name: str
    style: str
    messages: list[dict[str, str]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


# -- small talk: most of a real chat ---------------------------------------------------------------------------

GREETINGS = [
    "Hey {other}! How's your week going?",
    "Hi {other}, long time no chat! What's new?",
    "Morning {other}! Got a minute?",
    "{other}!! I have so much to tell you.",
    "Hey hey. Surviving the week?",
    "Hi! Sorry I went quiet, things got busy.",
]
GREETING_REPLIES = [
    "Hey {other}! Pretty good, a bit tired. You?",
    "Hi! All good here, just back from the shops.",
    "Oh hi {other}! Always have a minute for you.",
    "Haha, go on then, spill.",
    "Barely! But it's Friday soon. How are you?",
    "No worries at all, {other}. Good to hear from you.",
]
REACTIONS = [
    "No way, {other}! That's amazing!",
    "Wow, congrats!!",
    "Haha, love that.",
    "That's so cool, {other}.",
    "Oh nice, good for you!",
    "Sure, {other}!",
    "Aww, that's lovely.",
    "Ha! Typical.",
    "Oh wow. Tell me more!",
    "Yes!! Finally.",
]
SMALL_TALK = [
    (
        "The weather has been all over the place, sunny in the morning and then a downpour right when I left work.",
        "Same here! I got soaked on the way home and my umbrella gave up halfway.",
    ),
    (
        "Did you end up watching that series everyone keeps talking about? I'm three episodes in and hooked.",
        "Not yet, I keep falling asleep on the sofa before anything good happens. No spoilers please!",
    ),
    (
        "Work has been a lot this week. Two deadlines moved up and nobody told me until Monday.",
        "Ugh, that's the worst. Hope you get a proper break at the weekend, {other}.",
    ),
    (
        "I made that lentil soup again, the one with too much cumin. Still good though.",
        "Haha, there's no such thing as too much cumin. Save me a bowl next time.",
    ),
    (
        "My phone screen cracked again. Third time this year, I should just buy a sturdier case.",
        "Oof. Or stop using it as a coaster, just saying.",
    ),
    (
        "I spent most of Sunday cleaning out the cupboard under the stairs. Found a box of old photos from school.",
        "Oh that must have been fun to look through. Any embarrassing haircuts?",
    ),
    (
        "Traffic on the ring road was awful this morning, took me an hour to do twenty minutes.",
        "That's why I've started cycling in. Mostly. When it isn't raining.",
    ),
    (
        "Been trying to sleep earlier but I keep reading until midnight.",
        "Same problem here, {other}. One more chapter is a lie we tell ourselves.",
    ),
    (
        "We had a power cut last night for about two hours, ended up playing cards by candlelight.",
        "That actually sounds kind of cosy. Who won?",
    ),
    (
        "I'm thinking of repainting the living room. Something warmer, maybe a terracotta.",
        "Ooh, bold. Send me pictures when it's done!",
    ),
    (
        "My neighbour's kids were practising drums all afternoon. I now know every Queen song by heart.",
        "Ha! Could be worse, could be bagpipes.",
    ),
    (
        "Went to the farmers market, bought way too many tomatoes. Any ideas what to do with them?",
        "Roast them with garlic and freeze the sauce. Works every time.",
    ),
]
LEADS = ["", "", "Ugh, ", "So, ", "Random, but ", "Oh, and ", "Not much news. ", "Honestly? ", "Lol, "]
TAILS = ["", "", " Haha.", " 😅", " Anyway!", " How about you?", " Ha.", " Classic.", " Fingers crossed."]
DISTRACTORS = [
    "My coworker's dog got out of the garden again and chewed half of her neighbour's hedge.",
    "I'd love to visit {city} some day, but it's way out of budget right now.",
    "I keep saying I'll try {hobby} one day. Maybe when life calms down.",
    "Did I tell you my manager had an interview somewhere else? Everyone is job hunting, it seems.",
    "A friend of mine ran a marathon last year and couldn't walk for a week afterwards.",
    "There's a new bakery near the station, they do a sourdough that sells out by nine.",
    "Someone at the gym keeps talking about moving abroad, every single week.",
    "My cousin adopted a cat from the shelter last spring, it mostly sleeps on the radiator.",
]
CLOSINGS = [
    ("Anyway, I should get going. Talk soon!", "Bye {other}! Take care."),
    ("Right, dinner's burning. Catch you later!", "Haha go! Talk later."),
    ("OK, bedtime for me. Night!", "Night {other}!"),
    ("Gotta run, but this was nice.", "Always! Speak soon."),
]

# -- the facts ----------------------------------------------------------------------------------------------------

SPECIES = [("dog", "puppy", "pup"), ("cat", "kitten", "cat"), ("rabbit", "bunny", "rabbit")]
PET_NAMES = "Biscuit Pepper Noodle Juniper Mochi Waffles Pickle Ziggy Clementine Bramble Tofu Marble".split()
BREEDS = {
    "dog": ["A beagle mix, we think", "Mostly collie, the shelter said", "Some kind of terrier, scruffy and loud"],
    "cat": ["A grey tabby with one white paw", "Black with amber eyes, very dramatic", "Ginger, of course"],
    "rabbit": ["A lop, the ears flop right down", "A tiny Netherland dwarf", "A lionhead, very fluffy"],
}
CITIES = "Lisbon Tallinn Montreal Osaka Valparaiso Ljubljana Adelaide Bergen Tucson Galway Seville Kraków".split()
HIGHLIGHTS = [
    ("the tiled old town at sunset, we just walked for hours", "Which city had the old town {p} wandered at dusk?"),
    (
        "a tiny seafood place by the harbour that I'm still dreaming about",
        "Where did {p} find the little fish restaurant by the port?",
    ),
    ("the hike up to the viewpoint, legs were jelly but worth it", "In which city did {p} climb to a lookout?"),
    (
        "a jazz bar in a basement where the pianist took requests",
        "Which city has the cellar club where a pianist played {p}'s requests?",
    ),
    ("the covered market, I ate my way through half of it", "Where did {p} eat through a food hall?"),
]
COMPANIES = "Northwind Lumen Brightwave Corvid Halcyon Tessellate Quarry Fernhill Orbital Kestrel".split()
ROLES = ["data analyst", "project coordinator", "UX designer", "lab technician", "sales lead", "copy editor"]
HOBBIES = [
    (
        "pottery",
        "throwing bowls on the wheel",
        "Finally made a bowl on the wheel that doesn't wobble! Glazed it blue.",
        "What did {p} manage to make at pottery?",
    ),
    (
        "bouldering",
        "climbing at the indoor wall",
        "Topped the purple route on the overhang tonight, took me six weeks.",
        "Which route did {p} finally complete at the climbing wall?",
    ),
    (
        "salsa dancing",
        "dancing salsa on Thursdays",
        "We did the little showcase at the end of term, I only stepped on one foot.",
        "How did {p}'s first dance performance go?",
    ),
    (
        "watercolour painting",
        "painting little watercolours",
        "Painted the lighthouse at dusk from that photo you sent, it's on the fridge now.",
        "What picture did {p} paint from a photo?",
    ),
    (
        "chess",
        "playing chess at the club",
        "Beat the club captain in forty moves. He was not pleased.",
        "Who did {p} defeat in a board game at the club?",
    ),
    (
        "birdwatching",
        "watching birds at the reservoir",
        "Saw a kingfisher at the reservoir this morning, a flash of electric blue.",
        "What bird did {p} spot at the reservoir?",
    ),
    (
        "kayaking",
        "paddling a kayak on the river",
        "Paddled all the way up to the weir and back, arms are noodles.",
        "How far upriver did {p} get in the boat?",
    ),
    (
        "ukulele",
        "strumming the ukulele",
        "Played Riptide at the open mic, hands shaking the whole time.",
        "Which song did {p} perform at the open mic?",
    ),
]
HOBBY_CALLBACKS = [
    "Back to {h} tonight, can't wait.",
    "Skipped {h} this week, too tired. Feel guilty.",
    "Someone new joined the {h} group, very keen.",
    "My {h} teacher says I'm improving, slowly.",
]
PET_CALLBACKS = [
    "{n} chewed one of my shoes this morning. The left one, obviously.",
    "{n} says hi 🐾",
    "Took {n} to the park, total menace with the ducks.",
    "{n} has figured out how to open the kitchen cupboard. We're doomed.",
    "How's {n} doing, {other}?",
]
VET = [
    ("Took {n} to the vet: a grass seed stuck in an ear. Poor thing, all sorted now.", "a grass seed in an ear"),
    ("Vet visit for {n}, needs to lose a bit of weight apparently. Diet food from now on.", "too much weight"),
    ("{n} had to get two teeth out at the vet. Very sorry for himself all evening.", "two teeth removed"),
]
RELATIVES = [
    ("grandma", "Rosalind"),
    ("uncle", "Bertram"),
    ("aunt", "Mireille"),
    ("older cousin", "Ines"),
    ("godfather", "Declan"),
]
SKILLS = [
    ("bake bread", "kneading dough"),
    ("sail", "tying knots on the boat"),
    ("knit", "casting on stitches"),
    ("fix bikes", "truing a wheel"),
    ("play the piano", "scales on the upright"),
]
RACES = ["half marathon", "10K charity run", "trail race", "5K park run"]
ABSENT = [
    "What did {p} think of the scuba diving course in Croatia?",
    "How much did {p} pay for the electric scooter?",
    "Which song did {p} sing at the karaoke night?",
    "What instrument is {p}'s nephew learning at school?",
    "What was the name of the wedding venue {p} booked?",
    "Which football team does {p} support?",
    "What flavour was the cake at {p}'s graduation party?",
    "How many languages does {p} speak?",
]

UNKNOWN_PEOPLE = [
    "What is {p}'s neighbour Dmitri's dog called?",
    "Where did {p}'s colleague Ingrid go on holiday?",
    "What job did {p}'s cousin Rafael start?",
    "Which race did {p}'s brother-in-law Tobias run?",
    "What hobby did {p}'s flatmate Oksana take up?",
    "When did {p}'s friend Marguerite move house?",
]
MISSING_DETAILS = [
    ("pet_name", "What colour is {x}'s collar?"),
    ("pet_name", "How much did {p} pay the vet for {x}'s treatment?"),
    ("company", "What salary did {p} negotiate at {x}?"),
    ("company", "Who is {p}'s manager at {x}?"),
    ("race_name", "Who did {p} run the {x} with?"),
    ("relative", "How old is {x}?"),
    ("trip_city", "Which hotel did {p} stay at in {x}?"),
    ("trip_city", "How much did the flights to {x} cost {p}?"),
]
"""A detail never given about something the chat talks about (``x``: the person's pet, new employer, ...)."""


@dataclass
class _Writer:
    """Appends a conversation's messages, remembering each one's position."""

    conversation: Conversation
    names: tuple[str, str]
    rng: random.Random
    date: dt.date = dt.date(2023, 3, 6)
    session: int = 0
    _first: bool = False
    callbacks: list[tuple[int, str]] = field(default_factory=list)
    """Things people bring up again in later sessions (their pet, their hobby), as (speaker, text)."""

    def say(self, speaker: int, text: str) -> int:
        other = self.names[1 - speaker]
        text = text.replace("{other}", other)
        if self.conversation.style == "friends":
            text = f"{self.names[speaker]}: {text}"
        elif speaker == 0 and not text.endswith("?"):  # news told in passing, inside a request
            text = f"{text} {self.rng.choice(REQUESTS)}"
        elif speaker == 1 and len(text) < 200:  # the assistant reacts, then answers at length
            text = f"{text} {self.rng.choice(ASSISTANT_REPLIES)}"
        if self._first:
            text = f"[{self.date:%-d %B %Y}] {text}"
            self._first = False
        self.conversation.messages.append({"role": "user" if speaker == 0 else "assistant", "content": text})
        return len(self.conversation.messages) - 1

    def new_session(self) -> None:
        self.session += 1
        self.date += dt.timedelta(days=self.rng.randint(3, 11))
        self._first = True

    def when(self) -> str:
        return f"{self.date:%-d %B %Y}"


def _pick(rng: random.Random, options: list[str], **kw: str) -> str:
    return rng.choice(options).format(**kw)


class _Life:
    """One person's news, told over the sessions, with the questions each piece makes possible."""

    def __init__(self, rng: random.Random, name: str, pronoun: str, style: str) -> None:
        self.rng, self.name, self.pronoun, self.style = rng, name, pronoun, style
        self.poss = {"she": "her", "he": "his", "they": "their"}[pronoun]
        self.hobbies = rng.sample(HOBBIES, 3)
        self.hobby_messages: list[int] = []

    def who(self) -> str:
        """How a question names the person: by name between friends, "I" to an assistant."""
        return self.name if self.style == "friends" else "I"

    def q(self, friends: str, mine: str, **kw: str) -> str:
        return (friends if self.style == "friends" else mine).format(p=self.name, poss=self.poss, **kw)

    def pet(self, w: _Writer, me: int) -> list[Question]:
        species, young, short = self.rng.choice(SPECIES)
        pet = self.rng.choice(PET_NAMES)
        told = w.say(
            me,
            _pick(
                self.rng,
                [
                    "Guess what, we finally adopted a {s} from the rescue on Saturday! We named {it} {n}, "
                    "and {it} has already claimed the best spot on the sofa.",
                    "So the big news: there's a new member of the household. A little {y} called {n}. Nobody is "
                    "sleeping much but I'm completely smitten.",
                    "I brought {n} home yesterday, the {s} I kept sending you photos of from the shelter website. "
                    "Still can't believe the adoption went through.",
                ],
                s=species,
                y=young,
                n=pet,
                it="him" if self.rng.random() < 0.5 else "her",
            ),
        )
        w.say(1 - me, _pick(self.rng, ["Aww!! What kind is {n}?", "Ahh I love that! What breed?"], n=pet))
        detail = w.say(
            me, self.rng.choice(BREEDS[species]) + ". " + _pick(self.rng, ["Total chaos.", "Very sweet though."])
        )
        w.callbacks.extend((me, t.replace("{n}", pet)) for t in self.rng.sample(PET_CALLBACKS, 4))
        self.pet_name, self.species, self.pet_at = pet, species, told
        return [
            Question(
                self.q("What is the name of {p}'s {s}?", "What is my {s} called?", s=species), "single_hop", (told,)
            ),
            Question(
                self.q(
                    "What did {p} call the animal {poss} household took in?",
                    "What name did I give the animal we took in?",
                ),
                "paraphrased",
                (told,),
            ),
            Question(self.q("When did {p} adopt {n}?", "When did I adopt {n}?", n=pet), "temporal", (told,)),
            Question(
                self.q("What breed or kind of {sh} is {p}'s pet?", "What kind of {sh} is my pet?", sh=short),
                "multi_hop",
                (told, detail),
            ),
        ]

    def vet(self, w: _Writer, me: int) -> list[Question]:
        said, _ = self.rng.choice(VET)
        told = w.say(me, said.format(n=self.pet_name))
        w.say(1 - me, self.rng.choice(["Oh no, poor baby!", "Aww, hope it gets better soon."]))
        return [
            Question(
                self.q(
                    "What health problem did {p}'s {s} have?", "What was wrong with my {s} at the vet?", s=self.species
                ),
                "multi_hop",
                (self.pet_at, told),
            )
        ]

    def trip(self, w: _Writer, me: int) -> list[Question]:
        city, (highlight, asked) = self.rng.choice(CITIES), self.rng.choice(HIGHLIGHTS)
        self.trip_city = city
        told = w.say(
            me,
            _pick(
                self.rng,
                [
                    "Just got back from four days in {c}! Flights were a nightmare but the city was so worth it.",
                    "We did a last-minute long weekend in {c}. I needed that more than I knew.",
                    "Remember I said I wanted a break? Booked it. Spent the weekend in {c}, came back on Tuesday.",
                ],
                c=city,
            ),
        )
        w.say(1 - me, _pick(self.rng, ["Jealous! Best part?", "Oh nice, what was the highlight?"]))
        best = w.say(me, f"Honestly {highlight}.")
        return [
            Question(self.q("When did {p} go to {c}?", "When was my trip to {c}?", c=city), "temporal", (told,)),
            Question(self.q(asked, asked.replace("{p}'s", "my").replace("{p}", "I")), "multi_hop", (told, best)),
            Question(
                self.q(
                    "What did {p} enjoy most about the trip to {c}?", "What was the best part of my {c} trip?", c=city
                ),
                "multi_hop",
                (told, best),
            ),
        ]

    def interview(self, w: _Writer, me: int) -> list[Question]:
        """The first part of the job story: an interview that leads nowhere (a distractor for the offer)."""
        self.companies = self.rng.sample(COMPANIES, 2)
        w.say(
            me,
            _pick(
                self.rng,
                [
                    "I have an interview at {c} next week, fingers crossed. Not sure I even want the job.",
                    "Applied to {c} on a whim. They called me back for an interview!",
                ],
                c=self.companies[0],
            ),
        )
        w.say(1 - me, "Good luck!! You'll be great, {other}.")
        return []

    def offer(self, w: _Writer, me: int) -> list[Question]:
        role = self.rng.choice(ROLES)
        told = w.say(
            me,
            _pick(
                self.rng,
                [
                    "Big news: I accepted an offer from {c}! I'll be a {r}. Handing in my notice tomorrow.",
                    "So {c} happened in the end, I start there in two weeks as their new {r}.",
                    "Signed the contract with {c} this morning. {R} role, better hours, shorter commute.",
                ],
                c=self.companies[1],
                r=role,
                R=role.capitalize(),
            ),
        )
        w.say(1 - me, self.rng.choice(REACTIONS))
        return [
            Question(
                self.q("Which company did {p} accept a job offer from?", "Which company's offer did I accept?"),
                "single_hop",
                (told,),
            ),
            Question(self.q("Who is {p}'s new employer?", "Who do I work for now?"), "paraphrased", (told,)),
            Question(self.q("What position was {p} hired for?", "What role was I hired into?"), "paraphrased", (told,)),
            Question(
                self.q("When did {p} sign on with the new company?", "When did I accept the new job?"),
                "temporal",
                (told,),
            ),
        ]

    def hobby(self, w: _Writer, me: int, which: int) -> list[Question]:
        hobby, doing, _, _ = self.hobbies[which]
        told = w.say(
            me,
            _pick(
                self.rng,
                [
                    "I signed up for a {h} class at the community centre, first session was tonight. Loved it.",
                    "New obsession: {d}. I go every week now, it's the only time my brain switches off.",
                    "Started {h} with a friend from work. I'm terrible at it but that's half the fun.",
                ],
                h=hobby,
                d=doing,
            ),
        )
        self.hobby_messages.append(told)
        w.say(1 - me, self.rng.choice(REACTIONS))
        w.callbacks.extend((me, t.format(h=hobby)) for t in self.rng.sample(HOBBY_CALLBACKS, 2))
        if which < len(self.hobbies) - 1:
            return []
        return [
            Question(
                self.q("What hobbies has {p} taken up?", "What new hobbies have I started?"),
                "multi_hop",
                tuple(self.hobby_messages),
            )
        ]

    def achievement(self, w: _Writer, me: int, which: int) -> list[Question]:
        """A moment in a hobby months in: told without the hobby's name, asked about in other words."""
        _, _, said, asked = self.hobbies[which]
        told = w.say(me, said)
        w.say(1 - me, self.rng.choice(REACTIONS))
        mine = asked.replace("{p}'s", "my").replace("{p}", "I")
        return [Question(self.q(asked, mine), "paraphrased", (told,))]

    def taught(self, w: _Writer, me: int) -> list[Question]:
        """The first part of the relative's story: who taught a skill (the bridge to the move, told later)."""
        (rel, self.relative), (self.skill, practice) = self.rng.choice(RELATIVES), self.rng.choice(SKILLS)
        self.taught_at = w.say(
            me,
            f"I was {practice} today and thought of my {rel} {self.relative}. {self.relative} taught me to "
            f"{self.skill} when I was about ten, every summer holiday.",
        )
        w.say(1 - me, "That's such a nice memory.")
        return [
            Question(
                self.q("Who taught {p} to {s}?", "Who taught me to {s}?", s=self.skill), "single_hop", (self.taught_at,)
            )
        ]

    def moving(self, w: _Writer, me: int) -> list[Question]:
        moving = w.say(
            me,
            _pick(
                self.rng,
                [
                    "{n} called last night: selling the house and moving to {c} to be near the grandkids.",
                    "Sad news-ish: {n} is moving to {c} in the spring. I'll miss having {n} around.",
                ],
                n=self.relative,
                c=self.rng.choice(CITIES),
            ),
        )
        w.say(1 - me, _pick(self.rng, ["Oh, big change!", "Aw. You'll have somewhere to visit though."]))
        return [
            Question(
                self.q(
                    "Where is the person who taught {p} to {s} moving?",
                    "Where is the relative who taught me to {s} moving to?",
                    s=self.skill,
                ),
                "multi_hop",
                (self.taught_at, moving),
            )
        ]

    def training(self, w: _Writer, me: int) -> list[Question]:
        self.race_name = self.rng.choice(RACES)
        w.say(me, f"Training for the {self.race_name} is brutal. Did intervals in the rain this morning.")
        w.say(1 - me, "You're braver than me, {other}.")
        w.callbacks.append((me, f"Only a few weeks left until the {self.race_name}, getting nervous."))
        return []

    def race(self, w: _Writer, me: int) -> list[Question]:
        race = self.race_name
        minutes = self.rng.randint(24, 130)
        told = w.say(
            me,
            _pick(
                self.rng,
                [
                    "I ran the {r} on Sunday! Finished in {m} minutes, way better than I hoped.",
                    "Did it!! {r}, done, {m} minutes. Legs are destroyed today.",
                ],
                r=race,
                m=str(minutes),
            ),
        )
        w.say(1 - me, self.rng.choice(REACTIONS))
        return [
            Question(
                self.q("How long did it take {p} to finish the {r}?", "What was my time in the {r}?", r=race),
                "single_hop",
                (told,),
            ),
            Question(self.q("When did {p} run the {r}?", "When did I run the {r}?", r=race), "temporal", (told,)),
        ]


ASSISTANT_REPLIES = [
    "Here is a plan you can adapt. Start with the parts that are fixed, such as times and places you cannot move, "
    "and build the rest around them. Leave some slack every day, because things rarely go exactly as planned. "
    "Write the steps down, keep the list where you will see it, and review it once in the middle of the week. "
    "If something slips, move it rather than dropping it, and be honest with yourself about what matters most.",
    "Good question. There are a few options, each with trade-offs. The simplest is usually the best place to start: "
    "try it for a week and note what works. If it does not suit you, the second option costs a little more effort "
    "but gives you more control. Whatever you choose, keep it consistent for long enough to judge it fairly, and "
    "ask someone you trust for a second opinion if you are unsure.",
    "Sure. A short, friendly message works best: say why you are writing in the first sentence, give the one or two "
    "details the reader needs, and end with a clear next step. Avoid apologising more than once, keep paragraphs "
    "short, and read it aloud before sending. If it is important, wait ten minutes and read it again with fresh "
    "eyes; most awkward phrasing shows up on the second read.",
    "That sounds like a lot to juggle. It may help to split it into three groups: what must happen this week, what "
    "would be nice, and what can wait. Tackle one item from the first group each morning while your energy is high. "
    "It is also worth checking whether anyone else can take part of the load; people often offer help when they "
    "know exactly what is needed.",
]
REQUESTS = [
    "Can you suggest a simple dinner I can cook on a weeknight? Nothing with too many pans.",
    "I need to write a polite email asking my landlord about the broken heating. Can you draft one?",
    "How should I organise my week? I keep running out of time for the things I care about.",
    "What's a good way to start saving a bit each month without noticing it too much?",
    "Any tips for sleeping better? I wake up at 4am most nights.",
    "Can you help me plan a birthday surprise for a friend who hates being the centre of attention?",
    "How do I get better at small talk at work events? I always freeze.",
    "What should I pack for a weekend of hiking if the forecast is mixed?",
]


def _conversation(seed: int, style: str) -> Conversation:
    rng = random.Random(seed)
    pairs = [("Maya", "she", "Theo", "he"), ("Jordan", "they", "Priya", "she"), ("Elena", "she", "Sam", "he")]
    a, a_pron, b, b_pron = pairs[seed % len(pairs)] if style == "friends" else ("Alex", "they", "Assistant", "it")
    conversation = Conversation(f"{style}-{seed}", style)
    w = _Writer(conversation, (a, b), rng)
    lives = [_Life(rng, a, a_pron, style)]
    if style == "friends":
        lives.append(_Life(rng, b, b_pron, style))
    sessions = rng.randint(26, 34) if style == "friends" else rng.randint(24, 30)
    # Each person's news, placed in random sessions; a two-part story spans sessions.
    plan: dict[int, list[Callable[[], list[Question]]]] = {s: [] for s in range(sessions)}

    def place(session: int, act: Callable[[], list[Question]]) -> None:
        plan[min(session, sessions - 1)].append(act)

    for speaker, life in enumerate(lives):
        adopted = rng.randrange(1, sessions - 8)
        place(adopted, lambda life=life, s=speaker: life.pet(w, s))
        place(adopted + rng.randint(3, 7), lambda life=life, s=speaker: life.vet(w, s))
        for session in rng.sample(range(1, sessions), 2):
            place(session, lambda life=life, s=speaker: life.trip(w, s))
        trained = rng.randrange(0, sessions - 6)
        place(trained, lambda life=life, s=speaker: life.training(w, s))
        place(trained + rng.randint(3, 5), lambda life=life, s=speaker: life.race(w, s))
        for which, session in enumerate(sorted(rng.sample(range(sessions - 6), 3))):
            place(session, lambda life=life, s=speaker, i=which: life.hobby(w, s, i))
            place(session + rng.randint(2, 6), lambda life=life, s=speaker, i=which: life.achievement(w, s, i))
        for first, second in ((life.interview, life.offer), (life.taught, life.moving)):
            start = rng.randrange(0, sessions // 2)
            place(start, lambda s=speaker, f=first: f(w, s))  # type: ignore[misc]
            place(start + rng.randint(3, 8), lambda s=speaker, f=second: f(w, s))  # type: ignore[misc]
    questions: list[Question] = []
    for session in range(sessions):
        w.new_session()
        _open(w, rng, style)
        for act in plan[session]:
            _chatter(w, rng, style, rng.randint(1, 3))
            questions.extend(act())
        _chatter(w, rng, style, rng.randint(2, 6) if style == "friends" else rng.randint(2, 4))
        _close(w, rng, style)
    for life in lives:
        for template in rng.sample(ABSENT, 3):
            questions.append(Question(template.format(p=life.name), "unanswerable", ()))
    questions += _never_answered(lives, seed)
    conversation.questions = questions
    return conversation


def _never_answered(lives: list[_Life], seed: int) -> list[Question]:
    """Questions about a person never named and details never given (chosen by ``seed``, not the chat's random
    stream: adding them changes no message and no other question)."""
    out: list[Question] = []
    for number, life in enumerate(lives):
        facts = {
            "pet_name": life.pet_name,
            "company": life.companies[1],
            "race_name": life.race_name,
            "relative": life.relative,
            "trip_city": life.trip_city,
        }
        for i in range(2):
            person = UNKNOWN_PEOPLE[(seed + 2 * number + i) % len(UNKNOWN_PEOPLE)]
            out.append(Question(life.q(person, person.replace("{p}'s", "my")), "unknown_person", ()))
        for i in range(3):
            fact, template = MISSING_DETAILS[(seed + 3 * number + 2 * i) % len(MISSING_DETAILS)]
            mine = template.replace("{p}'s", "my").replace("cost {p}", "cost me").replace("{p}", "I")
            out.append(Question(life.q(template, mine, x=facts[fact]), "missing_detail", ()))
    return out


def _open(w: _Writer, rng: random.Random, style: str) -> None:
    if style == "friends":
        w.say(0 if rng.random() < 0.6 else 1, rng.choice(GREETINGS))
        w.say(1, rng.choice(GREETING_REPLIES))


def _close(w: _Writer, rng: random.Random, style: str) -> None:
    if style == "friends":
        bye, reply = rng.choice(CLOSINGS)
        w.say(0, bye)
        w.say(1, reply)


def _chatter(w: _Writer, rng: random.Random, style: str, exchanges: int) -> None:
    for _ in range(exchanges):
        if style == "assistant":
            mine = [i for i, (who, _) in enumerate(w.callbacks) if who == 0]
            w.say(0, w.callbacks.pop(rng.choice(mine))[1] if mine and rng.random() < 0.4 else rng.choice(REQUESTS))
            w.say(1, rng.choice(ASSISTANT_REPLIES))
            continue
        speaker = rng.randrange(2)
        roll = rng.random()
        if w.callbacks and roll < 0.3:  # something brought up again
            speaker, said = w.callbacks.pop(rng.randrange(len(w.callbacks)))
            w.say(speaker, said)
            w.say(1 - speaker, rng.choice(REACTIONS))
        elif roll < 0.65:  # never quite the same twice: real chats do not repeat themselves word for word
            said, answer = rng.choice(SMALL_TALK)
            w.say(speaker, f"{rng.choice(LEADS)}{said[0].lower() if said[0] != 'I' else 'I'}{said[1:]}")
            w.say(1 - speaker, f"{answer}{rng.choice(TAILS)}")
        elif roll < 0.8:
            w.say(speaker, rng.choice(DISTRACTORS).format(city=rng.choice(CITIES), hobby=rng.choice(HOBBIES)[0]))
            w.say(1 - speaker, rng.choice(REACTIONS))
        else:
            w.say(speaker, rng.choice(REACTIONS))
            w.say(1 - speaker, rng.choice(["Haha yes.", "Right?!", "Exactly.", "Ha, sure."]))


def conversations(count: int = 4) -> list[Conversation]:
    """``count`` conversations, alternating styles (friends first), each from its own seed."""
    return [_conversation(seed, "friends" if seed % 2 == 0 else "assistant") for seed in range(count)]


if __name__ == "__main__":  # a look at the data: sizes and kinds
    from collections import Counter

    for c in conversations():
        kinds = Counter(q.kind for q in c.questions)
        print(c.name, len(c.messages), "messages,", dict(kinds))

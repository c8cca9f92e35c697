"""Chats unlike the ones recall was tuned on, for bench/conversation_bench.py (``BENCH_DATA=varied``; issue 31).

``conversation_data`` and ``dense_chats`` were written by the sessions that tuned recall: every line opens with its
speaker's name, news is one sentence in a message of its own, a question repeats the news's words or a fixed
paraphrase of them. Chats between two friends are not like that, and here they are not either:

* the speaker's name is only in the message's ``name`` field; both speak in the first person ("I adopted a
  puppy") and call each other by nicknames ("Kat") that the questions use too, and refer to people by pronoun
  ("she's getting married") after naming them once, sessions before;
* both share news, told in passing inside long messages about two or three things, around small talk, agreement,
  emoji lines and photo lines ("[shares a photo of a lake]"); some news is revised later ("we moved again");
* 14-20 sessions over months, the first message of each carrying the session's date and time; news is dated
  relative to it ("last Saturday"), so a "when" question needs that line too (it is labelled evidence);
* questions in other words than the evidence (hypernyms: "pet" for "puppy", "instrument" for "violin"), multi-hop
  (two messages in different sessions: a sister named once and her news later; an animal adopted and its name
  chosen a few sessions on; a town moved to and moved away from), temporal, counting (three events of a kind told
  in three sessions, each in other words: "How many live shows..."), and three kinds nothing answers, as
  ``conversation_data.UNANSWERABLE``: topics never raised, people never named, details never given.

Phrasing is drawn from word lists and sentence fragments by the chat's seed (its own ``random.Random``), so two chats
share hardly a sentence: no fact is told or asked with the same template in every chat.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from bench.conversation_data import Conversation, Question


@dataclass(frozen=True)
class Person:
    name: str
    nick: str
    pronoun: str
    """he / she"""


PAIRS = (
    (Person("Katherine", "Kat", "she"), Person("Oluwaseun", "Seun", "he")),
    (Person("Benedict", "Ben", "he"), Person("Marisol", "Mari", "she")),
    (Person("Anastasia", "Ana", "she"), Person("Theodore", "Teddy", "he")),
    (Person("Gwendolyn", "Gwen", "she"), Person("Rafael", "Rafa", "he")),
    (Person("Nathaniel", "Nate", "he"), Person("Josephine", "Jo", "she")),
    (Person("Alexandra", "Sasha", "she"), Person("Dominic", "Dom", "he")),
)

# -- what the facts are made of -----------------------------------------------------------------------------------

ANIMALS = (  # as told, what a question calls it, its kind
    ("puppy", "dog"),
    ("kitten", "cat"),
    ("parrot", "bird"),
    ("tortoise", "reptile"),
    ("hamster", "rodent"),
    ("ferret", "animal"),
    ("lurcher", "dog"),
    ("cockatiel", "bird"),
)
PET_NAMES = "Pretzel Gnocchi Basil Turnip Walnut Custard Paprika Dumpling Sprout Crumpet Fennel Nutmeg".split()
INSTRUMENTS = "violin cello ukulele trumpet clarinet harp accordion banjo saxophone mandolin".split()
TEACHERS = "Ottoline Radomir Beatrix Cosimo Henrietta Lazlo Perpetua Ignatius".split()
TOWNS = "Harrogate Falmouth Dundee Aberystwyth Whitstable Kendal Ludlow Penzance Buxton Stirling Tenby Hexham".split()
COMPANIES = "Bramblecote Vantablue Ostrander Quillfeather Marrowby Tidewell Copperleaf Glenmore".split()
ROLES = ("payroll officer", "junior architect", "sous chef", "physiotherapist", "museum guide", "bike mechanic")
SIBLINGS = "Philippa Cressida Wilhelmina Araminta Leopold Cornelius Barnaby Evander".split()
PLACES = (  # where, what was done, asked as
    ("Snowdon", "climbed to the summit", "go up a mountain"),
    ("the Lake District", "rowed across Windermere", "go out on the water"),
    ("Bath", "soaked in the rooftop spa", "relax in hot springs"),
    ("Brighton", "rode the old pier rides", "go to the seaside"),
    ("Whitby", "hunted for fossils on the beach", "look for ancient remains"),
    ("the Cotswolds", "cycled between villages", "go on a bike ride"),
    ("Edinburgh", "watched comedy at the Fringe", "see stand-up"),
    ("Cornwall", "surfed for the first time", "ride the waves"),
)
BANDS = "Velvet Orchard|The Lanterns|Moth Parade|Saltwater Hymns|Copper Kites|Dusk Choir|Paper Sirens|Lowland Echo"
BOOKS = "The Glass Orchard|Winter Ledger|A Map of Small Hours|The Salt Road|Kingfisher Season|The Quiet Engine"
MAKES = (  # made, the class, asked as
    ("a wonky ceramic mug", "pottery", "made of clay"),
    ("a little oak stool", "woodwork", "made of wood"),
    ("a silver ring", "jewellery", "made of metal"),
    ("a stained glass robin", "glass", "made of glass"),
    ("a patchwork cushion", "sewing", "made of fabric"),
    ("a wicker basket", "basket weaving", "woven"),
)
WHEN = ("last Saturday", "on Sunday", "yesterday", "on Tuesday evening", "the weekend before last", "on Friday")

# -- how people say it: fragments joined at random, so no two chats share a template ---------------------------

PET_TOLD = (
    "{lead}we {got} a {a} {src} {w}",
    "{lead}there's a {a} living with me now, {got} {src} {w}",
    "{lead}a little {a} joined the household {w}, {got} {src}",
    "{lead}guess who {got} a {a} {src} {w}? this guy",
)
GOT = ("adopted", "brought home", "took in", "picked up", "ended up with")
SOURCE = ("from the shelter", "from a rescue near work", "from a neighbour's litter", "off a farm up the road", "")
PET_NAMED = (
    "we finally settled on {n} for the little one, after a week of arguing",
    "the shelter's name didn't stick, so the furball is called {n} now",
    "{n} is what we landed on, and {it} already answers to it",
    "official announcement: the new family member is {n}",
    "named {it} {n} in the end, suits {it} perfectly",
)
INSTRUMENT_TOLD = (
    "{lead}I started {i} lessons with {t}, {tw}, my fingers are in bits",
    "{lead}I signed up to learn the {i}, {t} ({tw}) teaches me on Thursdays",
    "{lead}bought a second-hand {i} and {t}, {tw}, is teaching me",
    "{lead}been practising {i} every evening since {t} took me on, {tw}",
)
TEACHER_IS = ("a retired lady down the road", "a guy from work", "my flatmate's aunt", "an old orchestra player")
MOVED = (
    "{lead}we got the keys to a place in {town} {w}, boxes everywhere",
    "{lead}we're officially {town} people now, moved in {w}",
    "{lead}the move to {town} happened {w}, I'm typing this from a mattress on the floor",
    "{lead}signed the lease in {town} and carried the last box up {w}",
)
MOVED_AGAIN = (
    "{lead}we moved again, can you believe it, {town} this time, shorter commute",
    "{lead}packing all over again: we left for {town} {w}, the old landlord sold up",
    "{lead}new address again! {town}, we swapped because the damp was unbearable",
    "{lead}yep, another move, we're in {town} now and I'm never carrying a sofa again",
)
JOB_TOLD = (
    "{lead}I accepted the offer from {c}, starting as a {r} after the holidays",
    "{lead}I handed in my notice, I'll be a {r} at {c} from next month",
    "{lead}{c} said yes, so I'm their new {r} 😬",
    "{lead}signed the contract at {c} {w}, {r} role, proper grown-up stuff",
)
SIBLING_NAMED = (
    "my {rel} {s} is crashing on our sofa this week, {pr} snores like a tractor",
    "{s}, my {rel}, came round for dinner and ate everything in the fridge",
    "spent the afternoon helping my {rel} {s} paint {po} new flat",
    "my little {rel} {s} called, {pr} says hi by the way",
)
SIBLING_NEWS = (
    "{lead}huge family news, my {rel} is getting married! {Pr} popped the question on a beach",
    "{lead}my {rel} just got engaged, mum has already bought a hat",
    "{lead}so my {rel} and {po} partner are tying the knot next spring",
    "{lead}wedding bells: my {rel} said yes {w}",
)
TRIP_TOLD = (
    "{lead}{w} we drove to {place} and {did}, knackered but happy",
    "{lead}we {did} in {place} {w}, totally spontaneous",
    "{lead}did a day trip to {place} {w} and {did}",
    "{lead}{place} {w}: {did}, then fish and chips on the way home",
)
SHOW = (
    "{lead}saw {b} live at the {v} {w}, my ears are still ringing",
    "{lead}caught {b} {w}, front row, absolutely worth the ticket",
    "{lead}{b} were unreal {w}, the whole {v} was singing along",
    "{lead}went to the {b} gig at the {v} {w}",
    "{lead}{b} played the {v} {w} and I was there 🎶",
)
VENUES = ("Roundhouse", "Corn Exchange", "Old Fire Station", "Town Hall", "Boiler Room", "Palace Theatre")
READ = (
    "{lead}finished {bk} {w}, cried on the bus like an idiot",
    "{lead}I stayed up until 2 to get through the last chapters of {bk}",
    "{lead}just closed the last page of {bk}, what an ending",
    "{lead}read {bk} in two days, couldn't put it down",
    "{lead}{bk} is done, on to the next one from the library pile",
)
PHOTO_CAPTION = (
    "first go at the {cls} class! not bad for a beginner?",
    "made this at {cls} {w}, be honest",
    "this is what three hours at the {cls} workshop gets you",
    "my {cls} homework, the teacher says it has character",
)

# -- around the news ---------------------------------------------------------------------------------------------

LEADS = ("", "", "oh and ", "anyway, ", "ok so ", "other news: ", "btw ", "also ", "not sure I told you but ")
SMALL = (
    "work has been relentless this week",
    "I finally fixed the wobbly shelf in the hallway",
    "the rain has not stopped since Monday",
    "I'm so behind on emails it's embarrassing",
    "we tried that new noodle place, decent but pricey",
    "my back is killing me from sleeping funny",
    "I've been binge-watching a baking show instead of sleeping",
    "the neighbours are having their roof redone, the drilling starts at seven",
    "I keep forgetting to water the plants",
    "the bus was forty minutes late again",
    "I'm trying to drink less coffee, it's not going well",
    "my phone decided to update itself overnight and now nothing works",
    "it's been the kind of week where Wednesday felt like Friday",
    "I burnt the toast twice this morning, a sign of things to come",
    "the gym was packed, everyone and their dog has a new year's resolution",
    "the washing machine flooded the kitchen, fun times",
    "I spent the whole evening looking for my keys, they were in the fridge",
    "we had a barbecue and of course it poured",
    "the office heating is broken so everyone is working in coats and scarves like some sad arctic expedition",
    "I tried meal prepping on Sunday and by Tuesday I was sick of the sight of chickpeas",
    "my manager scheduled a meeting about having fewer meetings, which tells you everything",
    "I walked the long way home through the park and there were loads of people out with picnics",
    "the train was cancelled so I ended up sharing a taxi with a stranger who talked about crypto the whole way",
    "I reorganised my whole wardrobe by colour and now I can't find anything at all",
    "we've been doing a quiz night at the pub on Wednesdays and we came second, robbed on the last round",
    "my laptop fan sounds like a jet engine every time I open more than two tabs",
    "mum keeps sending me articles about pension planning, I think she's trying to tell me something",
    "I signed up for one of those step challenges at work and I'm losing badly to the accounts team",
    "somebody keeps stealing the milk from the shared fridge and there's a passive aggressive note war going on",
    "the dentist said I need to floss more, which I knew, but it still felt personal",
    "I spent an hour on hold with the bank just to be told to go into a branch",
    "the heatwave finally broke last night and I slept properly for the first time in a week",
    "I've started going for a swim before work and honestly it's the best part of my day now",
    "the supermarket moved everything around again and I wandered the aisles like a lost tourist",
    "my flatmate took up sourdough and there is flour on every single surface of the kitchen",
    "I went to a friend's leaving do and somehow ended up doing karaoke, there is video evidence",
    "we've been trying to plan a weekend away but nobody can agree on dates, classic group chat chaos",
    "I bought a plant that was supposed to be impossible to kill and it's looking very sorry for itself",
)
ASK_BACK = (
    "how are things with you?",
    "what have you been up to?",
    "how was your week?",
    "you ok?",
    "anything new your end?",
    "how's everything?",
    "",
    "",
)
AGREE = (
    "haha yes",
    "omg",
    "same tbh",
    "no way!!",
    "that's brilliant",
    "lol",
    "😂😂",
    "❤️",
    "aww",
    "ugh I feel that",
    "100%",
    "sounds about right",
    "👏👏",
    "so happy for you!",
    "wait really?",
    "hahaha classic {nick}",
    "ok that's amazing",
    "you're a legend {nick}",
)
PHOTOS = (
    "[shares a photo of a lake at sunset]",
    "[shares a photo of a very fluffy cloud]",
    "[shares a photo of a messy desk]",
    "[shares a photo of a plate of pancakes]",
    "[shares a photo of a rainbow over the car park]",
    "[shares a photo of a queue outside a bakery]",
    "[shares a photo of muddy boots]",
    "[shares a photo of a cup of tea on a windowsill]",
)
DISTRACTORS = (
    "my colleague's {a} ate a whole sock last week, the vet bill was eye-watering",
    "a friend of mine keeps saying she'll learn the {i} one day",
    "someone at work is moving to {town}, apparently the rent is cheaper",
    "my cousin went to see {b} and said they were overrated",
    "the book club is reading {bk} next month, I haven't started",
    "there's a {cls} class at the community centre, might be fun some time",
    "my boss is off to {place} for a conference, jealous",
    "my neighbour's son just got a job at {c}",
)
OPENERS = ("hey {nick}!", "hiii", "morning {nick}", "{nick}!! long time", "evening 🙂", "hey you", "yo {nick}")
CLOSERS = ("right, bed. night!", "gotta run, talk soon x", "ok dinner's ready, later!", "speak soon {nick}")

# -- asked: other words than the evidence ---------------------------------------------------------------------

ABSENT = (
    "What car does {p} drive?",
    "Which football team does {p} support?",
    "What did {p} do for {po} fortieth birthday?",
    "Which language is {p} learning on an app?",
    "What is {p}'s favourite cocktail?",
    "Where did {p} go skiing?",
    "What allergy does {p} have?",
    "Which podcast does {p} recommend?",
)
UNKNOWN_PEOPLE = (
    "What does {p}'s cousin Bartholomew do for a living?",
    "Where did {p}'s colleague Yusuf go on holiday?",
    "What pet does {p}'s flatmate Ottavia have?",
    "Which instrument does {p}'s nephew Casimir play?",
    "Where did {p}'s friend Wendeline move to?",
)
MISSING = (
    ("pet", "What colour is {p}'s {kind}?"),
    ("pet", "How much did {p} pay the vet for the {kind}?"),
    ("instrument", "How much does {p} pay for each {i} lesson?"),
    ("job", "What salary did {p} get at {c}?"),
    ("sibling", "What is the name of the person {p}'s {rel} is marrying?"),
    ("move", "How much rent does {p} pay in {town}?"),
)


@dataclass
class _Chat:
    conversation: Conversation
    people: tuple[Person, Person]
    rng: random.Random
    date: dt.datetime = dt.datetime(2024, 1, 8, 19, 30)
    opening: int = -1
    """Position of the current session's first message (it carries the date)."""
    pending_date: bool = False
    questions: list[Question] = field(default_factory=list)

    def say(self, who: int, text: str) -> int:
        other = self.people[1 - who]
        text = text.replace("{nick}", other.nick if self.rng.random() < 0.7 else other.name)
        text = text[0].upper() + text[1:] if text and text[0].isalpha() else text
        if self.pending_date:
            text = f"[{self.date:%-d %B %Y, %-I:%M %p}] {text}"
            self.pending_date = False
        role = "user" if who == 0 else "assistant"
        self.conversation.messages.append({"role": role, "content": text, "name": self.people[who].name})
        return len(self.conversation.messages) - 1

    def news(self, who: int, told: str, **kw: str) -> int:
        """A long message: small talk, the news in passing, something else, a question back."""
        rng = self.rng
        fact = told.format(lead=rng.choice(LEADS), w=rng.choice(WHEN), **kw)
        parts = [rng.choice(SMALL) if rng.random() < 0.7 else "", fact, ""]
        if rng.random() < 0.6:
            parts[2] = rng.choice(SMALL)
        parts.append(rng.choice(ASK_BACK))
        return self.say(who, _sentences(parts))

    def chatter(self, n: int, fill: dict[str, str]) -> None:
        rng = self.rng
        for _ in range(n):
            who = rng.randrange(2)
            roll = rng.random()
            if roll < 0.25:
                self.say(who, rng.choice(AGREE))
            elif roll < 0.65:
                self.say(who, _sentences([*rng.sample(SMALL, rng.randint(2, 4)), rng.choice(ASK_BACK)]))
            elif roll < 0.73:
                self.say(who, rng.choice(PHOTOS))
            elif roll < 0.85:
                self.say(who, _sentences([rng.choice(DISTRACTORS).format(**fill), rng.choice(SMALL)]))
            else:
                self.say(who, _sentences([rng.choice(AGREE), f"{rng.choice(SMALL)}, and {rng.choice(SMALL)}"]))

    def when(self, at: int) -> tuple[int, ...]:
        """A temporal question's evidence: the message, and the session's dated first message if another."""
        return (at,) if at == self.opening else (self.opening, at)


def _sentences(parts: list[str]) -> str:
    """Sentences joined as a message: each capitalised, a full stop unless it asks or ends in an emoji."""
    out = []
    for part in filter(None, parts):
        part = part[0].upper() + part[1:]
        out.append(part if part[-1] in "?!.)" or not part[-1].isascii() else part + ".")
    return " ".join(out)


class _Life:
    """One friend's news over the months, each piece a callable that tells it and returns its questions."""

    def __init__(self, chat: _Chat, who: int, rng: random.Random) -> None:
        self.chat, self.who, self.rng = chat, who, rng
        me = chat.people[who]
        self.me, self.pr = me, me.pronoun
        self.po = "her" if me.pronoun == "she" else "his"
        self.animal, self.kind = rng.choice(ANIMALS)
        self.pet_name = rng.choice(PET_NAMES)
        self.instrument, self.teacher = rng.choice(INSTRUMENTS), rng.choice(TEACHERS)
        self.towns = rng.sample(TOWNS, 2)
        self.company, self.role = rng.choice(COMPANIES), rng.choice(ROLES)
        self.rel = rng.choice(("sister", "brother"))
        self.sibling = rng.choice(SIBLINGS[:4] if self.rel == "sister" else SIBLINGS[4:])
        self.sib = (
            {"rel": self.rel, "pr": "she", "po": "her"}
            if self.rel == "sister"
            else {"rel": self.rel, "pr": "he", "po": "his"}
        )
        self.place, self.did, self.did_asked = rng.choice(PLACES)
        self.bands = rng.sample(BANDS.split("|"), 3)
        self.books = rng.sample(BOOKS.split("|"), 3)
        self.make, self.cls, self.make_asked = rng.choice(MAKES)
        self.at: dict[str, int] = {}

    def p(self) -> str:
        """How a question names the friend: by name or nickname."""
        return self.me.nick if self.rng.random() < 0.5 else self.me.name

    def q(self, text: str, kind: str, evidence: tuple[int, ...]) -> Question:
        return Question(text.format(p=self.p(), po=self.po), kind, evidence)

    def pet(self) -> list[Question]:
        at = self.chat.news(
            self.who, self.rng.choice(PET_TOLD), a=self.animal, got=self.rng.choice(GOT), src=self.rng.choice(SOURCE)
        )
        self.at["pet"] = at
        asked = self.rng.choice(("What kind of pet did {p} get?", "Which animal did {p} take home?"))
        return [
            self.q(asked, "paraphrased", (at,)),
            self.q(f"When did {{p}} get the {self.kind}?", "temporal", self.chat.when(at)),
        ]

    def pet_named(self) -> list[Question]:
        it = self.rng.choice(("him", "her"))
        at = self.chat.news(self.who, self.rng.choice(PET_NAMED), n=self.pet_name, it=it)
        asked = self.rng.choice(("What is {p}'s new {k} called?", "What name did {p} give the {k}?"))
        return [self.q(asked.replace("{k}", self.kind), "multi_hop", (self.at["pet"], at))]

    def instrument_lessons(self) -> list[Question]:
        told, teacher_is = self.rng.choice(INSTRUMENT_TOLD), self.rng.choice(TEACHER_IS)
        at = self.chat.news(self.who, told, i=self.instrument, t=self.teacher, tw=teacher_is)
        return [
            self.q(
                self.rng.choice(("Which instrument is {p} learning?", "What is {p} learning to play?")),
                "paraphrased",
                (at,),
            ),
            self.q(f"Who gives {{p}} {self.instrument} lessons?", "single_hop", (at,)),
        ]

    def moved(self) -> list[Question]:
        self.at["moved"] = self.chat.news(self.who, self.rng.choice(MOVED), town=self.towns[0])
        return [self.q(f"When did {{p}} move to {self.towns[0]}?", "temporal", self.chat.when(self.at["moved"]))]

    def moved_again(self) -> list[Question]:
        at = self.chat.news(self.who, self.rng.choice(MOVED_AGAIN), town=self.towns[1])
        first = self.at["moved"]
        return [
            self.q(
                self.rng.choice(("Where does {p} live now?", "Which town is {p}'s home these days?")),
                "paraphrased",
                (at,),
            ),
            self.q(f"Where did {{p}} live before {self.towns[1]}?", "multi_hop", (first, at)),
            self.q("How many times has {p} moved house?", "counting", (first, at)),
        ]

    def job(self) -> list[Question]:
        at = self.chat.news(self.who, self.rng.choice(JOB_TOLD), c=self.company, r=self.role)
        return [
            self.q(self.rng.choice(("Who is {p}'s new employer?", "Which firm hired {p}?")), "paraphrased", (at,)),
            self.q(f"What position did {{p}} take at {self.company}?", "single_hop", (at,)),
        ]

    def sibling_named(self) -> list[Question]:
        self.at["sibling"] = self.chat.news(self.who, self.rng.choice(SIBLING_NAMED), s=self.sibling, **self.sib)
        return []

    def sibling_news(self) -> list[Question]:
        pr = self.sib["pr"]
        at = self.chat.news(self.who, self.rng.choice(SIBLING_NEWS).replace("{Pr}", pr.capitalize()), **self.sib)
        return [
            self.q(
                f"Which of {{p}}'s siblings is engaged, and what is {pr} called?", "multi_hop", (self.at["sibling"], at)
            ),
            self.q("Who in {p}'s family has a wedding coming up?", "paraphrased", (at,)),
        ]

    def trip(self) -> list[Question]:
        at = self.chat.news(self.who, self.rng.choice(TRIP_TOLD), place=self.place, did=self.did)
        return [
            self.q(f"Where did {{p}} {self.did_asked}?", "paraphrased", (at,)),
            self.q(f"When did {{p}} visit {self.place}?", "temporal", self.chat.when(at)),
        ]

    def show(self, n: int) -> list[Question]:
        self.at[f"show{n}"] = self.chat.news(
            self.who, SHOW[(n + self.rng.randrange(2)) % len(SHOW)], b=self.bands[n], v=self.rng.choice(VENUES)
        )
        if n < 2:
            return []
        shows = tuple(self.at[f"show{i}"] for i in range(3))
        asked = self.rng.choice(("How many live shows has {p} been to?", "How many concerts did {p} go to?"))
        return [self.q(asked, "counting", shows)]

    def read(self, n: int) -> list[Question]:
        self.at[f"read{n}"] = self.chat.news(self.who, READ[(n + self.rng.randrange(2)) % len(READ)], bk=self.books[n])
        if n < 2:
            return []
        books = tuple(self.at[f"read{i}"] for i in range(3))
        asked = self.rng.choice(("How many novels has {p} finished?", "Which books has {p} read?"))
        return [self.q(asked, "counting", books)]

    def photo(self) -> list[Question]:
        chat = self.chat
        shown = chat.say(self.who, f"[shares a photo of {self.make}]")
        caption = chat.say(self.who, self.rng.choice(PHOTO_CAPTION).format(cls=self.cls, w=self.rng.choice(WHEN)))
        return [self.q(f"What did {{p}} make that is {self.make_asked}?", "multi_hop", (shown, caption))]

    def never_answered(self, seed: int) -> list[Question]:
        fill = {"kind": self.kind, "i": self.instrument, "c": self.company, "rel": self.rel, "town": self.towns[1]}
        name = self.me.name
        out = [Question(t.format(p=name, po=self.po), "unanswerable", ()) for t in self.rng.sample(ABSENT, 2)]
        out += [Question(t.format(p=name), "unknown_person", ()) for t in self.rng.sample(UNKNOWN_PEOPLE, 2)]
        out += [Question(t.format(p=name, **fill), "missing_detail", ()) for _, t in self.rng.sample(MISSING, 2)]
        return out


def varied_conversation(seed: int, sessions_between: tuple[int, int] = (16, 22)) -> Conversation:
    """One chat of ``sessions_between`` sessions (inclusive): (16, 22) gives ~13K tokens, (36, 44) ~28K."""
    rng = random.Random(7000 + seed)
    people = PAIRS[seed % len(PAIRS)]
    conversation = Conversation(f"varied-{seed}", "varied")
    chat = _Chat(conversation, people, rng, dt.datetime(2024, 1 + seed % 3, 6 + seed, 19, 30))
    lives = [_Life(chat, who, rng) for who in (0, 1)]
    sessions = rng.randint(*sessions_between)
    plan: list[list[tuple[int, str]]] = [[] for _ in range(sessions)]

    def two_steps(life: int, first: str, second: str) -> None:
        start = rng.randrange(0, sessions - 5)
        plan[start].append((life, first))
        plan[start + rng.randint(2, 4)].append((life, second))

    for who in (0, 1):
        two_steps(who, "pet", "pet_named")
        two_steps(who, "moved", "moved_again")
        two_steps(who, "sibling_named", "sibling_news")
        for act in ("instrument_lessons", "job", "trip", "photo"):
            plan[rng.randrange(sessions)].append((who, act))
        counted = "show" if (seed + who) % 2 == 0 else "read"
        for n, session in enumerate(sorted(rng.sample(range(sessions), 3))):
            plan[session].append((who, f"{counted}:{n}"))
    fill_of = lambda: {  # noqa: E731
        "a": rng.choice(ANIMALS)[0],
        "i": rng.choice(INSTRUMENTS),
        "town": rng.choice(TOWNS),
        "b": rng.choice(BANDS.split("|")),
        "bk": rng.choice(BOOKS.split("|")),
        "cls": rng.choice(MAKES)[1],
        "place": rng.choice(PLACES)[0],
        "c": rng.choice(COMPANIES),
    }
    questions: list[Question] = []
    for session in range(sessions):
        chat.date += dt.timedelta(days=rng.randint(6, 20), minutes=rng.randint(-120, 120))
        chat.pending_date = True
        opener = rng.randrange(2)
        chat.opening = chat.say(opener, rng.choice(OPENERS))
        chat.say(1 - opener, f"{rng.choice(AGREE)} {rng.choice(ASK_BACK)}".strip())
        acts = plan[session]
        rng.shuffle(acts)
        for who, act in acts:
            chat.chatter(rng.randint(2, 7), fill_of())
            name, _, n = act.partition(":")
            told = getattr(lives[who], name)(int(n)) if n else getattr(lives[who], name)()
            chat.say(1 - who, rng.choice(AGREE))
            questions += told
        chat.chatter(rng.randint(8, 16), fill_of())
        closer = rng.randrange(2)
        chat.say(closer, rng.choice(CLOSERS))
        chat.say(1 - closer, rng.choice(AGREE))
    for life in lives:
        questions += life.never_answered(seed)
    conversation.questions = questions
    return conversation


def varied_conversations(count: int = 4, sessions_between: tuple[int, int] = (16, 22)) -> list[Conversation]:
    return [varied_conversation(seed, sessions_between) for seed in range(count)]


if __name__ == "__main__":  # a look at the data
    from collections import Counter

    for c in varied_conversations(4):
        words = sum(len(m["content"].split()) for m in c.messages)
        print(c.name, len(c.messages), "messages,", words, "words,", dict(Counter(q.kind for q in c.questions)))
    print("\n".join(f"{m['name']}: {m['content']}" for m in varied_conversations(1)[0].messages[:40]))

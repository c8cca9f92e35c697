"""A held-out set of long chats between two people, written apart from recall's tuning (issue 31, item 5).

What it models: six pairs (old university friends, sisters, two former colleagues, a long-distance couple, two
running neighbours, a mother and her grown-up son) texting over five to seven months, 400-700 messages each. A
session opens with its date, each chat writing it its own way ("(4 March 2023)", "04.03.2023", a spoken "Sunday
5th March 2023", ...); the other messages are undated. Most of a chat is not news: greetings, one-word reactions,
errands, photos and links, moaning about the weather, and now and then a long digression about a podcast or the
bins. Each speaker has a voice (lowercase, "u" and "tmrw", the odd typo), calls the other by name now and then and
tacks whatever else is on their mind onto a message, so messages run from "lol" to a paragraph.

News comes in stories that run across sessions (a flat hunt, a knee injury, a sister's wedding), each chat telling
seven or eight of the thirteen, so no story is in every chat. Stories change as real ones do: a move date slips, a
venue goes bust, a cat is renamed, an insurance payout is corrected; and later messages refer back without the
topic's words ("the thing with my boss", "that trip").

Why: recall was tuned for several rounds on the other chat sets, and a set written by someone who read neither
recall nor those sets tests whether it generalises. Questions are asked as an outsider would ask them, each labelled
with every message its answer needs:

``single_hop`` a fact in one message; ``paraphrased`` the same, asked without any content word of its evidence;
``multi_hop`` two messages in different sessions (a person named in one, their news in another); ``temporal``
when something happened (the message telling it; the date is its session's, sometimes "yesterday" before it);
``counting`` how many (every message with one instance, or a sum over updates); ``latest`` a value after it was
changed (the changing message only); ``other_person`` a fact the second speaker (the assistant role) told about
themselves; and two kinds nothing answers: ``unanswerable`` (never raised) and ``missing_detail`` (raised, the
detail never given). Each ``Asked`` question carries its answer and, per evidence message, a word that message
holds (``keys``); the unanswerable ones carry words the chat does hold (the topic, for a missing detail) and words no
message holds (``absent``).

Deterministic per seed: the same seed writes the same chats; another seed places and fills the stories anew.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.conversation_data import Conversation, Question

KINDS = (
    "single_hop",
    "paraphrased",
    "multi_hop",
    "temporal",
    "counting",
    "latest",
    "other_person",
    "unanswerable",
    "missing_detail",
)


@dataclass(frozen=True)
class Asked(Question):
    answer: str = ""
    keys: tuple[str, ...] = ()
    """One word each evidence message holds, in the evidence's order (unanswerable: words the chat does hold)."""
    absent: tuple[str, ...] = ()
    """Unanswerable only: words no message holds (the topic, or the detail never given)."""


# -- how people write --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Voice:
    lower: float  # share of messages written all lowercase
    shorthand: float  # share of messages with "u", "tmrw", ...
    typo: float  # share of messages with one swapped pair of letters
    ramble: int  # at most this many asides tacked onto a message


ASIDE_WHO = [
    "my mum",
    "the woman next door",
    "someone on my team",
    "the guy at the corner shop",
    "my flatmate",
    "our postie",
    "my old landlord",
    "a man on the bus",
    "my aunt",
    "the new girl at work",
]
ASIDE_DID = [
    "asked after you",
    "told me a twenty minute story about her hedge",
    "has started doing yoga at 6am and won't stop talking about it",
    "tried to sell me a timeshare, I think",
    "left a passive aggressive note about the stairs",
    "lent me a slow cooker I will never use",
    "recommended a podcast about mushrooms",
    "got a new puppy and it has already eaten a remote",
    "said I looked tired, thanks",
    "is learning the accordion. the walls are thin",
    "gave me a bag of lemons for no reason",
    "invited me to a quiz night",
    "has dyed their hair bright orange",
    "sent me a chain letter on whatsapp",
    "complained about the price of coffee for ages",
]
ASIDE_WHEN = ["this morning", "yesterday", "on the way home", "earlier", "at lunch", "last week", "just now", ""]
ASIDES = [
    "I'm so tired I could sleep standing up.",
    "Thinking of getting a takeaway later, I can't face cooking.",
    "The kettle has started making a whistling noise it never used to make.",
    "We're out of milk again, how does that keep happening.",
    "I finally cleaned the windows and now I can see how dirty everything else is.",
    "Work wants us in the office three days a week now, which is fun.",
    "My hay fever is back with a vengeance.",
    "I've started going to bed at ten like a pensioner and honestly it's great.",
    "Bought a plant to cheer the place up, already looks worried.",
    "The heating bill came and I had to sit down.",
    "I need a haircut so badly.",
    "My back has been weird since I slept funny on the sofa.",
    "Also I have eaten an entire packet of biscuits, no regrets.",
    "There's a pigeon that sits on my windowsill every morning and judges me.",
    "The wifi keeps dropping out, I'm writing this from the hallway.",
    "I keep meaning to ring my nan back.",
    "Had the worst coffee of my life at the station, it tasted of pennies.",
    "Still haven't unpacked the shopping from saturday.",
    "My laptop fan sounds like a plane taking off.",
    "I walked past that cafe we used to go to, it's a vape shop now.",
]


ASIDE_DAY = ["Tomorrow", "On saturday", "Next week", "Tonight", "On sunday", "After work on friday"]
ASIDE_PLAN = [
    "I'm helping my dad clear out his garage, which will end in an argument",
    "I'm meant to be going to a leaving do for someone I've met twice",
    "I'm finally getting the car looked at, it's been making a clunking noise",
    "I'm going to try that new ramen place by the canal",
    "I've promised myself I'll sort out my wardrobe",
    "there's a quiz at the pub, our team name is still terrible",
    "I'm babysitting for the neighbours, pray for me",
    "I'm doing a big batch cook so I stop living on toast",
    "I'm seeing a film with my cousin, something with explosions",
    "I have to do my expenses, three months of receipts in a shoebox",
    "I'm going on a long walk and not looking at my phone. (I will look at my phone.)",
    "we're having people round for dinner and I haven't planned anything",
]


SHORTHAND = {
    "you": "u",
    "your": "ur",
    "tomorrow": "tmrw",
    "because": "bc",
    "really": "rly",
    "probably": "prob",
    "though": "tho",
    "tonight": "tonite",
    "going to": "gonna",
    "want to": "wanna",
    "don't know": "dunno",
    "to be honest": "tbh",
    "please": "pls",
    "people": "ppl",
    "something": "smth",
}


def _in_voice(text: str, voice: Voice, rng: random.Random, keep: tuple[str, ...]) -> str:
    """``text`` as this speaker types it; the words in ``keep`` (a fact's words) are never misspelt."""
    if rng.random() < voice.shorthand:
        for long, short in SHORTHAND.items():
            text = text.replace(f" {long} ", f" {short} ")
    if rng.random() < voice.typo:
        words = text.split(" ")
        spots = [i for i, w in enumerate(words) if w.isalpha() and len(w) > 4 and not any(k in w.lower() for k in keep)]
        if spots:
            i = rng.choice(spots)
            w, j = words[i], rng.randrange(1, len(words[i]) - 2)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
            text = " ".join(words)
    if rng.random() < voice.lower:
        text = text.lower()
    return text


# -- what most of a chat is ---------------------------------------------------------------------------------------

HELLOS = [
    "hiya {other}",
    "{other}!! you free?",
    "u around?",
    "ok I have news",
    "morning!!",
    "how was ur weekend",
    "sorry, been MIA",
    "did you survive monday",
    "quick question",
    "you'll never guess what",
    "evening 🌙",
    "heyyy",
    "are you free to talk or is it chaos",
]
HELLO_BACKS = [
    "hey {other}! yes, go",
    "hi {other} 👋",
    "here, just about",
    "ooh tell me",
    "barely survived lol",
    "hi!! I was literally about to text you",
    "always. what's up",
    "ha, go on",
    "hello you",
]
SHORT = [
    "lol",
    "haha",
    "omg",
    "no wayyy",
    "ugh",
    "yes!!",
    "ok",
    "fair",
    "same tbh",
    "😂😂",
    "nice one",
    "oof",
    "hmm",
    "true",
    "sounds good",
    "deal",
    "brb",
    "back",
    "wait what",
    "classic",
    "love that for you",
    "that's grim",
    "noooo",
    "ok good",
    "totally",
    "💀",
    "ha",
    "mood",
    "right??",
    "yeah",
    "haha {other} you're ridiculous",
    "omg {other}",
    "sure, {other}!",
    "thanks {other} x",
    "{other} stop 😂",
]
ERRANDS = [
    (
        "had to queue {n} minutes at the post office for one stamp",
        ["the post office is a punishment", "why is there always one counter open"],
    ),
    ("the dishwasher is making the noise again", ["the grinding noise?", "kick it, works for mine"]),
    (
        "just did a big shop, spent {n} quid on what feels like four items",
        ["prices are mad rn", "was any of it chocolate"],
    ),
    (
        "been on hold with the bank for {n} mins. the hold music is a pan pipe cover of wonderwall",
        ["noooo", "that's a crime"],
    ),
    ("finally took the recycling out, it was basically a sculpture", ["the box mountain", "proud of you"]),
    (
        "my train was cancelled so I'm in a station cafe with a sad croissant",
        ["the saddest croissant", "send pic of the croissant"],
    ),
    ("dentist tomorrow. dreading it", ["you'll be fine", "ugh the scraping"]),
    ("got a parking ticket. i was gone four minutes", ["appeal it!!", "the wardens are ruthless here too"]),
    ("the boiler man is coming 'between 8 and 6'", ["so basically the whole day", "classic"]),
    ("washing machine flooded the kitchen, spent an hour with towels", ["oh no", "is the floor ok?"]),
]
DINNERS = [
    "a sad omelette",
    "toast. just toast",
    "a massive pot of chilli",
    "leftover curry",
    "pasta pesto for the 4th night",
    "a fancy risotto that took ages",
    "fish finger sandwiches",
    "a stir fry with whatever was in the fridge",
]
WEATHER = [
    "it's been raining sideways all day",
    "why is it so cold, I'm wearing two jumpers indoors",
    "the heat is unbearable, I'm lying on the floor",
    "foggy and grim here",
    "sun's out finally!!",
    "there was hail this morning. HAIL",
]
SHOWS = [
    "that heist series",
    "the baking show",
    "a documentary about octopuses",
    "the new detective thing",
    "that awful dating show",
    "an old sitcom from the 90s",
    "a cooking competition from Japan",
]
MEDIA = ["[photo]", "📷 photo", "<image>", "[2 photos]", "[video]", "[sticker]", "[voice note 0:42]"]
LINKS = [
    "https://www.youtube.com/watch?v=dQ{n}xKcQ",
    "https://vm.tiktok.com/ZG{n}/",
    "https://www.instagram.com/p/Cx{n}b/",
    "https://open.spotify.com/track/4{n}kq",
    "https://www.bbc.co.uk/news/uk-{n}",
]
LINK_NOTES = ["this made me think of you", "LOOK", "", "watch till the end", "why is this so accurate", "lmaooo"]
DIGRESSIONS = {
    "podcast": [
        "I've been listening to this podcast about old shipwrecks on my walks.",
        "Each episode is one wreck and they go through who was on board and what went wrong.",
        "The presenter has the calmest voice, I nearly walked into a lamppost yesterday.",
        "There was one about a ship carrying thousands of pocket watches that sank in a storm off Cornwall.",
        "Divers still find bits of them, all stopped at different times, which is weirdly sad.",
        "Anyway I think I've become a person who has opinions about ship hulls now.",
        "It's the only thing that makes the commute bearable.",
    ],
    "bins": [
        "Ok rant incoming.",
        "The council has changed the bin days AGAIN and didn't tell anyone.",
        "So the whole street put the bins out on Tuesday and they just sat there for three days.",
        "The foxes had a party, there was a nappy in the hedge.",
        "Someone started a group chat for the street about it and now it's 200 messages a day.",
        "One man keeps posting photos of other people's overflowing bins like he's a detective.",
        "I've muted it but I still check it, which says a lot about me.",
    ],
    "dream": [
        "I had the strangest dream last night.",
        "I was back at school but it was also an airport and I had to sit an exam in a language I don't speak.",
        "Our old maths teacher was the pilot.",
        "Then the whole thing turned into a supermarket and I couldn't find the exit.",
        "Woke up genuinely stressed.",
        "Do you ever have the one where your teeth fall out? Classic anxiety apparently.",
    ],
    "phone": [
        "My phone has decided it's too old to live.",
        "The battery goes from 40 to nothing in about a minute, and it gets hot enough to fry an egg.",
        "The shop says it's 'not worth repairing' which is what they always say so you buy a new one.",
        "I refuse on principle. I'm going to keep it alive with a power bank taped to the back.",
        "It's fine. It's a look.",
    ],
    "neighbour": [
        "The people upstairs are renovating.",
        "Since seven this morning there has been a drill going, I think they're making a tunnel.",
        "I went up to ask how long and the guy said 'a few weeks' with a big smile like that's good news.",
        "I'm going to work from the library tomorrow.",
        "At least they brought round biscuits to apologise, so I can't even be properly angry.",
    ],
    "childhood": [
        "Random memory: do you remember those sticker albums everyone had?",
        "I found mine in a box and it's still missing the same three stickers.",
        "I traded half my lunch for a shiny one once and then lost it on the bus home.",
        "My mum still talks about the time I tried to sell them at the school fete.",
        "Kids are ruthless businessmen honestly.",
    ],
    "swimming": [
        "I've started swimming before work, don't laugh.",
        "The pool opens at half six and it's full of terrifying old men doing butterfly.",
        "There's a lane etiquette I don't understand, I keep getting tutted at.",
        "Yesterday a man swam the whole length underwater next to me just to make a point.",
        "But I feel amazing afterwards, like a smug dolphin.",
        "The changing rooms are another story. Someone's always drying their feet with a hairdryer.",
    ],
    "car boot": [
        "Went to the car boot sale on sunday with my neighbour.",
        "I came home with a lamp shaped like a duck, a box of records and a cake tin I definitely didn't need.",
        "The records are mostly brass bands, I thought it would be ironic but it's just brass bands.",
        "There was a man selling only left shoes. Only left ones. I have questions.",
        "Spent eleven pounds in total which I think is a win.",
    ],
    "trains": [
        "The trains this week have been a joke.",
        "Monday it was leaves on the line, tuesday a signal failure, today 'a shortage of train crew'.",
        "I've started recognising the same people on the platform, we do a little nod of shared suffering.",
        "One woman brings a folding stool, she is clearly a veteran.",
        "I might actually start cycling, if I can face the hill.",
        "Or just move into the office, at this point.",
    ],
    "sleep": [
        "I can't switch my brain off at night lately.",
        "I lie there planning conversations that will never happen.",
        "Tried one of those sleep apps with rain sounds but it just makes me need the loo.",
        "Someone told me to keep the bedroom cold, so now I'm just awake AND cold.",
        "If you have any tips I'll take them, even the weird ones.",
    ],
}
TOPICS = sorted(DIGRESSIONS)
DIGRESSION_REPLIES = [
    "honestly this is the content I'm here for",
    "hahaha I need updates on this",
    "that's so you",
    "I'm dying",
    "ok this is a lot but I love it",
    "wait go back, the first bit??",
]
DAY_WHEN = ["this morning", "all afternoon", "after work", "today", "since lunch", "all weekend"]
DAY_DOING = [
    "sorting out the spare room",
    "on back-to-back calls",
    "waiting in for a delivery that never came",
    "at my mum's fixing her printer",
    "doing the tax return",
    "helping a mate carry a sofa up four flights",
    "walking the long way round the park",
    "fighting the shower curtain rail",
    "in a training course about spreadsheets",
    "cleaning the oven, don't ask",
]
DAY_FEELING = ["", ", so that was fun", ", living the dream", " and I'm shattered", ". riveting stuff", ", send help"]
DAY_ANSWERS = ["sounds thrilling", "ha, better you than me", "the glamour", "at least it's done", "rather you than me"]
PLANS = [
    (
        "what are you up to this weekend?",
        ["absolutely nothing, it's glorious", "a birthday thing on saturday", "sleeping mostly"],
    ),
    ("are you watching the match later?", ["only if someone drags me to the pub", "no, I can't take the stress"]),
    ("how's work?", ["busy. boring. the usual", "don't ask", "weirdly quiet this week"]),
    ("did you sleep?", ["about four hours", "like a log for once", "no, next door's alarm went off at 5"]),
]
VAGUE = ["getting there", "not yet, don't ask", "slowly!", "ha, ask me next week", "fine, I think", "all good so far"]
BYES = [
    ("ok gotta go, dinner", "go go, talk later x"),
    ("night!!", "night x"),
    ("right back to work, speak soon", "👋"),
    ("phone about to die, bye", "bye!!"),
    ("off to bed, too tired for words", "same, night"),
]


# -- one chat ----------------------------------------------------------------------------------------------------


@dataclass
class _Chat:
    """Writes one conversation: who says what, in which dated session, and the questions about it."""

    names: tuple[str, str]
    voices: tuple[Voice, Voice]
    dated: Callable[[dt.date], str]
    rng: random.Random
    date: dt.date
    conversation: Conversation
    extras: list[tuple[str, str]]
    _first: bool = False
    _decks: dict[int, list[object]] = field(default_factory=dict)
    _pending: list[tuple[int, str]] = field(default_factory=list)

    def draw(self, pool: list[Any]) -> Any:
        """The next of ``pool`` in a shuffled deck: a line comes back only once the others have been used."""
        deck = self._decks.setdefault(id(pool), [])
        if not deck:
            deck.extend(self.rng.sample(pool, len(pool)))
        return deck.pop()

    def n(self, who: int) -> str:
        return self.names[who]

    def aside(self) -> str:
        """Something else on the speaker's mind, tacked on (drawn from decks, so seldom twice close together)."""
        roll = self.rng.random()
        if roll < 0.3:
            return str(self.draw(ASIDES))
        if roll < 0.6:
            return f"{self.rng.choice(ASIDE_DAY)} {self.draw(ASIDE_PLAN)}."
        said = f"{self.draw(ASIDE_WHO)} {self.draw(ASIDE_DID)} {self.rng.choice(ASIDE_WHEN)}".strip()
        return f"{self.rng.choice(['Also', 'Oh and', 'Btw', 'Random but', 'Anyway,'])} {said}."

    def say(self, who: int, text: str, keep: tuple[str, ...] = ()) -> int:
        asides = self.rng.choice([0, 1, 1, 2, 2, self.voices[who].ramble])
        if (
            asides and (len(text) > 20 or self.rng.random() < 0.25) and not text.endswith("?")
        ):  # whatever else is on their mind
            text = " ".join([text if text[-1] in ".!)" else f"{text}.", *(self.aside() for _ in range(asides))])
        text = _in_voice(text, self.voices[who], self.rng, tuple(w.lower() for k in keep for w in k.split()))
        if self._first:
            text = self.dated(self.date) + text
            self._first = False
        content = f"{self.names[who]}: {text.replace('{other}', self.names[1 - who])}"
        self.conversation.messages.append({"role": "user" if who == 0 else "assistant", "content": content})
        return len(self.conversation.messages) - 1

    def react(self, who: int, *choices: str) -> None:
        """The other one's answer to ``who``'s news (now and then by name)."""
        said = self.rng.choice(choices or tuple(SHORT))
        self.say(1 - who, f"{said} {{other}}!" if choices and self.rng.random() < 0.25 else said)

    def later(self, who: int, text: str) -> None:
        """Something ``who`` brings up again in a later session (a callback, in passing)."""
        self._pending.append((who, text))

    def ask(
        self,
        text: str,
        kind: str,
        evidence: tuple[int, ...],
        answer: str,
        keys: tuple[str, ...],
        absent: tuple[str, ...] = (),
    ) -> None:
        self.conversation.questions.append(Asked(text, kind, evidence, answer, keys, absent))

    def fact(self, who: int) -> str:
        """A single fact's kind: the second speaker's news is what the other person said."""
        return "other_person" if who == 1 else "single_hop"

    def month_ahead(self, months: int) -> str:
        return f"{self.date + dt.timedelta(days=30 * months):%B}"

    def when(self, days_before: int = 0) -> str:
        return f"{self.date - dt.timedelta(days=days_before):%-d %B %Y}"

    def open_session(self, gap: int) -> None:
        self.date += dt.timedelta(days=gap)
        self._first = True
        who = self.rng.randrange(2)
        self.say(who, self.rng.choice(HELLOS))
        if self.rng.random() < 0.8:
            self.say(1 - who, self.rng.choice(HELLO_BACKS))

    def close_session(self) -> None:
        if self.rng.random() < 0.55:  # many sessions just stop
            bye, back = self.rng.choice(BYES)
            who = self.rng.randrange(2)
            self.say(who, bye)
            self.say(1 - who, back)

    def filler(self, exchanges: int) -> None:
        for _ in range(exchanges):
            self._exchange(self.rng.randrange(2))

    def _exchange(self, who: int) -> None:
        r, roll = self.rng, self.rng.random()
        if self._pending and roll < 0.3:
            said_by, text = self._pending.pop(r.randrange(len(self._pending)))
            self.say(said_by, text)
            if text.endswith("?"):  # the other asks after it: the teller answers
                self.say(1 - said_by, r.choice(VAGUE))
            else:
                self.react(said_by)
        elif roll < 0.26:
            said, answers = self.draw(ERRANDS)
            self.say(who, said.format(n=r.randint(5, 95)))
            self.say(1 - who, r.choice(answers))
        elif roll < 0.34:
            doing, feeling = self.draw(DAY_DOING), r.choice(DAY_FEELING)
            self.say(who, f"{r.choice(DAY_WHEN)} I've been {doing}{feeling}")
            self.say(1 - who, r.choice(DAY_ANSWERS))
        elif roll < 0.38:
            said, answers = self.draw(PLANS)
            self.say(who, said)
            self.say(1 - who, r.choice(answers))
        elif roll < 0.44:
            self.say(who, f"{r.choice(['dinner was', 'tonight is', 'made'])} {self.draw(DINNERS)}")
            self.say(1 - who, r.choice(["living the dream", "honestly sounds great", "chef", "lol respect"]))
        elif roll < 0.52:
            self.say(who, self.draw(WEATHER))
            self.say(1 - who, r.choice(["same here", "ugh", "jealous", "it's fine here weirdly"]))
        elif roll < 0.6:
            self.say(who, f"have you watched {self.draw(SHOWS)}? I'm {r.randint(2, 7)} episodes in")
            self.say(1 - who, r.choice(["no spoilers!!", "not yet, any good?", "I gave up after one tbh", "yesss"]))
        elif roll < 0.68:
            self.say(who, r.choice(MEDIA))
            if r.random() < 0.5:
                self.say(who, r.choice(["look at this", "the view from my window rn", "guess what this is", "lol"]))
            self.say(1 - who, r.choice(SHORT))
        elif roll < 0.74:
            note = r.choice(LINK_NOTES)
            self.say(who, f"{r.choice(LINKS).format(n=r.randint(1000, 99999))} {note}".strip())
            self.say(1 - who, r.choice(["😂", "stoppp", "how do you find these", "sending this to everyone"]))
        elif roll < 0.84:
            sentences = DIGRESSIONS[self.draw(TOPICS)]
            self.say(who, " ".join(sentences[: r.randint(4, len(sentences))]))
            self.say(1 - who, r.choice(DIGRESSION_REPLIES))
        elif roll < 0.88 and self.extras:
            said, answer = self.draw(self.extras)
            self.say(who, said)
            self.say(1 - who, answer)
        else:
            self.say(who, r.choice(SHORT))
            if r.random() < 0.6:
                self.say(1 - who, r.choice(SHORT))


Story = Callable[[_Chat, int], Iterator[int]]
"""A story told by speaker ``who`` over several sessions: each ``yield`` says how many sessions until its next part."""


# -- the stories ---------------------------------------------------------------------------------------------------


def move(c: _Chat, who: int) -> Iterator[int]:
    """A flat hunt: an offer in one area (told when the other asks), a move date that slips, keys "yesterday"."""
    me, r = c.n(who), c.rng
    area = r.choice(["Easton", "Heaton", "Leith", "Walthamstow", "Roath", "Gorgie", "Headingley"])
    first, final = r.sample(["the 3rd", "the 10th", "the 14th", "the 21st", "the 28th"], 2)
    month = c.month_ahead(2)
    c.say(
        who,
        r.choice(
            [
                "saw five flats this weekend. one had the shower IN the kitchen",
                "flat hunting is destroying my soul. every single one smells of damp",
            ]
        ),
    )
    c.react(who, "noooo", "the shower in the kitchen is sending me", "it'll turn up, promise")
    c.later(who, "another viewing tomorrow, the agent called it 'characterful' which means falling down")
    c.later(1 - who, "how's the flat hunt going?")
    c.later(who, "the estate agent still hasn't rung back. three days. THREE")
    yield 2
    rooms = c.say(who, "ok so!! we put an offer in on one. two bedrooms, top floor, tiny balcony")
    c.say(1 - who, "AHH where is it??")
    offer = c.say(
        who, f"{area}, near the park. moving on {first} of {month} if it all goes through", keep=(area, first)
    )
    c.later(who, f"counting down to {first} of {month}!! boxes everywhere")
    c.later(1 - who, "have you started packing yet?")
    c.later(who, "packing. so many boxes. where did all this stuff come from")
    yield 2
    slip = c.say(
        who,
        f"update on the move: the landlord pushed it back AGAIN, now it's {final}. "
        "in the meantime we live in a cardboard fort",
        keep=(final,),
    )
    c.react(who, "ugh landlords", "at least it's happening")
    yield 2
    keys = c.say(
        who,
        r.choice(
            [
                "got the keys yesterday!!! [photo]",
                "we got the keys yesterday. sitting on the floor eating chips, no furniture",
            ]
        ),
        keep=("keys",),
    )
    c.react(who, "congrats!!!", "🥳🥳")
    c.ask(f"When did {me} get the keys to the new flat?", "temporal", (keys,), c.when(1), ("keys",))
    c.later(who, "the new place is freezing, the radiators take an hour to do anything")
    c.later(who, "the kitchen in the new flat is the size of a wardrobe but I love it")
    c.later(1 - who, "send pics of the new place when it's sorted!")
    yield 3
    sib = r.choice(["brother", "sister"])
    near = c.say(
        who,
        f"best thing about the new place: my {sib} is two streets away now, "
        f"{'he' if sib == 'brother' else 'she'}'s already been round twice to borrow the drill",
    )
    c.react(who)
    c.ask(f"Which neighbourhood did {me} move to?", c.fact(who), (offer,), area, (area,))
    c.ask(f"Whereabouts does {me}'s {sib} live?", "multi_hop", (offer, near), area, (area, sib))
    c.ask(f"On what day is {me}'s move happening?", "latest", (slip,), final, (final,))
    c.ask(f"How many rooms for sleeping does {me}'s new pad have?", "paraphrased", (rooms,), "two", ("two",))
    c.ask(f"How much is the rent on {me}'s new flat?", "missing_detail", (), "never said", ("flat",), ("rent",))


def cat(c: _Chat, who: int) -> Iterator[int]:
    """A rescue cat, renamed a few weeks in; the vet's guess at its age; escapes counted (a false alarm not)."""
    me, r = c.n(who), c.rng
    old, new = r.sample(["Gerald", "Sprout", "Mango", "Pudding", "Captain", "Olive", "Dusty", "Figaro"], 2)
    age = r.choice(["four", "six", "nine"])
    got = c.say(
        who,
        f"we're getting a cat!!! from the rescue place near the station. he's called {old} but we might change it",
        keep=(old,),
    )
    c.react(who, "omg finally", "PICS PLEASE", "a cat!!!")
    c.say(who, "[photo]")
    c.say(1 - who, "look at his little face")
    c.later(who, f"{old} slept on my head all night. I have never been happier or more tired")
    c.later(1 - who, "is he still hiding under the bed?")
    yield 2
    renamed = c.say(
        who,
        f"ok he's officially {new} now, {old} just didn't suit him. he answers to it already (he doesn't)",
        keep=(new,),
    )
    c.react(who, "lol", "better name tbh")
    c.later(who, "the cat has strong opinions about the hoover")
    c.later(1 - who, "how's the cat?")
    yield 1
    vet = c.say(
        who,
        f"took {new} for his jabs. vet reckons he's more like {age} than two, the rescue was being generous",
        keep=(age,),
    )
    c.react(who, "still a baby", "ha")
    escapes = [
        c.say(
            who,
            f"{new} got out through the bathroom window this morning, found him in next door's shed",
            keep=("window",),
        )
    ]
    c.react(who, "nooo", "little criminal")
    yield 2
    escapes.append(c.say(who, "he escaped AGAIN. window latch is now taped shut", keep=("escaped",)))
    c.react(who)
    c.later(who, "thought the cat had got out again but he was asleep in the wardrobe. heart attack")
    c.later(1 - who, f"give {new} a chin scratch from me")
    yield 3
    escapes.append(
        c.say(who, "third great escape. he was sitting on the car roof like nothing happened", keep=("escape",))
    )
    c.react(who, "😂", "he's plotting")
    c.ask(f"What is {me}'s cat called now?", "latest", (renamed,), new, (new,))
    c.ask(f"What was the cat's name when {me} adopted him?", c.fact(who), (got,), old, (old,))
    c.ask(f"How old did the animal doctor guess {me}'s pet was?", "paraphrased", (vet,), age, (age,))
    c.ask(
        f"How many times has {me}'s cat got out?", "counting", tuple(escapes), "three", ("window", "escaped", "escape")
    )


def boss(c: _Chat, who: int) -> Iterator[int]:
    """The thing with the boss: a telling-off in front of a colleague, a meeting, a move to another team."""
    me, r = c.n(who), c.rng
    manager, colleague, new = r.sample(["Gavin", "Sandra", "Phil", "Marcus", "Jo", "Tariq", "Helen", "Declan"], 3)
    team = r.choice(["the payments team", "the training team", "the data team", "the partnerships team"])
    told = c.say(
        who,
        f"so today was horrible. my manager {manager} pulled me aside, except not aside, in front of {colleague}, "
        "and said "
        "my reports are 'far too long and nobody reads them'. I've been doing them the same way for two years and "
        "nobody said a word. I went to the loo and had a little cry, not gonna lie",
        keep=(manager, "reports"),
    )
    c.react(who, "what?? that's so unprofessional", f"ugh {manager} sounds awful. are you ok?")
    c.later(who, "work is so awkward at the moment. I just keep my head down")
    c.later(who, f"{manager} said good morning to me today like nothing happened. ok then")
    c.later(1 - who, "any news on the work thing?")
    yield 2
    c.say(who, f"meeting with HR about the thing with {manager} on thursday. feel sick about it")
    c.react(who, "you've done nothing wrong", "take notes!!")
    yield 2
    moved = c.say(
        who,
        f"update on the boss saga: I'm moving to {team} from next month, so I'll be reporting to {new} instead. "
        "relieved tbh",
        keep=(new, team.split()[1]),
    )
    c.react(who, "best outcome", "YES")
    c.later(who, f"first week with {new} and it's night and day honestly")
    c.ask(f"Who is {me}'s line manager at the moment?", "latest", (moved,), new, (new,))
    c.ask(f"What fault did {me}'s supervisor find with the write-ups?", "paraphrased", (told,), "too long", ("long",))
    c.ask(
        f"Which team did {me} end up in after being told off about report length?",
        "multi_hop",
        (told, moved),
        team,
        ("reports", team.split()[1]),
    )
    c.ask(f"Who was there when {manager} criticised {me}?", c.fact(who), (told,), colleague, (colleague,))


def trip(c: _Chat, who: int) -> Iterator[int]:
    """A holiday planned for one place, switched to another, told after without the place's name."""
    me, r = c.n(who), c.rng
    plan, actual = r.sample(["Crete", "the Algarve", "Sicily", "Croatia", "Madeira", "the Azores", "Brittany"], 2)
    best = r.choice(
        [
            ("a boat trip to a cave you could swim into", "cave"),
            ("a tiny restaurant run by a grandma who kept feeding us", "grandma"),
            ("a sunrise walk up the volcano", "volcano"),
        ]
    )
    c.say(who, f"thinking {plan} in {c.month_ahead(3)}? flights are cheap-ish if we go midweek", keep=(plan,))
    c.react(who, "do it", "jealous already")
    c.later(who, f"looking at hotels in {plan}, there are too many, I'm paralysed")
    c.later(1 - who, "have you booked the holiday yet?")
    c.later(who, "is it mad to take only hand luggage for a week?")
    yield 2
    switch = c.say(
        who, f"change of plan, {plan} is off (ferry strikes, don't ask), we're doing {actual} instead", keep=(actual,)
    )
    c.react(who, "still amazing", "oh that's even better")
    c.later(who, "holiday countdown: 10 days. suncream bought")
    c.later(1 - who, "when do you fly?")
    yield 3
    back = c.say(who, f"we're back!! sunburnt and broke. best bit was {best[0]}", keep=(best[1],))
    c.say(who, "[4 photos]")
    c.react(who, "stunning", "ok I need to go now")
    c.later(who, "still thinking about that trip, the food was unreal")
    c.ask(f"Where did {me} go on holiday in the end?", "latest", (switch,), actual, (actual.split()[-1],))
    c.ask(
        f"What was the highlight of {me}'s {actual} holiday?",
        "multi_hop",
        (switch, back),
        best[0],
        (actual.split()[-1], best[1]),
    )
    c.ask(f"When did {me} get back from holiday?", "temporal", (back,), c.when(), ("back",))
    c.ask(f"What scuppered {me}'s original getaway?", "paraphrased", (switch,), "ferry strikes", ("strikes",))


def knee(c: _Chat, who: int) -> Iterator[int]:
    """A knee hurt at five-a-side, physio appointments counted (a cancelled one not), signed off at last."""
    me, r = c.n(who), c.rng
    hurt = c.say(
        who,
        "did something to my knee at five-a-side last night. can't bend it, hobbling round like a pirate",
        keep=("five-a-side",),
    )
    c.react(who, "ouch", "get it looked at!!")
    c.ask(f"When did {me} injure the knee?", "temporal", (hurt,), c.when(1), ("knee",))
    c.ask(
        f"What sport was {me} playing when the leg injury happened?",
        "paraphrased",
        (hurt,),
        "five-a-side football",
        ("five-a-side",),
    )
    c.later(who, "knee's still swollen. stairs are my enemy")
    c.later(1 - who, "how's the leg?")
    visits = []
    yield 1
    visits.append(
        c.say(
            who,
            "first physio appointment today. she thinks it's a ligament strain, not a tear. "
            "exercises with a stretchy band",
            keep=("physio",),
        )
    )
    c.react(who, "phew", "not a tear is good")
    c.later(who, "doing my band exercises on the kitchen floor, the cat thinks it's a game")
    c.later(who, "physio cancelled today, she's off sick. gutted, I'd shaved my legs and everything")
    c.later(1 - who, "are you back playing yet?")
    for line in r.sample(
        [
            "back from the physio, she made me do squats and I nearly cried",
            "physio again this morning, can bend it properly now",
            "another physio session, she says I'm ahead of schedule",
        ],
        2,
    ):
        yield 2
        visits.append(c.say(who, line, keep=("physio",)))
        c.react(who)
    yield 2
    visits.append(
        c.say(who, "signed off!!! allowed to run again from monday. final physio session today", keep=("physio",))
    )
    c.react(who, "🎉", "finally")
    c.ask(
        f"How many physio sessions has {me} been to?",
        "counting",
        tuple(visits),
        str(len(visits)),
        ("physio",) * len(visits),
    )
    c.ask(
        f"What did the physio think was wrong with {me}'s knee?",
        c.fact(who),
        (visits[0],),
        "a ligament strain",
        ("ligament",),
    )


def wedding(c: _Chat, who: int) -> Iterator[int]:
    """A friend's or relative's engagement, a venue that goes bust and another, and what her fiancé does."""
    me, r = c.n(who), c.rng
    rel = r.choice(["sister", "best friend", "cousin"])
    bride = r.choice(["Amira", "Kerry", "Zoe", "Lucia", "Beth"])
    groom = r.choice(["Rob", "Kwame", "Stefan", "Callum", "Nico"])
    where = r.choice(["Snowdon", "Ben Nevis", "Arthur's Seat", "Scafell Pike"])
    venue, venue2 = r.sample(
        [
            "a barn in Somerset",
            "the old mill hotel",
            "a castle near Stirling",
            "a boathouse on the lake",
            "the botanic gardens",
        ],
        2,
    )
    job = r.choice(
        [
            ("a paramedic", "paramedic"),
            ("a tree surgeon", "surgeon"),
            ("a primary teacher", "teacher"),
            ("an air traffic controller", "traffic"),
        ]
    )
    engaged = c.say(
        who,
        f"my {rel} {bride} got engaged!!! {groom} asked her at the top of {where} yesterday, in a hailstorm",
        keep=(bride, groom, where, "engaged", "hailstorm"),
    )
    c.ask(f"When did {me}'s {rel} get engaged?", "temporal", (engaged,), c.when(1), ("engaged",))
    c.react(who, "AHHH", "in a hailstorm lol", "so romantic (and wet)")
    yield 2
    booked = c.say(
        who,
        f"{bride}'s wedding is booked, {venue}, next august. I'm a bridesmaid apparently??",
        keep=(venue.split()[-1],),
    )
    c.react(who)
    c.later(who, "the bridesmaid group chat is unhinged. 140 messages about shoes")
    c.later(who, f"{bride} wants us all in sage green. I look like a pea")
    c.later(1 - who, "how's the wedding planning going?")
    yield 2
    job_at = c.say(
        who, f"{groom} came to dinner. he's {job[0]} which explains why he's calm about everything", keep=(job[1],)
    )
    c.react(who, "love a calm man", "ha")
    c.later(who, "hen do planning is a full-time job, I need a spreadsheet")
    yield 2
    changed = c.say(
        who,
        f"wedding drama: the first venue went bust lol. it's now at {venue2}, same date, deposit lost",
        keep=(venue2.split()[-1],),
    )
    c.react(who, "nightmare", "at least it's the same date")
    c.later(who, "dress fitting for the wedding on saturday, pray for me")
    c.ask(f"Where is {bride}'s wedding being held?", "latest", (changed,), venue2, (venue2.split()[-1],))
    c.ask(
        f"What does the man {me}'s {rel} is marrying do for a living?",
        "multi_hop",
        (engaged, job_at),
        job[0],
        (groom, job[1]),
    )
    c.ask(f"On which mountain did {groom} propose?", c.fact(who), (engaged,), where, (where.split()[-1],))
    c.ask(
        "What was the weather like during the proposal up the mountain?",
        "paraphrased",
        (engaged,),
        "a hailstorm",
        ("hailstorm",),
    )
    c.ask(
        f"What was the name of the first venue booked for {bride}'s wedding?",
        c.fact(who),
        (booked,),
        venue,
        (venue.split()[-1],),
    )


def gigs(c: _Chat, who: int) -> Iterator[int]:
    """Concerts over months: three bands at three venues (and one sold out), a count, one dated."""
    me, r = c.n(who), c.rng
    bands = r.sample(
        ["the Lemon Twigs", "Wet Leg", "Khruangbin", "Fontaines D.C.", "Big Thief", "Arlo Parks", "Self Esteem"], 4
    )
    venues = r.sample(["the Leadmill", "the Roundhouse", "Barrowland", "the Brudenell", "the Academy"], 3)
    c.later(who, f"couldn't get tickets for {bands[3]}, sold out in four minutes. devastated")
    c.later(1 - who, "any gigs coming up?")
    seen = []
    for i, (band, venue) in enumerate(zip(bands, venues, strict=False)):
        line = r.choice(
            [
                f"saw {band} at {venue} last night, my ears are still ringing",
                f"{band} at {venue} last night!!! best gig of my life, maybe",
                f"went to see {band} last night at {venue}, the support act was better tbh",
            ]
        )
        seen.append(c.say(who, line, keep=(band, venue)))
        c.say(who, "[video]")
        c.react(who, "jealous", "omg", "was it loud")
        if i == 1:
            c.ask(f"When did {me} see {band}?", "temporal", (seen[-1],), c.when(1), (band.split()[-1],))
        yield 3
    c.ask(
        f"How many concerts did {me} go to?", "counting", tuple(seen), "three", tuple(b.split()[-1] for b in bands[:3])
    )
    c.ask(f"Where did {me} watch {bands[0]} play?", c.fact(who), (seen[0],), venues[0], (venues[0].split()[-1],))


def book(c: _Chat, who: int) -> Iterator[int]:
    """The other one recommends a novel; ``who`` starts it, then finishes it weeks later."""
    me, you, r = c.n(who), c.n(1 - who), c.rng
    title, author, about = r.choice(
        [
            ("The Salt Road", "Ines Varga", "two sisters walking across Portugal"),
            ("Low Tide", "Martin Okafor", "a lighthouse keeper who finds a message in a bottle"),
            ("A Year of Borrowed Rooms", "Clara Holm", "a woman house-sitting for strangers"),
        ]
    )
    pitched = c.say(
        1 - who,
        f"you HAVE to read {title} by {author}. it's about {about}. I cried on the bus",
        keep=(title.split()[-1], author.split()[-1]),
    )
    c.say(who, "adding it to the pile 📚")
    c.ask(f"Which book did {you} tell {me} to read?", "other_person", (pitched,), title, (title.split()[-1],))
    c.later(1 - who, "have you started the book yet??")
    yield 2
    started = c.say(
        who, f"started the {author.split()[-1]} one you told me about. slow start but ok", keep=(author.split()[-1],)
    )
    c.say(1 - who, "keep going!! it gets so good")
    c.later(who, "halfway through the book. no spoilers. I mean it")
    yield 3
    done = c.say(who, "finished it last night. the ending!!! I'm not ok", keep=("finished",))
    c.say(1 - who, "TOLD YOU")
    c.ask(
        f"Who wrote the novel {me} finished reading?",
        "multi_hop",
        (started, done),
        author,
        (author.split()[-1], "finished"),
    )
    c.ask(f"When did {me} finish the book {you} recommended?", "temporal", (done,), c.when(1), ("finished",))
    c.ask(
        f"What is the plot of the novel {you} pushed on {me}?", "paraphrased", (pitched,), about, (about.split()[-1],)
    )


def bike(c: _Chat, who: int) -> Iterator[int]:
    """A stolen bike, an insurance payout corrected later, what the money bought."""
    me, r = c.n(who), c.rng
    paid, corrected = r.sample([320, 380, 410, 450, 520], 2)
    brand = r.choice(["a second-hand Brompton", "an old Raleigh racer", "a Dutch bike with a basket"])
    stolen = c.say(
        who, "my bike got nicked from outside the gym. they cut the lock clean through, in daylight", keep=("nicked",)
    )
    c.react(who, "what?!", "people are the worst")
    c.later(who, "walking everywhere now, my calves are enormous")
    c.later(who, "saw a bike like mine on gumtree, got excited, not mine")
    yield 2
    c.say(who, f"insurance are paying out £{paid}. better than nothing", keep=(str(paid),))
    c.react(who)
    c.later(who, f"£{paid} won't buy much of a bike these days tbh")
    yield 1
    fixed = c.say(
        who,
        f"correction: they took the excess off so it's actually £{corrected}, not £{paid}. grr",
        keep=(str(corrected),),
    )
    c.react(who, "sneaky", "typical")
    yield 2
    bought = c.say(who, f"spent the insurance money on {brand}. I love her already", keep=(brand.split()[-1],))
    c.react(who, "pics!", "a new steed")
    c.ask(
        f"How much did the insurer finally pay {me} for the bike?",
        "latest",
        (fixed,),
        f"£{corrected}",
        (str(corrected),),
    )
    c.ask(
        f"What did {me} buy to replace the stolen bike?",
        "multi_hop",
        (stolen, bought),
        brand,
        ("nicked", brand.split()[-1]),
    )
    c.ask(f"Where was {me}'s bicycle taken from?", c.fact(who), (stolen,), "outside the gym", ("gym",))
    c.ask(f"What colour was {me}'s stolen bike?", "missing_detail", (), "never said", ("bike",), ("colour",))


def baby(c: _Chat, who: int) -> Iterator[int]:
    """A brother's baby: due date, the birth "this morning", the name, a weight."""
    me, r = c.n(who), c.rng
    bro = r.choice(["Sunil", "Pete", "Aled", "Mikey"])
    name = r.choice(["Iris", "Matilda", "Noor", "Elsie", "Freya"])
    grams = r.choice(["7lb 2oz", "6lb 11oz", "8lb 4oz"])
    due = c.say(
        who,
        f"my brother {bro} and his wife are having a baby! due in {c.month_ahead(4)}. I'm going to be the fun one",
        keep=(bro,),
    )
    c.react(who, "congrats to them!!", "the fun one lol")
    c.later(who, f"{bro} keeps sending me scan photos. it's a blob. a lovely blob")
    c.later(who, "bought a tiny cardigan for the baby, I can't cope with how small it is")
    yield 4
    born = c.say(
        who, f"BABY IS HERE. a little girl, born this morning, {grams}. everyone's fine", keep=(grams.split()[0],)
    )
    c.ask(f"When was {me}'s niece born?", "temporal", (born,), c.when(), ("born",))
    c.react(who, "🥹🥹", "amazing news")
    yield 1
    named = c.say(who, f"they've called her {name}. I'm obsessed", keep=(name,))
    c.say(who, "[photo]")
    c.react(who, "what a name", "she's perfect")
    c.later(who, "went to see the baby, she smells amazing and screams like a kettle")
    c.ask(f"What is the name of {bro}'s daughter?", c.fact(who), (named,), name, (name,))
    c.ask(f"What did {bro}'s baby weigh?", "multi_hop", (due, born), grams, (bro, grams.split()[0]))
    c.ask("How heavy was the newborn when she arrived?", "paraphrased", (born,), grams, (grams.split()[0],))
    c.ask(f"What is {name}'s middle name?", "missing_detail", (), "never said", (name,), ("middle",))


def allotment(c: _Chat, who: int) -> Iterator[int]:
    """A vegetable plot: tomato plants planted, lost to slugs, bought more (a sum over updates)."""
    me, r = c.n(who), c.rng
    first, lost, more = r.randint(6, 10), r.randint(2, 4), r.randint(2, 5)
    got = c.say(
        who,
        "we finally got an allotment!!! after two years on the waiting list. it's mostly brambles",
        keep=("allotment",),
    )
    c.react(who, "two years!", "homesteader era")
    c.later(who, "the plot next to ours has a shed with a sofa in it. goals")
    c.later(who, "dug for three hours at the allotment, found a spoon and a doll's head")
    yield 2
    planted = c.say(
        who, f"planted {first} tomato plants today. and some beans that will definitely die", keep=(str(first),)
    )
    c.react(who)
    c.later(1 - who, "how are the tomatoes?")
    yield 2
    eaten = c.say(who, f"the slugs got {lost} of the tomatoes overnight. war has been declared", keep=(str(lost),))
    c.react(who, "beer traps!!", "the slugs are ruthless")
    yield 1
    bought = c.say(who, f"bought {more} more tomato plants from the garden centre to make up for it", keep=(str(more),))
    c.react(who)
    c.later(who, "spent all sunday at the plot, my back is ruined. beans are up though!")
    c.ask(
        f"How many tomato plants does {me} have after the slugs and the new ones?",
        "counting",
        (planted, eaten, bought),
        str(first - lost + more),
        (str(first), str(lost), str(more)),
    )
    c.ask(f"How long did {me} queue for the vegetable plot?", "paraphrased", (got,), "two years", ("two",))
    c.ask(f"How big is {me}'s allotment?", "missing_detail", (), "never said", ("allotment",), ("metres",))


def exam(c: _Chat, who: int) -> Iterator[int]:
    """A professional exam: a date moved, mock tests counted, results and a score."""
    me, r = c.n(who), c.rng
    name = r.choice(["the ACCA paper", "the driving theory test", "the CIPD exam", "the Spanish B2 exam"])
    first, second = r.sample(["the 9th", "the 16th", "the 23rd", "the 30th"], 2)
    score = r.choice(["78", "84", "91"])
    c.say(who, f"booked {name} for {first} of next month. terrified", keep=(first,))
    c.react(who, "you'll smash it", "so proud of you for booking it")
    c.later(who, "revision mode. flashcards on the bus, flashcards in the bath")
    c.later(1 - who, "how's the studying going?")
    mocks = []
    yield 1
    mocks.append(c.say(who, "did a mock test tonight, scraped a pass. more revision needed", keep=("mock",)))
    c.react(who)
    c.later(who, f"{first} is coming way too fast")
    yield 1
    moved = c.say(who, f"they've moved the exam to {second} bc of a systems thing. more time to panic", keep=(second,))
    mocks.append(c.say(who, "also did another mock, better this time", keep=("mock",)))
    c.react(who, "extra time!", "see, improving")
    yield 1
    mocks.append(c.say(who, "third mock: actually good?? who am I", keep=("mock",)))
    c.react(who)
    yield 2
    result = c.say(who, f"RESULTS ARE IN. I passed!! {score} percent", keep=(score,))
    c.react(who, "I KNEW IT", "🎉🎉🎉")
    c.ask(f"What date was {me}'s exam moved to?", "latest", (moved,), second, (second,))
    c.ask(f"How many practice papers did {me} do?", "counting", tuple(mocks), "three", ("mock",) * 3)
    c.ask(f"When did {me} find out the exam result?", "temporal", (result,), c.when(), ("passed",))
    c.ask(f"What mark did {me} get?", c.fact(who), (result,), f"{score} percent", (score,))
    c.ask(f"Who marked {me}'s exam?", "missing_detail", (), "never said", ("exam",), ("examiner",))


def lender(c: _Chat, who: int) -> Iterator[int]:
    """A friend lends a tent in one session and moves abroad in another (the person links the two)."""
    me, r = c.n(who), c.rng
    friend = r.choice(["Priya", "Hamish", "Oona", "Dario"])
    country = r.choice(["Canada", "New Zealand", "Norway", "Singapore"])
    lent = c.say(
        who,
        f"{friend} lent me their tent for the festival, which is good bc ours has a hole the size of a dog",
        keep=(friend, "tent"),
    )
    c.react(who)
    c.later(who, "festival was SO muddy. the tent survived, my boots did not")
    yield 3
    leaving = c.say(
        who,
        f"big news in the friend group: {friend} is moving to {country} for work! leaving in six weeks",
        keep=(friend, country),
    )
    c.react(who, "wow", "that's huge", "gonna miss them?")
    c.later(who, f"{friend}'s leaving do is on saturday, I've already cried twice")
    c.ask(
        f"Where is the person who lent {me} a tent moving to?",
        "multi_hop",
        (lent, leaving),
        country,
        ("tent", country.split()[-1]),
    )
    c.ask(f"Why did {me} need to borrow camping gear?", "paraphrased", (lent,), "their own tent has a hole", ("hole",))
    c.ask(f"Which city in {country} is {friend} moving to?", "missing_detail", (), "never said", (friend,), ("city",))


STORIES: dict[str, Story] = {
    "move": move,
    "cat": cat,
    "boss": boss,
    "trip": trip,
    "knee": knee,
    "wedding": wedding,
    "gigs": gigs,
    "book": book,
    "bike": bike,
    "baby": baby,
    "allotment": allotment,
    "exam": exam,
    "lender": lender,
}


def _ordinal(day: int) -> str:
    return f"{day}{'th' if 11 <= day <= 13 else {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th')}"


@dataclass(frozen=True)
class Pair:
    names: tuple[str, str]
    voices: tuple[Voice, Voice]
    dated: Callable[[dt.date], str]
    start: dt.date
    stories: tuple[tuple[str, int], ...]
    """(story, who tells it)."""
    extras: tuple[tuple[str, str], ...]
    """Small talk only this pair has."""
    never: tuple[tuple[str, tuple[str, ...]], ...]
    """Questions about things never raised, with words no message holds."""


TIDY, LOOSE, SCRUFFY = Voice(0.05, 0.05, 0.03, 4), Voice(0.5, 0.4, 0.08, 3), Voice(0.9, 0.7, 0.15, 2)

PAIRS = (
    Pair(
        ("Nadia", "Ben"),
        (LOOSE, TIDY),
        lambda d: f"({d:%-d %B %Y}) ",
        dt.date(2023, 2, 4),
        (("move", 0), ("trip", 1), ("book", 0), ("knee", 1), ("gigs", 0), ("lender", 0), ("baby", 1), ("exam", 0)),
        (
            ("did you see the reunion invite? 10 years since halls", "I saw it and felt a hundred years old"),
            ("remember the fire alarm at 3am in first year", "the guy in his towel holding a toaster. iconic"),
        ),
        (
            ("What does Ben's saxophone teacher charge?", ("saxophone",)),
            ("Which marathon did Nadia enter?", ("marathon",)),
        ),
    ),
    Pair(
        ("Kasia", "Marta"),
        (SCRUFFY, LOOSE),
        lambda d: f"{d:%d.%m.%Y} ",
        dt.date(2022, 9, 12),
        (("wedding", 0), ("cat", 1), ("allotment", 0), ("boss", 1), ("trip", 0), ("bike", 0), ("exam", 1)),
        (
            ("mum rang to ask if I'm eating vegetables. I'm 34", "she asked me if I have a coat lol"),
            ("have you rung babcia this week", "yes, she told me about her neighbour's hip for 40 mins"),
        ),
        (
            ("What kind of motorbike does Marta ride?", ("motorbike",)),
            ("Which language is Kasia learning on Duolingo?", ("duolingo",)),
        ),
    ),
    Pair(
        ("Dev", "Oskar"),
        (LOOSE, SCRUFFY),
        lambda d: f"{d:%A} {_ordinal(d.day)} {d:%B} {d:%Y}. ",
        dt.date(2023, 5, 22),
        (("boss", 0), ("bike", 1), ("gigs", 1), ("move", 1), ("knee", 0), ("book", 0), ("allotment", 1)),
        (
            ("the old office has turned into flats apparently", "the kitchen with the haunted microwave? gone?"),
            ("friday pint?", "always. usual place, half 6"),
        ),
        (("What is the name of Oskar's boat?", ("boat",)), ("Which football club does Dev support?", ("football",))),
    ),
    Pair(
        ("Hannah", "Luis"),
        (TIDY, LOOSE),
        lambda d: f"— {d:%A, %B %-d, %Y} —\n",
        dt.date(2023, 8, 7),
        (("trip", 0), ("cat", 0), ("exam", 1), ("wedding", 1), ("move", 0), ("baby", 0), ("lender", 1)),
        (
            ("counting down till I see you. 19 days", "18 by the time you wake up ❤️"),
            ("the time difference is killing me, you're asleep when I'm funny", "you're funny at 3am? debatable"),
        ),
        (
            ("What did Luis give Hannah for their anniversary?", ("anniversary",)),
            ("Which gym does Luis go to?", ("gym",)),
        ),
    ),
    Pair(
        ("Farid", "Grace"),
        (TIDY, SCRUFFY),
        lambda d: f"{d:%a %-d %b %Y}: ",
        dt.date(2024, 1, 8),
        (("knee", 0), ("allotment", 0), ("baby", 1), ("boss", 1), ("gigs", 0), ("lender", 1), ("cat", 1)),
        (
            ("parkrun saturday?", "if it's not hailing. or if it is, who cares"),
            ("the hill on the loop nearly killed me", "that hill is a war crime"),
        ),
        (
            ("What is Grace's personal best for the marathon?", ("marathon",)),
            ("Which charity does Farid volunteer for?", ("charity", "volunteer")),
        ),
    ),
    Pair(
        ("Ruth", "Tom"),
        (TIDY, LOOSE),
        lambda d: f"[{d:%Y-%m-%d}] ",
        dt.date(2022, 11, 1),
        (("wedding", 0), ("move", 1), ("cat", 0), ("bike", 1), ("exam", 1), ("book", 1), ("trip", 0)),
        (
            ("Are you eating properly? I can send a box of food", "mum I'm 29. (yes please send the lasagne)"),
            ("Choir was lovely, we did the Fauré", "nice! was Brenda there, with the voice"),
        ),
        (
            ("What is the name of Tom's flatmate's girlfriend?", ("girlfriend",)),
            ("Which hospital did Ruth's surgery take place in?", ("surgery", "hospital")),
        ),
    ),
)


def _conversation(pair: Pair, number: int, seed: int) -> Conversation:
    rng = random.Random(f"fresh:{seed}:{number}")
    conversation = Conversation(f"fresh-{number}-{pair.names[0].lower()}", "friends")
    chat = _Chat(pair.names, pair.voices, pair.dated, rng, pair.start, conversation, list(pair.extras))
    sessions = rng.randint(21, 27)
    due: dict[int, list[Iterator[int]]] = {}
    for name, who in pair.stories:
        due.setdefault(rng.randrange(0, sessions - 14), []).append(STORIES[name](chat, who))
    for session in range(sessions):
        chat.open_session(rng.randint(2, 12))
        chat.filler(rng.randint(2, 5))
        while due.get(session):
            story = due[session].pop(rng.randrange(len(due[session])))
            try:
                gap = next(story)
            except StopIteration:
                continue
            finally:
                chat.filler(rng.randint(1, 4))
            due.setdefault(min(session + rng.randint(gap, gap + 2), sessions - 1), []).append(story)
        chat.filler(rng.randint(2, 6))
        chat.close_session()
    for text, absent in pair.never:
        conversation.questions.append(Asked(text, "unanswerable", (), "never raised", absent=absent))
    return conversation


def fresh_conversations(count: int = 6, seed: int = 0) -> list[Conversation]:
    """The first ``count`` of the six pairs' chats, written from ``seed``."""
    return [_conversation(pair, number, seed) for number, pair in enumerate(PAIRS[:count])]


if __name__ == "__main__":  # a look at the data: sizes, kinds, a few lines
    from collections import Counter

    from components.context_window.token_estimator import estimator_for

    tokens = estimator_for("gpt-4o")
    for c in fresh_conversations():
        size = sum(tokens.count(m["content"]) for m in c.messages)
        print(c.name, len(c.messages), "messages,", size, "tokens,", dict(Counter(q.kind for q in c.questions)))

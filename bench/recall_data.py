"""Long multi-session chats with planted facts, generated offline (bench/recall_bench.py reads them).

Each chat is a run of sessions on everyday topics (cooking, travel, money, ...): user messages of a few sentences
and long assistant replies. Facts about people in the user's life are planted in user messages at random depths,
together with hard distractors (the same kind of fact about someone else, or the same person's older fact), and
asked at the end with paraphrased questions; some questions need two facts. A message is one unit: the evidence of a
question is the user message(s) stating its facts. ``STYLES`` vary lengths, session counts and how much the
question's words overlap the fact's, so the figures do not depend on one phrasing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

TOPICS: dict[str, list[str]] = {
    "cooking": "recipe oven sauce garlic simmer dough knead bake flour butter skillet roast seasoning broth onion "
    "marinade braise caramelise pantry spice whisk".split(),
    "travel": "flight itinerary luggage hostel passport layover visa train museum booking ferry airport suitcase "
    "currency jet lag sightseeing guidebook hotel terminal".split(),
    "money": "budget savings mortgage interest rate invoice pension spreadsheet expenses index fund tax refund "
    "credit card debt salary allowance receipt bank".split(),
    "fitness": "workout running knee stretch protein marathon cadence squat treadmill rest day hydration sprint "
    "interval warm-up physio shoes pace".split(),
    "garden": "tomato seedling compost mulch pruning aphids trellis watering soil bulb hedge lawn greenhouse frost "
    "perennial fertiliser raised bed".split(),
    "software": "python script bug deploy database query server laptop backup update password router keyboard "
    "terminal config crash memory monitor".split(),
    "home": "kitchen tiles boiler leak paint landlord shelves drill insulation window damp carpet plumber lease "
    "heating wardrobe renovation".split(),
    "pets": "vet leash kibble litter walk grooming vaccine kennel harness puppy kitten treats collar adoption "
    "shelter training crate".split(),
    "work": "meeting deadline manager promotion slides quarterly review colleague project client contract email "
    "overtime presentation onboarding team".split(),
}

USER_OPENERS = [
    "Quick question about {a} and {b}.",
    "I've been thinking about {a} again.",
    "Can you help me with {a}? It's related to {b}.",
    "So, an update on the {a} situation.",
    "Another thing: {a} has been on my mind, mostly {b}.",
]
USER_SENTENCES = [
    "I tried {a} yesterday but the {b} part went badly.",
    "Do you think {a} matters more than {b}?",
    "My plan is to sort out {a} before the weekend.",
    "Last time the {a} took much longer than I expected.",
    "I read that {a} and {b} go together, is that right?",
    "Honestly I'm not sure where to start with {a}.",
]
SYNONYMS = {
    "sister": "sibling",
    "brother": "sibling",
    "cousin": "relative",
    "boss": "manager",
    "neighbour": "the woman next door",
    "best friend": "closest mate",
    "daughter": "kid",
    "son": "boy",
    "aunt": "mum's sister",
    "colleague": "coworker",
    "flatmate": "roommate",
    "uncle": "dad's brother",
}
"""How a question may name a relation without the statement's word."""
PEOPLE_SENTENCES = [
    "My {rel} {name} thinks the {a} is overrated.",
    "{name} (my {rel}) helped me with the {a} last week.",
    "I still owe my {rel} a call about the {a}.",
    "My {rel} keeps sending me articles about {a} and {b}.",
    "{name} asked whether the {a} could wait until after the {b}.",
    "When my {rel} visited, we argued about {a} for an hour.",
]
"""Everyday mentions of the same people: a name or a relation alone does not find a fact."""
KIND_WORDS = (
    "dog puppy rescue named city moving relocating job career working allergic clinic food car bought dealer "
    "birthday card date weekends hobby pastime Saturday occupation vehicle"
).split()
"""Words of the fact kinds, sprinkled through ordinary messages so they are not giveaways either."""
ASSISTANT_SENTENCES = [
    "A good first step is to look at {a} before you change anything about {b}.",
    "Many people find that {a} works better when {b} is planned in advance.",
    "If {a} keeps causing trouble, it is worth checking {b} as well.",
    "Keep notes on {a}; over a few weeks you will see how {b} affects it.",
    "There is no single right answer for {a}, but {b} is usually the deciding factor.",
    "You could also ask someone with experience in {a} for a second opinion on {b}.",
    "In general, {a} is easier to manage in small steps, and {b} follows naturally.",
    "Be careful not to overdo {a}; balancing it with {b} tends to pay off.",
]

PEOPLE = [
    ("sister", "Margot"),
    ("brother", "Tobias"),
    ("cousin", "Ines"),
    ("boss", "Mr. Haldane"),
    ("neighbour", "Priya"),
    ("best friend", "Declan"),
    ("daughter", "Lena"),
    ("son", "Oskar"),
    ("aunt", "Rosalind"),
    ("colleague", "Wei"),
    ("flatmate", "Jonas"),
    ("uncle", "Bertram"),
]


@dataclass(frozen=True)
class FactKind:
    name: str
    values: list[str]
    statements: list[str]
    """Templates with {who} (e.g. "my sister Margot"), {value}."""
    questions: list[str]
    """Paraphrased asks with {rel} ("my sister") or {name}; the words differ from the statements' where they can."""
    joint: str
    """How this fact is asked about in a two-fact question, e.g. "where {pronoun} is moving"."""


KINDS = [
    FactKind(
        "pet",
        "Biscuit Pepper Noodle Juniper Captain Mochi Waffles Pickle Ziggy Clementine".split(),
        ["{who} adopted a rescue greyhound and named it {value}.", "{who} finally got a dog, a beagle called {value}."],
        [
            "What did {rel} call the dog?",
            "What's the name of the animal {name} took in?",
            "What is the new pet of {rel} known as?",
        ],
        "what the dog is called",
    ),
    FactKind(
        "move",
        "Lisbon Tallinn Montreal Osaka Valparaiso Ljubljana Adelaide Bergen Tucson Galway".split(),
        ["{who} is relocating to {value} at the end of the summer.", "{who} accepted an offer and moves to {value}."],
        [
            "Which city is {rel} going to live in?",
            "Where will {name} be based from now on?",
            "Where is {rel} heading after the summer?",
        ],
        "which city the move is to",
    ),
    FactKind(
        "job",
        "a sommelier,a lighthouse keeper,an actuary,a puppeteer,a court stenographer,a glassblower,a ferry captain,"
        "a beekeeper,a dialysis nurse,a patent examiner".split(","),
        ["{who} started working as {value} this month.", "{who} changed careers and is now {value}."],
        [
            "What does {rel} do for a living these days?",
            "What is {name}'s occupation now?",
            "How does {rel} earn money now?",
        ],
        "what the new occupation is",
    ),
    FactKind(
        "allergy",
        "sesame,kiwi,shellfish,buckwheat,mustard,celery,lupin,hazelnuts,mango,oats".split(","),
        [
            "{who} found out at the clinic that they are allergic to {value}.",
            "{who} reacts badly to {value}, it turns out.",
        ],
        [
            "Which food must {rel} avoid?",
            "Is there an ingredient I shouldn't serve {name}?",
            "What should I leave out when I cook for {rel}?",
        ],
        "which ingredient to avoid",
    ),
    FactKind(
        "car",
        "a green Skoda Octavia,a 2009 Volvo estate,a red Fiat Panda,a secondhand Nissan Leaf,a Toyota Hilux,"
        "a vintage Saab 900,a Mazda MX-5,a Renault Kangoo,a Subaru Forester,a Honda Jazz".split(","),
        ["{who} bought {value} from a dealer across town.", "{who} is driving {value} now after the old one died."],
        [
            "What vehicle did {rel} purchase?",
            "Which car does {name} have at the moment?",
            "What does {rel} drive these days?",
        ],
        "which car was bought",
    ),
    FactKind(
        "birthday",
        "March 3rd,July 19th,October 28th,January 11th,May 30th,August 2nd,December 14th,April 22nd,June 6th,"
        "September 9th".split(","),
        ["{who} has a birthday coming up on {value}.", "Don't let me forget, {who} turns forty on {value}."],
        [
            "When should I send {rel} a card?",
            "On what date was {name} born?",
            "When does {rel} celebrate getting older?",
        ],
        "the date of the birthday",
    ),
    FactKind(
        "hobby",
        "bouldering,pottery,birdwatching,fencing,amateur radio,sourdough baking,salsa dancing,chess,kayaking,"
        "calligraphy".split(","),
        ["{who} has taken up {value} on weekends.", "{who} spends every Saturday on {value} lately."],
        [
            "What pastime has {rel} picked up?",
            "How does {name} spend free weekends now?",
            "What new interest keeps {rel} busy?",
        ],
        "the new pastime",
    ),
]


@dataclass
class Question:
    text: str
    evidence: list[int]
    """Positions (message indexes) of the evidence messages."""
    kind: str


@dataclass
class Chat:
    messages: list[dict[str, object]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass(frozen=True)
class Style:
    name: str
    sessions: tuple[int, int]
    exchanges: tuple[int, int]
    user_sentences: tuple[int, int]
    assistant_sentences: tuple[int, int]
    facts: int
    joint: int
    distractors: int
    echo: float
    """How often the assistant's reply repeats the fact (then the reply mentions it too, as real chats do)."""
    by_name: float
    """How often a question names the person rather than the relation."""
    mentions: float = 0.5
    """How often an ordinary user message mentions one of the people."""
    synonyms: float = 0.4
    """How often a question names the relation by another word (sibling for sister)."""


STYLES = [
    Style(
        "terse",
        (26, 32),
        (6, 9),
        (1, 3),
        (10, 18),
        facts=10,
        joint=3,
        distractors=12,
        echo=0.2,
        by_name=0.3,
        mentions=0.4,
        synonyms=0.5,
    ),
    Style(
        "chatty",
        (20, 26),
        (7, 11),
        (3, 6),
        (16, 30),
        facts=9,
        joint=3,
        distractors=10,
        echo=0.5,
        by_name=0.4,
        mentions=0.6,
        synonyms=0.4,
    ),
    Style(
        "crowded",
        (30, 36),
        (5, 8),
        (2, 4),
        (12, 22),
        facts=12,
        joint=4,
        distractors=24,
        echo=0.3,
        by_name=0.3,
        mentions=0.8,
        synonyms=0.6,
    ),
]


def _words(rng: random.Random, topic: str) -> dict[str, str]:
    vocab = TOPICS[topic]
    return {"a": rng.choice(vocab), "b": rng.choice(vocab if rng.random() < 0.7 else KIND_WORDS)}


def _user(rng: random.Random, topic: str, style: Style, fact: str | None = None) -> str:
    parts = [rng.choice(USER_OPENERS).format(**_words(rng, topic))]
    parts += [
        rng.choice(USER_SENTENCES).format(**_words(rng, topic)) for _ in range(rng.randint(*style.user_sentences))
    ]
    if rng.random() < style.mentions:
        rel, name = rng.choice(PEOPLE)
        parts.insert(
            rng.randint(0, len(parts)), rng.choice(PEOPLE_SENTENCES).format(rel=rel, name=name, **_words(rng, topic))
        )
    if fact is not None:
        parts.insert(rng.randint(1, len(parts)), fact)
    return " ".join(parts)


def _assistant(rng: random.Random, topic: str, style: Style, echo: str | None = None) -> str:
    n = rng.randint(*style.assistant_sentences)
    parts = [rng.choice(ASSISTANT_SENTENCES).format(**_words(rng, topic)) for _ in range(n)]
    if echo:
        parts.insert(0, f"Thanks for telling me that {echo}.")
    return " ".join(parts)


@dataclass
class _Plant:
    text: str
    echo: str | None
    question: Question | None


def make_chat(seed: int, style: Style) -> Chat:
    """One chat: sessions of exchanges, facts and distractors at random depths, questions at the end."""
    rng = random.Random(seed)
    people = rng.sample(PEOPLE, len(PEOPLE))
    kinds = rng.sample(KINDS, len(KINDS))
    plants: list[_Plant] = []
    facts: list[tuple[tuple[str, str], FactKind, str, Question]] = []
    used: set[tuple[str, str]] = set()
    for i in range(style.facts):  # the first ``joint`` people get two facts each (asked together too)
        person = people[i % (style.facts - style.joint)]
        kind = next(k for k in kinds[i % len(kinds) :] + kinds if (person[0], k.name) not in used)
        used.add((person[0], kind.name))
        value = rng.choice(kind.values)
        who = f"my {person[0]} {person[1]}"
        text = rng.choice(kind.statements).format(who=who[0].upper() + who[1:], value=value)
        ask = rng.choice(kind.questions)
        rel = f"my {SYNONYMS[person[0]] if rng.random() < style.synonyms else person[0]}"
        asked = ask.format(rel=rel, name=person[1] if rng.random() < style.by_name else rel)
        question = Question(asked, [], kind.name)
        facts.append((person, kind, value, question))
        plants.append(_Plant(text, f"{person[1]} and {value}" if rng.random() < style.echo else None, question))
    for _ in range(style.distractors):  # the same kinds of fact about people never asked about (or other values)
        person, kind = rng.choice(PEOPLE), rng.choice(KINDS)
        if (person[0], kind.name) in used:
            continue
        value = rng.choice(kind.values)
        who = f"my {person[0]}'s friend from school"
        text = rng.choice(kind.statements).format(who=who[0].upper() + who[1:], value=value)
        plants.append(_Plant(text, None, None))
    joint: list[tuple[Question, Question, Question]] = []
    by_person: dict[str, list[tuple[FactKind, Question]]] = {}
    for person, kind, _, q in facts:
        by_person.setdefault(person[0], []).append((kind, q))
    for rel, asked in by_person.items():
        if len(asked) >= 2 and len(joint) < style.joint:
            (k1, q1), (k2, q2) = asked[:2]
            said = SYNONYMS[rel] if rng.random() < style.synonyms else rel
            text = f"Remind me about my {said}: {k1.joint}, and {k2.joint}?"
            joint.append((Question(text, [], "joint"), q1, q2))
    rng.shuffle(plants)
    chat = Chat()
    sessions = rng.randint(*style.sessions)
    exchanges = [rng.randint(*style.exchanges) for _ in range(sessions)]
    total = sum(exchanges)
    slots = sorted(rng.sample(range(1, total - 2), len(plants)))  # never in the last exchanges
    plant_at = dict(zip(slots, plants, strict=True))
    n = 0
    for s in range(sessions):
        topic = rng.choice(list(TOPICS))
        for _ in range(exchanges[s]):
            plant = plant_at.get(n)
            user = _user(rng, topic, style, plant.text if plant else None)
            if plant and plant.question is not None:
                plant.question.evidence.append(len(chat.messages))
            chat.messages.append({"role": "user", "content": user})
            chat.messages.append({"role": "assistant", "content": _assistant(rng, topic, style, plant and plant.echo)})
            n += 1
    chat.questions = [q for *_, q in facts]
    for q, q1, q2 in joint:
        q.evidence = q1.evidence + q2.evidence
        chat.questions.append(q)
    return chat


def chats(seeds: int = 2) -> list[tuple[str, Chat]]:
    """``seeds`` chats per style."""
    return [
        (f"{style.name}-{seed}", make_chat(1000 * i + seed, style))
        for i, style in enumerate(STYLES)
        for seed in range(seeds)
    ]

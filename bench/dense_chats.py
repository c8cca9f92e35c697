"""Dense chats between two friends, for bench/conversation_bench.py: the kind that is hard for recall.

``conversation_data`` writes chats whose news is rare: a pet's unique name, a city named once, a company. A question
shares a rare word with its evidence, and a plain hybrid finds nearly all of it (92-100% at 4K-16K). Long chats
between people are rarely like that. Here every message carries content, and the content repeats its topic's words:

* each friend has four pastimes out of ten (painting, baking, hiking, ...), two shared with the other, and does
  something in one of them every few days: *what* (a field of sunflowers), *where* (in the back garden), *when*
  (last weekend: the session's date says which day), sometimes *with whom*, told once;
* around that news, long messages about the same pastimes with no news in them ("Baking is the only thing that
  calms me down these days..."), a reaction to the other's last message, a question back: many messages say
  "painted", "garden" and the friend's name for every one that answers a question;
* messages are 25-70 words, sessions 16-26 messages, 24-30 sessions (~550 messages, ~25,000 tokens).

Questions, evidence labelled by message: ``single_hop`` (what was done there: "What did Dana paint in the back
garden?"), ``paraphrased`` (the same in other words: "What picture did Dana make outside behind the house?"),
``temporal`` ("When did Dana paint a field of sunflowers?"), ``multi_hop`` (who came along: the event and the
answer to the friend's follow-up, which does not repeat the event's words; and everything one did in a pastime over
the months), ``indirect`` (life news told once in passing, five each, asked as a friend would later: "The physio says
my knee needs another six weeks" for "What injury has Dana had?"), and the three kinds nothing answers
(``conversation_data.UNANSWERABLE``).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from bench.conversation_data import Conversation, Question


@dataclass(frozen=True)
class Pastime:
    name: str
    did: str
    """The verb as told ("painted") ..."""
    do: str
    """... as asked ("paint") ..."""
    do_other_words: str
    """... and asked in other words ("make a picture of")."""
    places: tuple[tuple[str, str], ...]
    """Where, as told and in other words."""
    things: tuple[tuple[str, str], ...]
    """What, as told and in other words."""
    musings: tuple[str, ...]
    """Talk about the pastime with no news in it."""


PASTIMES = (
    Pastime(
        "painting",
        "painted",
        "paint",
        "make a picture of",
        (
            ("in the back garden", "outside behind the house"),
            ("at the Sunday art class", "at the weekend art lessons"),
            ("down by the harbour", "near the boats"),
            ("at the community centre", "at the local hall"),
        ),
        (
            ("a field of sunflowers", "a meadow of big yellow flowers"),
            ("the old mill by the river", "a disused grain building on the water"),
            ("a fox asleep in the snow", "a wild animal dozing in winter"),
            ("the lighthouse at dusk", "a coastal tower in the evening"),
            ("a bowl of lemons", "some citrus fruit in a dish"),
            ("a portrait of the neighbour's cat", "a likeness of a pet from next door"),
        ),
        (
            "Painting is honestly the only thing that switches my brain off lately, even when what I paint is awful.",
            "I keep buying new brushes and then using the same old flat one for everything I paint.",
            "My painting teacher says I should stop fiddling with the details and loosen up a bit.",
            "I've been looking at so many paintings online, I want to try bolder colours in the garden scenes.",
        ),
    ),
    Pastime(
        "baking",
        "baked",
        "bake",
        "make in the oven",
        (
            ("for the school fair", "for the children's fundraiser"),
            ("for my sister's birthday", "for her sibling's celebration"),
            ("at the community centre", "at the local hall"),
            ("for the office party", "for the work do"),
        ),
        (
            ("a lemon drizzle cake", "a citrus sponge with icing"),
            ("three dozen cinnamon rolls", "a big batch of spiced buns"),
            ("a sourdough loaf with olives", "a tangy bread with black fruit in it"),
            ("a chocolate layer cake", "a tall cocoa gateau"),
            ("a rhubarb crumble", "a tart fruit pudding with a crunchy top"),
            ("ginger biscuits shaped like stars", "spicy cookies cut into little shapes"),
        ),
        (
            "Baking on a rainy afternoon is my idea of heaven, the whole kitchen smells amazing.",
            "I've ruined so many cakes this year by opening the oven too early, I never learn.",
            "Everyone at work now expects me to bake something every Friday, which is flattering and exhausting.",
            "I want to get better at bread, my loaves keep coming out flat no matter what I bake them in.",
        ),
    ),
    Pastime(
        "hiking",
        "hiked",
        "hike",
        "walk",
        (
            ("in the hills above the town", "on the high ground near home"),
            ("along the coast path", "by the sea cliffs"),
            ("through the national park", "in the big protected forest"),
            ("with the walking club", "with the rambling group"),
        ),
        (
            ("up to the waterfall", "to where the river drops over the rocks"),
            ("twenty kilometres in the rain", "a long way in wet weather"),
            ("to the ruined chapel", "to an old broken church"),
            ("the ridge trail at sunrise", "along the crest at dawn"),
            ("to the lake with the wooden jetty", "to the water with a little pier"),
            ("around the reservoir twice", "two laps of the dam"),
        ),
        (
            "Hiking is the best therapy, honestly. Nothing like being out in the hills to sort your head out.",
            "My boots are falling apart after all this hiking, I need new ones before the next walk.",
            "I love that feeling at the end of a long hike when your legs ache but your mind is quiet.",
            "Half the fun of hiking for me is the sandwich at the top, if I'm being honest.",
        ),
    ),
    Pastime(
        "gardening",
        "planted",
        "plant",
        "put in the ground",
        (
            ("in the back garden", "outside behind the house"),
            ("at the allotment", "on the rented vegetable plot"),
            ("along the front path", "by the walkway to the door"),
            ("in pots on the balcony", "in containers outside the flat"),
        ),
        (
            ("a row of runner beans", "a line of climbing beans"),
            ("three apple trees", "some young fruit trees"),
            ("tulip bulbs in every colour", "flower bulbs of all sorts"),
            ("tomatoes and basil together", "red fruit with a herb beside it"),
            ("a hedge of lavender", "a border of purple scented shrubs"),
            ("strawberries for the kids", "berries for the children"),
        ),
        (
            "The garden is slowly coming together, although the slugs are winning at the moment.",
            "I spend more time reading about gardening than actually gardening, which says a lot.",
            "Nothing beats eating something you planted yourself, even if it's a single wonky carrot.",
            "Gardening has taught me patience, mostly because nothing I plant ever grows on schedule.",
        ),
    ),
    Pastime(
        "music",
        "played",
        "play",
        "perform",
        (
            ("at the open mic night", "at the bar's amateur evening"),
            ("at my cousin's wedding", "at a relative's marriage party"),
            ("at the community centre", "at the local hall"),
            ("in the park on Sunday", "outdoors at the weekend in the green space"),
        ),
        (
            ("a slow version of Wonderwall", "a gentle cover of an old Oasis hit"),
            ("three songs I wrote myself", "some original tunes"),
            ("a duet with my neighbour", "a two-person number with someone from next door"),
            ("an Irish jig on the fiddle", "a fast folk dance tune on the violin"),
            ("the Beatles medley", "a mix of old Liverpool band songs"),
            ("lullabies for the toddlers", "soothing songs for small children"),
        ),
        (
            "Music keeps me sane, I play something every evening even if it's only for ten minutes.",
            "I get so nervous before I play in front of people, my hands literally shake.",
            "I've been learning songs by ear lately, it's slow but I'm getting better at hearing chords.",
            "Playing with other people is so different from playing alone, you have to really listen.",
        ),
    ),
    Pastime(
        "volunteering",
        "helped out",
        "help out",
        "volunteer",
        (
            ("at the animal shelter", "at the rescue centre for pets"),
            ("at the food bank", "at the charity that hands out groceries"),
            ("at the community centre", "at the local hall"),
            ("at the hospice shop", "at the charity second-hand store"),
        ),
        (
            ("walking six dogs at once", "taking a pack of hounds out"),
            ("sorting a mountain of donated coats", "going through piles of given clothes"),
            ("teaching an old man to use email", "showing an elderly gentleman how to send messages"),
            ("running the Saturday breakfast club", "organising a weekend morning meal"),
            ("painting the walls of the kids' room", "redecorating the children's area"),
            ("packing hampers for the winter", "filling gift boxes for the cold months"),
        ),
        (
            "Volunteering reminds me how lucky I am, and the people there are lovely.",
            "I want to volunteer more but work keeps eating my weekends.",
            "Some days helping out is exhausting, but I always leave feeling better than when I came.",
            "The volunteers there are such a mix of people, students, retirees, everyone.",
        ),
    ),
    Pastime(
        "cycling",
        "cycled",
        "cycle",
        "ride a bike",
        (
            ("along the canal", "beside the narrow waterway"),
            ("with the Saturday cycling group", "with the weekend bike club"),
            ("through the national park", "in the big protected forest"),
            ("to the coast and back", "to the seaside and home again"),
        ),
        (
            ("fifty miles without stopping", "a long way in one go"),
            ("to the old railway bridge", "to where the former train viaduct is"),
            ("up the steepest hill in the county", "up the hardest climb around"),
            ("to the village with the famous pie shop", "to a hamlet known for its pastries"),
            ("at night with lights on the helmet", "after dark with a lamp on the head"),
            ("on a borrowed tandem", "on a two-seater bike someone lent"),
        ),
        (
            "Cycling to work has changed my life, I arrive awake instead of grumpy.",
            "My bike needs a new chain, it makes the most horrible noise on every hill.",
            "I love cycling but I hate the wind, it's always against me somehow.",
            "The cycling group is lovely but they go way too fast for me on the flat.",
        ),
    ),
    Pastime(
        "reading",
        "read",
        "read",
        "get through",
        (
            ("for the book club", "for the reading group"),
            ("on the train to work", "during the commute"),
            ("to the kids at bedtime", "to the children before sleep"),
            ("at the library's reading night", "at the evening event at the book-lending place"),
        ),
        (
            ("a thriller set in Iceland", "a crime novel in a cold northern country"),
            ("a biography of Marie Curie", "the life story of a famous female scientist"),
            ("the whole Narnia series", "all the books about the wardrobe world"),
            ("a book of poems about the sea", "verses about the ocean"),
            ("a history of the Silk Road", "an account of the old trade routes to China"),
            ("a cookbook cover to cover", "a recipe collection from start to finish"),
        ),
        (
            "Reading before bed is the best part of my day, phone off, blanket on.",
            "My pile of books to read keeps growing faster than I can read them.",
            "I've started reading more non-fiction lately, it feels good to learn things.",
            "The book club discussions are half about the book and half gossip, which I love.",
        ),
    ),
)

COMPANIONS = (
    ("My cousin Lea came along, she's way better at it than me.", "Lea, a cousin"),
    ("Just me and my old school friend Tomasz, like the old days.", "Tomasz, a school friend"),
    ("My neighbour Gwen joined, she'd never done it before.", "Gwen, a neighbour"),
    ("My brother Olu, he only came because I promised lunch.", "Olu, a brother"),
    ("A colleague, Sunita, she's been asking to come for ages.", "Sunita, a colleague"),
    ("My dad, believe it or not! He loved it.", "the father"),
    ("Aunt Beatriz, visiting from Porto for the week.", "Beatriz, an aunt"),
    ("Kasper from the running club, we've become good friends.", "Kasper"),
)
FOLLOW_UPS = (
    "Who did you go with?",
    "Were you on your own or did someone come with you?",
    "Who was with you?",
    "Did anyone join you for that?",
)
WHEN = ("Yesterday", "Last weekend", "On Saturday", "This morning", "On Sunday afternoon", "Last Tuesday")
REACTIONS = (
    "That sounds lovely, {other}, I'm so happy for you.",
    "Ha, that's so typical of you, {other}!",
    "Oh wow, I didn't know that, tell me more sometime.",
    "Aw, that made me smile, thanks for telling me.",
    "Honestly that sounds exhausting but also really fun.",
    "I love hearing about your week, {other}, it's always so full.",
    "No way! You never stop, do you?",
    "That's brilliant, I'm a little jealous to be honest.",
)
QUESTIONS_BACK = (
    "How's your week been?",
    "What have you been up to?",
    "Anything new with you?",
    "How are things on your side?",
    "",
    "",
)
LIFE = (
    "Work has been hectic, two people are off sick so I'm covering for both of them.",
    "The kids have had colds all week so the house has been chaos, honestly.",
    "I finally sorted out the spare room, it only took me three years.",
    "We've been trying to eat less takeaway, it's going about as well as you'd expect.",
    "My car failed its inspection, so that's going to be an expensive month.",
    "I've been sleeping badly, too much on my mind with everything at work.",
    "The weather has been grim, grey every single day, I miss the sun.",
    "We had friends over for dinner on Friday and stayed up talking until two.",
)
ABSENT = (
    "What did {p} think of the scuba diving course?",
    "Which football team does {p} support?",
    "How many languages does {p} speak?",
    "What did {p} carve at the woodworking class?",
    "Which opera did {p} see last month?",
    "What did {p} knit for the baby?",
)
UNKNOWN_PEOPLE = (
    "What did {p}'s neighbour Dmitri {do} {place}?",
    "What did {p}'s colleague Ingrid {do} {place}?",
)
MISSING = (
    "How much did {p} spend on supplies for {thing}?",
    "What was the weather like when {p} {did} {thing}?",
)
LIFE_FACTS = (
    (
        "Big news, I handed in my notice! I start at the animal clinic on the high street next month.",
        "Where is {p} going to work?",
    ),
    ("We finally got the keys to the flat by the canal, there are boxes everywhere.", "Where did {p} move to?"),
    ("The physio says my knee needs another six weeks before I can run again.", "What injury has {p} had?"),
    (
        "We adopted a greyhound from the rescue centre, she's called Biscuit and she's terrified of the hoover.",
        "What pet did {p} get?",
    ),
    (
        "I signed up for evening classes, I'm sitting the accountancy exams in the autumn.",
        "What qualification is {p} working towards?",
    ),
    ("My sister had twin boys on Thursday, two tiny new people in the family!", "Who had babies in {p}'s family?"),
    ("I've gone vegetarian, three weeks now and I don't even miss bacon.", "What change did {p} make to their diet?"),
    (
        "I'm doing Portuguese on an app before the trip, it nags me every single morning.",
        "Which language is {p} learning?",
    ),
    ("Passed my driving test at the fourth attempt, I still can't believe it.", "What exam did {p} get through?"),
    (
        "I've been volunteering at the food bank on Wednesdays, sorting tins mostly.",
        "Where does {p} help out each week?",
    ),
    (
        "Our landlord is selling up, so we have to find somewhere else by June.",
        "Why does {p} have to look for a new home?",
    ),
    ("Got the results back, it's just low vitamin D, nothing serious.", "What did {p}'s medical tests show?"),
)
"""Life news told once in passing, in the teller's words, and asked as a friend would ask about it later: the
question shares hardly a word with its evidence (real chats' "What is her new job?", "Where did he move to?")."""
PAIRS = (("Dana", "Marcus"), ("Noor", "Felix"), ("Ravi", "Hannah"))


@dataclass
class _Chat:
    conversation: Conversation
    names: tuple[str, str]
    rng: random.Random
    date: dt.date = dt.date(2023, 4, 3)
    opening: bool = False

    def say(self, speaker: int, text: str) -> int:
        text = f"{self.names[speaker]}: {text.replace('{other}', self.names[1 - speaker])}"
        if self.opening:
            text, self.opening = f"[{self.date:%-d %B %Y}] {text}", False
        self.conversation.messages.append({"role": "user" if speaker == 0 else "assistant", "content": text})
        return len(self.conversation.messages) - 1

    def musing(self, pastime: Pastime) -> str:
        return self.rng.choice(pastime.musings)

    def reply(self, speaker: int, text: str, back: bool = True) -> int:
        """A message as people write them: a reaction to the last one, the news or thought, a question back."""
        reaction = self.rng.choice(REACTIONS) + " " if self.rng.random() < 0.7 else ""
        question = " " + self.rng.choice(QUESTIONS_BACK) if back else ""
        return self.say(speaker, f"{reaction}{text}{question}".strip())


def dense_conversation(seed: int) -> Conversation:
    rng = random.Random(1000 + seed)
    names = PAIRS[seed % len(PAIRS)]
    conversation = Conversation(f"dense-{seed}", "dense")
    chat = _Chat(conversation, names, rng)
    shared = rng.sample(PASTIMES, 2)
    rest = [p for p in PASTIMES if p not in shared]
    own = rng.sample(rest, 4)
    pastimes = [shared + own[:2], shared + own[2:]]
    sessions = rng.randint(26, 32)
    events: list[list[tuple[int, Pastime, int, int]]] = [[] for _ in range(sessions)]
    """Per session: (speaker, pastime, place, thing) of the news told in it."""
    used: set[tuple[int, str, int]] = set()
    for speaker in (0, 1):
        for session in range(sessions):
            for _ in range(rng.choice((0, 1, 1, 2))):
                pastime = rng.choice(pastimes[speaker])
                place = rng.randrange(len(pastime.places))
                if (speaker, pastime.name, place) in used:  # one thing per pastime and place: a question has one answer
                    continue
                used.add((speaker, pastime.name, place))
                events[session].append((speaker, pastime, place, rng.randrange(len(pastime.things))))
    questions: list[Question] = []
    told: dict[tuple[int, str], list[int]] = {}
    facts = _life_facts(seed, sessions)
    for session in range(sessions):
        chat.date += dt.timedelta(days=rng.randint(3, 14))
        chat.opening = True
        speaker = rng.randrange(2)
        chat.say(speaker, f"Hey {names[1 - speaker]}! {rng.choice(QUESTIONS_BACK) or 'Got a minute?'}")
        speaker = 1 - speaker
        news = list(events[session])
        rng.shuffle(news)
        for _ in range(rng.randint(14, 22)):
            if session in facts and facts[session][0] == speaker:
                questions.append(_tell_fact(chat, *facts.pop(session)))
            if news and news[0][0] == speaker and rng.random() < 0.6:
                questions += _tell(chat, *news.pop(0), told)
            elif rng.random() < 0.55:
                thought = chat.musing(rng.choice(pastimes[speaker]))
                chat.reply(speaker, f"{rng.choice(LIFE)} {thought}" if rng.random() < 0.4 else thought)
            else:
                chat.reply(speaker, rng.choice(LIFE))
            speaker = 1 - speaker
        for item in news:  # news not told yet, by whoever's turn it is not: in order
            if item[0] != speaker:
                chat.reply(speaker, rng.choice(LIFE), back=False)
                speaker = 1 - speaker
            questions += _tell(chat, *item, told)
            speaker = 1 - item[0]
        chat.say(speaker, "Anyway, I should get going. Talk soon!")
        chat.say(1 - speaker, f"Bye {names[speaker]}, take care!")
    for (speaker, name), at in told.items():
        pastime = next(p for p in PASTIMES if p.name == name)
        if len(at) >= 2:
            questions.append(
                Question(f"What has {names[speaker]} {pastime.did} over the months?", "multi_hop", tuple(at))
            )
    questions += _never_answered(names, pastimes, rng)
    conversation.questions = questions
    return conversation


def _tell(
    chat: _Chat, speaker: int, pastime: Pastime, place: int, thing: int, told: dict[tuple[int, str], list[int]]
) -> list[Question]:
    rng, p = chat.rng, chat.names[speaker]
    where, where_other = pastime.places[place]
    what, what_other = pastime.things[thing]
    at = chat.reply(
        speaker,
        f"{rng.choice(WHEN)} I {pastime.did} {what} {where}. {chat.musing(pastime)}",
        back=rng.random() < 0.5,
    )
    told.setdefault((speaker, pastime.name), []).append(at)
    questions = [
        Question(f"What did {p} {pastime.do} {where}?", "single_hop", (at,)),
        Question(f"What did {p} {pastime.do_other_words} {where_other}?", "paraphrased", (at,)),
        Question(f"When did {p} {pastime.do} {what}?", "temporal", (at,)),
    ]
    if rng.random() < 0.4:  # the friend asks who came along; the answer does not repeat the news
        chat.say(1 - speaker, rng.choice(FOLLOW_UPS))
        said, _ = rng.choice(COMPANIONS)
        answer = chat.say(speaker, said)
        questions.append(Question(f"Who was with {p} when {p} {pastime.did} {what_other}?", "multi_hop", (at, answer)))
    return questions


def _life_facts(seed: int, sessions: int) -> dict[int, tuple[int, int, str]]:
    """Five life facts each, told in distinct sessions: session -> (speaker, fact, the reaction that opens it). Drawn
    from their own generator, so that the rest of the chat is the one it was before they were added."""
    rng = random.Random(5000 + seed)
    chosen = rng.sample(range(len(LIFE_FACTS)), 10)
    told = [(i % 2, fact, rng.choice(REACTIONS)) for i, fact in enumerate(chosen)]
    return dict(zip(rng.sample(range(1, sessions), 10), told, strict=True))


def _tell_fact(chat: _Chat, speaker: int, fact: int, reaction: str) -> Question:
    told, asked = LIFE_FACTS[fact]
    at = chat.say(speaker, f"{reaction} {told}")
    return Question(asked.format(p=chat.names[speaker]), "indirect", (at,))


def _never_answered(names: tuple[str, str], pastimes: list[list[Pastime]], rng: random.Random) -> list[Question]:
    out: list[Question] = []
    for speaker, p in enumerate(names):
        out += [Question(t.format(p=p), "unanswerable", ()) for t in rng.sample(ABSENT, 3)]
        pastime = rng.choice(pastimes[speaker])
        place = rng.choice(pastime.places)[0]
        out += [Question(t.format(p=p, do=pastime.do, place=place), "unknown_person", ()) for t in UNKNOWN_PEOPLE]
        thing = rng.choice(pastime.things)[0]
        out += [Question(t.format(p=p, did=pastime.did, thing=thing), "missing_detail", ()) for t in MISSING]
    return out


def dense_conversations(count: int = 2) -> list[Conversation]:
    return [dense_conversation(seed) for seed in range(count)]


if __name__ == "__main__":  # a look at the data
    from collections import Counter

    for c in dense_conversations(3):
        words = sum(len(m["content"].split()) for m in c.messages)
        print(c.name, len(c.messages), "messages,", words, "words,", dict(Counter(q.kind for q in c.questions)))
    print("\n".join(m["content"] for m in dense_conversations(1)[0].messages[:24]))

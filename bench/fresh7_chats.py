"""An eighth long-conversation set (``BENCH_DATA=fresh7``): three pairs with lives of their own, written the way
people write to each other, apart from recall's code and from the other sets' templates.

What fresh6's writer said made it narrow, and what this set does instead:

* **Speakers written three ways.** Nadia and Tom's chat and Gwen and Rohan's carry the speaker only in each
  message's ``name`` (the text is what was typed); Beatriz and Olu's is an export with "Beatriz: " opening each
  line. Each chat stamps its sessions its own way ("[4 March 2025, 7:42 pm] hiya", a "— Saturday 12 April 2025 —"
  line, a "2025-06-03 21:10" line).
* **Messages of uneven length**: one-word replies ("ha", "nooo 😂"), a line or two, and paragraphs of four to seven
  sentences about a day, some with the news said halfway through.
* **No event template shared between chats.** Each person has their own jobs, family and news (a vet nurse and a
  music teacher getting married; a baker with a market stall and a father of a toddler; a translator in Porto and a
  carpenter in Glasgow), written once for that person.
* **Topics that recur and change.** A plan is told, then changed once or twice in later sessions ("we moved the
  wedding to June"); the newest state is the answer (``knowledge_update``). Told news is asked after in later
  sessions without its detail, and small talk echoes an event's words ("my cousin's wedding went on till 2am")
  without its detail.
* **A mix of question styles.** Each answerable question is asked either in its evidence's words or in others; it
  names its person, says "she" / "he" (each pair is a woman and a man), or goes through a relation ("her brother").

Kinds: ``single_hop`` (a detail of one person's news, one message), ``multi_hop`` (two or three messages from
different sessions: a person named with a relation, then their news; or things done over months asked together),
``temporal`` (the day, weekend or month a message's relative phrase points at from its session's stamp),
``knowledge_update`` (the latest of a plan's states: the last change's message), ``inference`` (a yes or no from a
stated like, fear or habit) and ``unanswerable`` (a topic no one raises, no evidence).

Each chat: 27-33 stamped sessions 3-9 days apart (5-8 months), 15-22 messages a session, 535-603 messages and
14.9-17.9K tokens (seeds 0-2); 31 questions (single_hop 10, multi_hop 4, temporal 5, knowledge_update 4, inference 4,
unanswerable 4), about half sharing a content word with their evidence. A seed (``BENCH_FRESH_SEED``) places the news
in other sessions, dates it, picks each question's style and writes the small talk anew.

Caveats: the chats are shorter than fresh6's (18-24K tokens), so at 16K a baseline packs ~85% of a chat and that
column says little; the small talk is composed from a stock of sentences (a 9-word sentence comes back up to 8 times
in a chat); each person's story lines are fixed per chat (a seed moves and dates them, it does not reword them).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.conversation_data import Conversation
from bench.fresh4_chats import Asked

KINDS = ("single_hop", "multi_hop", "temporal", "knowledge_update", "inference", "unanswerable")
NOTHING = ("unanswerable",)
"""The kind no message answers (no evidence)."""
__all__ = ["KINDS", "NOTHING", "PAIRS", "Asked", "fresh7_conversations", "time_answer"]

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


# -- what a person's life holds ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """News told in one session ("{when}": a phrase dated from it), asked after by the friend, and its detail.
    ``answer`` is said only in ``detail``; ``ref`` is how either of them asks after it later (no detail, no date)."""

    who: int
    news: str
    ask: str
    detail: str
    same: str
    """The question in the detail's words ({S}: the person as a subject, {P}: possessive)."""
    other: str
    """The question in other words."""
    answer: str
    when: str
    """Asking when the news happened."""
    ref: str


@dataclass(frozen=True)
class Update:
    """A plan told, then changed in later sessions: ``states`` in order, each holding its ``values`` word (said only
    there); the last one is the answer."""

    who: int
    states: tuple[str, ...]
    values: tuple[str, ...]
    same: str
    other: str


@dataclass(frozen=True)
class Hops:
    """Messages told in different sessions, in order, asked for together: a person named with a relation then
    their news, or things done over months. ``keys``: a word each line holds and no other message does (a chain's
    first key is the name its lines share)."""

    who: int
    lines: tuple[str, ...]
    keys: tuple[str, ...]
    question: str
    answer: str
    chain: bool = True


@dataclass(frozen=True)
class Like:
    """A stated like, fear or habit (one or two lines, in different sessions) and a question it answers."""

    who: int
    lines: tuple[str, ...]
    keys: tuple[str, ...]
    question: str
    answer: str


@dataclass(frozen=True)
class Life:
    """One pair's chat: who they are, how it is written, and what happens to them."""

    name: str
    names: tuple[str, str]
    pronouns: tuple[tuple[str, str], tuple[str, str]]
    """Each one's (subject, possessive): ("she", "her")."""
    start: dt.date
    stamp: Callable[[dt.datetime, str], str]
    """A session's first message, given its time and text."""
    tagged: bool
    """The speaker written into the text ("Olu: ...") rather than in the message's ``name``."""
    facts: tuple[Fact, ...]
    updates: tuple[Update, ...]
    hops: tuple[Hops, ...]
    likes: tuple[Like, ...]
    unraised: tuple[tuple[str, tuple[str, ...]], ...]
    """Questions on topics no one raises, and words the chat never says."""
    echoes: tuple[str, ...]
    """Small talk sharing an event's words without its detail."""
    own: tuple[tuple[str, ...], tuple[str, ...]]
    """Each one's everyday lines (their job, their town, their people)."""


# -- Nadia (a vet nurse in Bristol) and Tom (a music teacher in Leeds), flatmates at university ---------------------

NADIA_TOM = Life(
    "nadia_tom",
    ("Nadia", "Tom"),
    (("she", "her"), ("he", "his")),
    dt.date(2024, 9, 9),
    lambda t, text: f"[{t:%-d %B %Y}, {t:%-I:%M} {t:%p}".replace("AM", "am").replace("PM", "pm") + f"] {text}",
    False,
    facts=(
        Fact(
            0,
            "Did my first solo night shift at the out-of-hours clinic {when}. Survived!",
            "How was it?? Anything dramatic?",
            "A spaniel came in at 1am having eaten an entire tray of brownies, so I spent the night watching his heart"
            " rate and cleaning up after him. He's fine, the brownies less so.",
            "What had the dog eaten on {P} first solo night shift?",
            "What did the animal swallow that kept {S} up all night at work?",
            "brownies",
            "When did {S} do the first night shift alone?",
            "the night shifts",
        ),
        Fact(
            0,
            "I bought a secondhand sewing machine {when}, I'm going to become a person who makes her own clothes",
            "haha love this. what kind?",
            "A 1970s Singer, mint green, from a lady in Clifton who was downsizing. Weighs about as much as I do.",
            "What make is {P} secondhand sewing machine?",
            "Which brand of vintage machine did {S} pick up for making clothes?",
            "singer",
            "When did {S} buy the sewing machine?",
            "the sewing",
        ),
        Fact(
            0,
            "Someone nicked my bike from outside Temple Meads {when}. Cut straight through the lock.",
            "NO. Any chance of getting it back?",
            "Actually yes?? The police rang, they found it dumped in a skip in Easton, minus the front wheel.",
            "Where did the police find {P} stolen bike?",
            "Where did {P} pinched bicycle turn up?",
            "skip",
            "When was {P} bike stolen?",
            "the bike saga",
        ),
        Fact(
            0,
            "Went to the quiz at the Mason's Arms with the girls from work {when}",
            "Did you win?",
            "Third! Which got us a tin of shortbread, we ate it in the car park.",
            "What prize did {P} quiz team win?",
            "What did {S} and the colleagues get for coming third at the pub?",
            "shortbread",
            "When did {S} go to the pub quiz?",
            "quiz nights",
        ),
        Fact(
            0,
            "Mum and I went to the lantern parade {when}, it was magical",
            "Aw! Which was the best one?",
            "A giant paper octopus with lights in every tentacle, six people carrying it. Mum cried, obviously.",
            "Which lantern did {S} like best at the parade?",
            "What was the favourite creation {S} saw at the procession with {P} mum?",
            "octopus",
            "When did {S} and {P} mum go to the lantern parade?",
            "the parade",
        ),
        Fact(
            1,
            "The school orchestra played the town hall {when}. I'm so proud of these kids",
            "Amazing!! What did they play?",
            "The Arrival of the Queen of Sheba, and only the second oboe got lost, which for year nine is a triumph.",
            "Which piece did {P} school orchestra play at the town hall?",
            "What music did {P} pupils perform at the concert?",
            "sheba",
            "When did {P} orchestra play the town hall?",
            "the orchestra",
        ),
        Fact(
            1,
            "Priya and I did a cookery class {when} as an early wedding present to ourselves",
            "ooh what did you make",
            "Handmade gnocchi. Ours looked like little grubs but tasted fine, the teacher was very diplomatic.",
            "What did {S} and Priya make at the cookery class?",
            "Which dish did {S} learn to cook with {P} fiancée?",
            "gnocchi",
            "When did {S} and Priya do the cookery class?",
            "the cooking",
        ),
        Fact(
            1,
            "Sold my old drum kit {when}, end of an era",
            "How much did you get for it?",
            "A lad from Harrogate turned up with £340 in cash and a van. More than I paid for it in 2009.",
            "How much did {S} get for {P} old drum kit?",
            "What price did {P} drums go for?",
            "340",
            "When did {S} sell the drum kit?",
            "the drums",
        ),
        Fact(
            1,
            "Went over on my ankle at five-a-side {when}. Heard a pop and everything",
            "Ouch!! What did the physio say?",
            "Bad sprain, no running for four weeks, and I've got one of those enormous grey boots. Very rock and roll.",
            "How long is {S} not allowed to run after spraining {P} ankle?",
            "How many weeks must {S} keep off {P} feet after the football injury?",
            "four weeks",
            "When did {S} hurt {P} ankle?",
            "the ankle",
        ),
        Fact(
            1,
            "I joined a community choir {when}, don't laugh",
            "I would never 😂 what are you singing?",
            "A Georgian folk song, all close harmonies, I'm a bass so I mostly hum one very low note.",
            "What kind of song is {P} community choir learning?",
            "Where does the music {S} sings with the new group come from?",
            "georgian",
            "When did {S} join the choir?",
            "the choir",
        ),
    ),
    updates=(
        Update(
            1,
            (
                "We've booked the wedding! September next year, at Priya's aunt's farm.",
                "Slight change of plan, we moved the wedding to June, the farm had double-booked September.",
            ),
            ("september", "june"),
            "When is {P} wedding now?",
            "Which month will {S} and Priya get married in?",
        ),
        Update(
            0,
            (
                "I've been looking at flats in Bedminster, it's the only place I can afford that isn't a cupboard.",
                "Forget Bedminster! I've signed for a one-bed in Totterdown, on one of the coloured streets.",
            ),
            ("bedminster", "totterdown"),
            "Which part of Bristol is {S} moving to?",
            "Where is {P} new flat?",
        ),
        Update(
            1,
            (
                "Thinking of getting a Fiesta, small and cheap to run.",
                "Test drove the Fiesta, cello didn't fit. Now looking at a Golf.",
                "Ended up with a Skoda estate. Not cool, but the cello goes in flat.",
            ),
            ("fiesta", "golf", "skoda"),
            "What car did {S} buy in the end?",
            "Which motor did {S} end up with?",
        ),
        Update(
            0,
            (
                "Jess and I are planning Crete in May, proper beach holiday.",
                "Crete's off, the flights went mad. We're doing the Lake District instead.",
            ),
            ("crete", "lake district"),
            "Where is {S} going on holiday with Jess?",
            "What's the destination of {P} trip with {P} friend now?",
        ),
    ),
    hops=(
        Hops(
            0,
            (
                "My brother Callum's staying on my sofa for a bit while he sorts himself out.",
                "Callum got a job! Feeding the penguins at the aquarium, he's never been happier.",
            ),
            ("callum", "aquarium"),
            "Where does {P} brother work now?",
            "at the aquarium, feeding the penguins",
        ),
        Hops(
            1,
            (
                "My neighbour Mr Okafor lent me his ladder so I could finally clear the gutters.",
                "Mr Okafor is off to Lagos for three months to see his grandchildren, I'm watering his tomatoes.",
            ),
            ("okafor", "lagos"),
            "Where is the neighbour who lent {S} a ladder going?",
            "Lagos",
        ),
        Hops(
            0,
            (
                "Weekend in Cardiff with the girls, my feet are destroyed from dancing.",
                "Day trip to Bath with Mum, we did the Roman baths and had far too much cake.",
            ),
            ("cardiff", "bath"),
            "Which cities has {S} been away to?",
            "Cardiff and Bath",
            chain=False,
        ),
        Hops(
            1,
            (
                "Started learning the mandolin from videos, my fingertips are in pieces.",
                "Bought a battered accordion at a car boot sale for twenty quid, Priya wants a divorce already.",
            ),
            ("mandolin", "accordion"),
            "Which new instruments has {S} taken up?",
            "the mandolin and an accordion",
            chain=False,
        ),
    ),
    likes=(
        Like(0, ("Lilies make my eyes stream, I'm properly allergic.",), ("lilies",), "Would {S} like lilies?", "no"),
        Like(
            1,
            ("I never learned to swim, I just stand in the shallow end looking brave.",),
            ("swim",),
            "Would {S} enjoy a snorkelling trip?",
            "no",
        ),
        Like(
            0,
            ("Vegetarian since I was twelve, the smell of bacon does nothing for me.",),
            ("vegetarian",),
            "Would {S} want the hog roast at a wedding?",
            "no",
        ),
        Like(
            1,
            (
                "Give me a thunderstorm and a horror film and I'm happy.",
                "Been watching ghost-hunting videos till 2am again.",
            ),
            ("horror", "ghost"),
            "Would {S} enjoy a haunted house tour?",
            "yes",
        ),
    ),
    unraised=(
        ("What is {P} blood type?", ("blood type",)),
        ("Which chess opening does {S} like?", ("chess",)),
        ("What is {P} goldfish called?", ("goldfish",)),
        ("Which marathon has {S} run?", ("marathon",)),
        ("What did {S} name {P} sailing boat?", ("sailing", "boat")),
    ),
    echoes=(
        "My cousin's wedding went on till 2am, I'm too old for that.",
        "Work was chaos today, three cats and a parrot all at once.",
        "Quiz nights are honestly the only reason I leave the house midweek.",
        "Saw a bike locked to the railings with no wheels left, always makes me sad.",
        "The orchestra kids had a bake sale, I bought far too much.",
        "Choir people are intense. Lovely, but intense.",
        "Flat hunting in this city is a full-time job.",
        "Everyone at work seems to be doing a cookery class these days.",
        "There's a lantern making workshop at the library, might go.",
        "My physio is the scariest woman alive.",
    ),
    own=(
        (
            "Had to hold a very angry cat for a nail trim, I have the scratches to prove it.",
            "The practice got a new coffee machine and the vets are fighting over it.",
            "Cycled in along the harbour this morning, it was gorgeous.",
            "Mum's started sending me recipes she finds on Facebook.",
            "We had a litter of kittens in for jabs today, best day ever.",
            "Double shift tomorrow so I'm going to bed at like 8.",
            "My landlord still hasn't fixed the shower, I'm washing in a trickle.",
            "Clifton was heaving today, students everywhere.",
        ),
        (
            "Year eight were feral today. Recorder week, never again.",
            "Marked forty compositions this evening, my ears are bleeding.",
            "Priya's been doing spreadsheets for the seating plan all night.",
            "Leeds has been grey for six days straight.",
            "One of my sixth formers got into the conservatoire, I'm so chuffed.",
            "The photocopier ate my lesson plans again.",
            "Headteacher wants a spring concert. By Easter. Sure.",
            "Priya made a curry so hot I saw colours.",
        ),
    ),
)


# -- Gwen (a baker with a market stall in Hebden Bridge) and Rohan (a software tester in Croydon, a toddler) -------

GWEN_ROHAN = Life(
    "gwen_rohan",
    ("Gwen", "Rohan"),
    (("she", "her"), ("he", "his")),
    dt.date(2025, 1, 13),
    lambda t, text: f"— {t:%A %-d %B %Y} —\n{text}",
    False,
    facts=(
        Fact(
            0,
            "The council's food inspector came round the stall {when}, I was shaking",
            "And?? How did it go?",
            "We got the five-star rating! I've laminated the certificate and stuck it to the till.",
            "What hygiene rating did {P} stall get?",
            "How did the inspection of {P} bread business go?",
            "five-star",
            "When did the inspector visit {P} stall?",
            "the inspection",
        ),
        Fact(
            0,
            "My big oven packed in {when}, right before the Saturday rush",
            "nooo. fixable?",
            "The engineer says it's the thermostat. Part's coming from Germany so I'm baking in batches at my dad's.",
            "Which part of {P} oven broke?",
            "What went wrong with the machine {S} bakes in?",
            "thermostat",
            "When did {P} oven break down?",
            "the oven",
        ),
        Fact(
            0,
            "I finally went to a life drawing class {when}!",
            "Brave! Who was the model?",
            "A retired fireman with the most magnificent moustache, he'd clearly done it for years, very relaxed.",
            "Who posed at the life drawing class {S} went to?",
            "What did the sitter at {P} art session used to do for a living?",
            "fireman",
            "When did {S} go to the life drawing class?",
            "the drawing",
        ),
        Fact(
            0,
            "Dad and I finally scattered Mum's ashes {when}",
            "Oh Gwen. How was it? Where did you go?",
            "Up on Stoodley Pike, where she used to take us for picnics. Windy, of course. It felt right though.",
            "Where did {S} and {P} dad scatter the ashes?",
            "At which landmark did {S} say goodbye to {P} mother?",
            "stoodley",
            "When did {S} scatter {P} mum's ashes?",
            "your dad",
        ),
        Fact(
            0,
            "Won the raffle at the market Christmas do {when}, I never win anything",
            "What did you win?",
            "A year's supply of beans from the roastery on the canal, so I'll be wired until next winter.",
            "What did {S} win in the market raffle?",
            "Which prize did {S} take home from the Christmas draw?",
            "roastery",
            "When did {S} win the raffle?",
            "the raffle",
        ),
        Fact(
            1,
            "Ishan said his first proper sentence {when}!!",
            "Aaah! What was it?",
            "'Daddy, moon is broken.' It was a half moon. Meera and I have not recovered.",
            "What was {P} son's first sentence?",
            "What did {P} toddler say when he first put words together?",
            "moon is broken",
            "When did {P} toddler say his first sentence?",
            "Ishan's chatter",
        ),
        Fact(
            1,
            "Passed the cloud certification {when}, six months of evenings finally over",
            "Knew you would! What did you get?",
            "912 out of 1000, pass mark's 720. I may have done a lap of the kitchen.",
            "What score did {S} get on the certification exam?",
            "How many points did {S} get in the test {S} studied evenings for?",
            "912",
            "When did {S} pass the certification?",
            "the exam",
        ),
        Fact(
            1,
            "We had the boiler replaced {when}, finally hot water that doesn't clank",
            "How much did that set you back?",
            "£2,900 in the end. I nearly fainted, Meera had to hold the card.",
            "How much did {P} new boiler cost?",
            "What did {S} pay to get the heating sorted?",
            "2,900",
            "When was {P} boiler replaced?",
            "the heating",
        ),
        Fact(
            1,
            "I went to the Test match at the Oval {when}, first time in years",
            "Jealous. Good game?",
            "Sat right behind the bowler's arm and watched Root get a hundred. Sunburnt neck, no regrets.",
            "Which batter scored a hundred at the Test match {S} watched?",
            "Who made a century when {S} was at the cricket?",
            "root",
            "When did {S} go to the Test match?",
            "the cricket",
        ),
        Fact(
            1,
            "Meera and I had our first night out since Ishan was born {when}",
            "About time!! Where did you go?",
            "A tiny Sri Lankan place in Tooting, hoppers and devilled prawns. We were home by ten, obviously.",
            "What did {S} and Meera eat on their night out?",
            "What food did {S} and {P} wife have at the restaurant?",
            "hoppers",
            "When did {S} and Meera have their night out?",
            "your night off",
        ),
    ),
    updates=(
        Update(
            0,
            (
                "The market's moving me to the corner by the fountain in spring, better footfall apparently.",
                "Council's changed its mind, they're putting me under the clock tower now.",
            ),
            ("fountain", "clock tower"),
            "Where is {P} stall now?",
            "Which spot at the market has {S} ended up with?",
        ),
        Update(
            1,
            (
                "We've put Ishan down for Little Acorns, the nursery round the corner.",
                "Little Acorns fell through, no places till next year. He's starting at Rainbow House instead.",
            ),
            ("little acorns", "rainbow house"),
            "Which nursery is {P} son going to?",
            "Where will {P} little boy be looked after during the day?",
        ),
        Update(
            0,
            (
                "For my fortieth I'm thinking a big party at the rugby club, everyone invited.",
                "Changed my mind about the party. Just dinner at the Italian with a few people.",
                "Dinner's off, my sister's booked us a cottage in Whitby for the birthday weekend!",
            ),
            ("rugby club", "italian", "whitby"),
            "How is {S} celebrating {P} fortieth?",
            "What's the plan for {P} big birthday now?",
        ),
        Update(
            1,
            (
                "I've applied for team lead, interview's next week.",
                "They gave team lead to Marcus, but offered me automation lead instead. Taking it.",
            ),
            ("team lead", "automation lead"),
            "What role did {S} get in the end?",
            "What is {P} new job title?",
        ),
    ),
    hops=(
        Hops(
            0,
            (
                "My apprentice Kasia shaped thirty loaves this morning without a single one collapsing, she's a"
                " natural.",
                "Kasia's handed in her notice, she's starting nursing school in Leeds in September.",
            ),
            ("kasia", "nursing"),
            "What is {P} apprentice going to study?",
            "nursing",
        ),
        Hops(
            1,
            (
                "My brother-in-law Dev lent us his car seat, lifesaver.",
                "Dev's quit the bank to open a bike repair shop in Brixton.",
            ),
            ("dev", "bike repair"),
            "What kind of shop is {P} brother-in-law opening?",
            "a bike repair shop",
        ),
        Hops(
            0,
            (
                "I've started doing a dark rye loaf on Saturdays, it sold out by ten.",
                "New thing on the stall: focaccia with rosemary and olives. People are queuing for it.",
            ),
            ("rye", "focaccia"),
            "Which new breads has {S} added to the stall?",
            "a rye loaf and focaccia",
            chain=False,
        ),
        Hops(
            1,
            (
                "Took Ishan to Brighton for the day, he tried to eat a pebble.",
                "Long weekend in Norwich at Meera's parents, Ishan now says 'cathedral'.",
            ),
            ("brighton", "norwich"),
            "Where has {S} taken {P} son this year?",
            "Brighton and Norwich",
            chain=False,
        ),
    ),
    likes=(
        Like(
            0,
            ("Up at 3am six days a week, so anything past nine at night and I'm gone.",),
            ("3am",),
            "Would {S} go to a midnight film screening?",
            "no",
        ),
        Like(
            1,
            ("I reread the whole of Tolkien every winter, it's a sickness.",),
            ("tolkien",),
            "Would {S} enjoy visiting the New Zealand film sets?",
            "yes",
        ),
        Like(
            0,
            ("Dogs make me nervous, got bitten as a kid and never got over it.",),
            ("bitten",),
            "Would {S} be happy dog-sitting for a week?",
            "no",
        ),
        Like(
            1,
            ("Since the heart scare I've cut out caffeine completely.",),
            ("caffeine",),
            "Would {S} want an espresso martini?",
            "no",
        ),
    ),
    unraised=(
        ("What is {P} favourite opera?", ("opera",)),
        ("Which golf club does {S} belong to?", ("golf",)),
        ("What is {P} middle name?", ("middle name",)),
        ("What breed is {P} horse?", ("horse",)),
        ("What tattoo did {S} get?", ("tattoo",)),
    ),
    echoes=(
        "A man at the market was handing out leaflets for a food hygiene course, no thanks.",
        "Ovens cost a fortune to run now, my electric bill made me laugh out loud.",
        "Half the stalls were shut because of the wind, eerie.",
        "Forty is creeping up on me, don't remind me.",
        "Nursery drop-off is a contact sport round here.",
        "Everyone at work is obsessed with certifications, it's like collecting stickers.",
        "Boilers, nursery fees, car insurance. Adulthood is just bills.",
        "The cricket's on in the background, I don't even like it.",
        "Meera's cousin had a Sri Lankan feast for her birthday, I'm still full.",
        "Someone at the market asked if I do life drawing, I think they meant portraits of bread?",
    ),
    own=(
        (
            "Sold out of sourdough by eleven, which is a good problem.",
            "Calder Valley is flooding again, the towpath's a river.",
            "Dad came to help on the stall and gave away half the samples.",
            "Hands are cracked to pieces from the cold and the flour.",
            "Tried a new starter, it smells like nail varnish, not a good sign.",
            "A tourist asked if Hebden Bridge was in Scotland.",
            "The dog next to the cheese stall stole a baguette today.",
            "Proving drawer's on the blink, everything takes forever.",
        ),
        (
            "Ishan has decided shoes are optional.",
            "Spent all day chasing a bug that turned out to be a typo in a config file.",
            "The 119 was late again, I've stopped expecting buses.",
            "Meera's working nights this week, so it's me and the small dictator.",
            "Stand-up went on for forty minutes today, which is not how stand-ups work.",
            "Croydon has a new bubble tea place every week.",
            "Ishan threw his porridge at the cat. The cat was not impressed.",
            "Got pulled into another release weekend, send snacks.",
        ),
    ),
)


# -- Beatriz (a translator in Porto) and Olu (a carpenter in Glasgow), climbing partners years ago -----------------


def _iso_line(t: dt.datetime, text: str) -> str:
    return f"{t:%Y-%m-%d %H:%M}\n{text}"


BEATRIZ_OLU = Life(
    "beatriz_olu",
    ("Beatriz", "Olu"),
    (("she", "her"), ("he", "his")),
    dt.date(2024, 11, 4),
    _iso_line,
    True,
    facts=(
        Fact(
            0,
            "Sent off the crime novel translation {when}, 400 pages of murder done",
            "Congrats! Whodunnit? I won't read it anyway",
            "The lighthouse keeper! I guessed on page forty, so the last three hundred were very smug.",
            "Who was the killer in the novel {S} translated?",
            "Who turned out to be the murderer in the book {S} was working on?",
            "lighthouse",
            "When did {S} finish translating the crime novel?",
            "the novel",
        ),
        Fact(
            0,
            "I adopted two rescue hens {when}, I am now a farmer",
            "Amazing. Names?",
            "Fado and Bica. Fado already runs the garden, Bica just follows her and complains.",
            "What did {S} call {P} hens?",
            "What are the names of the birds {S} took in?",
            "fado",
            "When did {S} adopt the hens?",
            "the girls in the garden",
        ),
        Fact(
            0,
            "We threw a surprise party for my grandmother's ninetieth {when}",
            "That's lovely. Was she surprised?",
            "Completely, and then she danced with the priest and announced she wants a motorbike.",
            "Who did {P} grandmother dance with at her party?",
            "Who was {P} grandmother's dance partner at the ninetieth?",
            "priest",
            "When was {P} grandmother's surprise party?",
            "your avó",
        ),
        Fact(
            0,
            "Fell off the top of a problem at the bouldering gym {when}, landed on my face",
            "Ouch, are you okay??",
            "Two stitches in my chin. The nurse said I was her third climber this month.",
            "How many stitches did {S} need after falling at the bouldering gym?",
            "What treatment did {P} face need after the climbing fall?",
            "stitches",
            "When did {S} fall at the bouldering gym?",
            "your chin",
        ),
        Fact(
            0,
            "Gave my talk at the translators' conference in Lisbon {when}",
            "How did it go? What was it on again?",
            "Swearing in subtitles, how much you can keep. The room was packed, people laughed in the right places.",
            "What was {P} talk at the translators' conference about?",
            "What subject did {S} present on in Lisbon?",
            "swearing",
            "When did {S} speak at the conference?",
            "the conference",
        ),
        Fact(
            1,
            "Finished the oak dining table for the couple in Partick {when}",
            "Show me! Did the crack hold?",
            "Eight seats, and I put a walnut butterfly across the crack so it's a feature now. They cried a bit.",
            "Which wood did {S} use to mend the crack in the oak table?",
            "What timber holds the split in the table {S} built together?",
            "walnut",
            "When did {S} finish the dining table?",
            "the table",
        ),
        Fact(
            1,
            "Mum arrived from Lagos {when}, the flat is full of her",
            "Ha, say hi! Did she bring food?",
            "A whole suitcase of dried crayfish and my old school report, which she read aloud at dinner.",
            "What did {P} mother bring in her suitcase?",
            "Which ingredient did {P} mum fly over with?",
            "crayfish",
            "When did {P} mum arrive from Lagos?",
            "your mum's visit",
        ),
        Fact(
            1,
            "Swam in Loch Lomond at dawn {when}, for charity, before you ask",
            "You're insane. How long did you last?",
            "Water was eight degrees. I lasted eleven minutes and couldn't feel my face until lunch.",
            "How long did {S} last in Loch Lomond?",
            "How many minutes did {S} manage in the freezing water?",
            "eleven minutes",
            "When did {S} swim in Loch Lomond?",
            "the swim",
        ),
        Fact(
            1,
            "Lost my wallet at a ceilidh {when}",
            "Classic. Did it turn up?",
            "A fiddler from the band found it in the loo and posted it back with a note saying 'dance better'.",
            "Who found {P} wallet?",
            "Who returned what {S} dropped at the dance?",
            "fiddler",
            "When did {S} lose {P} wallet?",
            "the ceilidh",
        ),
        Fact(
            1,
            "Taught my first woodwork evening class {when}",
            "Mr Teacher! What are they making?",
            "A dovetailed box. Half of them nearly cried, the other half nearly lost a thumb.",
            "What is the first project in {P} woodwork class?",
            "What are {P} evening students building first?",
            "dovetailed",
            "When did {S} teach the first woodwork class?",
            "the class",
        ),
    ),
    updates=(
        Update(
            0,
            (
                "I'll come to Glasgow in March, I've already told work.",
                "March is off, sorry, the publisher moved my deadline. April maybe?",
                "Booked! Arriving 14 May, you'd better have the spare room ready.",
            ),
            ("in march", "april", "14 may"),
            "When is {S} coming to Glasgow now?",
            "What date will {S} arrive for the visit?",
        ),
        Update(
            1,
            (
                "I'm buying a Transit van for the business, finally.",
                "The Transit failed its MOT spectacularly. Got a little Berlingo instead.",
            ),
            ("transit", "berlingo"),
            "What van did {S} end up with?",
            "Which vehicle did {S} get for the business in the end?",
        ),
        Update(
            0,
            (
                "Planning Kalymnos for October with the climbing group, limestone heaven.",
                "Kalymnos got too expensive, we're going to Siurana instead.",
            ),
            ("kalymnos", "siurana"),
            "Where is {P} climbing trip now?",
            "Which crag is {S} heading to with the group?",
        ),
        Update(
            1,
            (
                "Fiona might take the job in Aberdeen, we'd have to move.",
                "Fiona turned Aberdeen down! She's taking the one in Stirling, so we stay put.",
            ),
            ("aberdeen", "stirling"),
            "Where is {P} partner going to work?",
            "In which city did {P} partner accept a job?",
        ),
    ),
    hops=(
        Hops(
            0,
            (
                "My neighbour Dona Amélia brought me caldo verde again, she thinks I don't eat.",
                "Dona Amélia's grandson got picked for the Boavista youth team, she's told the whole street.",
            ),
            ("amélia", "boavista"),
            "Which team does {P} neighbour's grandson play for?",
            "Boavista's youth team",
        ),
        Hops(
            1,
            (
                "My old climbing pal Morag lent me her rope for the weekend, mine's knackered.",
                "Morag's just qualified as a mountain guide! Years of work.",
            ),
            ("morag", "mountain guide"),
            "What has the friend who lent {S} a rope qualified as?",
            "a mountain guide",
        ),
        Hops(
            0,
            (
                "I've started Greek lessons on Tuesday evenings, the alphabet is humbling.",
                "Signed up for a Japanese course online as well, I have a problem.",
            ),
            ("greek", "japanese"),
            "Which languages has {S} started learning?",
            "Greek and Japanese",
            chain=False,
        ),
        Hops(
            1,
            (
                "Climbed on Arran at the weekend, granite slabs and midges.",
                "Two days on Skye in the rain, the Cuillin were in a mood.",
            ),
            ("arran", "skye"),
            "Where has {S} been climbing lately?",
            "Arran and Skye",
            chain=False,
        ),
    ),
    likes=(
        Like(
            0,
            ("Anything below fifteen degrees and I'm miserable, I'm a lizard.",),
            ("fifteen degrees",),
            "Would {S} enjoy a winter in the Highlands?",
            "no",
        ),
        Like(
            1,
            ("I'm a terrible sailor, even the ferry to Millport finishes me.",),
            ("sailor",),
            "Would {S} enjoy a week on a yacht?",
            "no",
        ),
        Like(
            0,
            ("I could eat grilled sardines every day of the year.",),
            ("sardines",),
            "Would {S} enjoy a seafood restaurant by the harbour?",
            "yes",
        ),
        Like(
            1,
            ("I play the piano for an hour every night, it's how I switch off.",),
            ("piano",),
            "Would {S} like tickets to a piano recital?",
            "yes",
        ),
    ),
    unraised=(
        ("What's {P} favourite board game?", ("board game",)),
        ("Which podcast does {S} host?", ("podcast",)),
        ("What instrument did {S} play in the school band?", ("school band",)),
        ("How many cousins does {S} have?", ("cousin",)),
        ("What is {P} star sign?", ("star sign",)),
    ),
    echoes=(
        "The translators' coffee mornings are basically group therapy.",
        "Saw a poster for another ceilidh, no chance I'm dancing again.",
        "The gym's new problems are all crimps, evil.",
        "Every table in this café wobbles, it's a conspiracy.",
        "The hens next door were shouting at dawn again.",
        "Conference season again, everyone's networking at me.",
        "The van insurance renewal came through, I laughed then cried.",
        "My avó keeps asking when I'm getting married.",
        "The loch was like glass this morning, I just looked at it from the car.",
    ),
    own=(
        (
            "Deadline tomorrow and I've translated 'heartbreak' eleven different ways.",
            "The Douro is full of tourists again, I had to walk the long way home.",
            "My publisher sent flowers, which means they want something.",
            "Pastéis de nata for breakfast again, don't judge me.",
            "The tram down to Foz was full of schoolkids singing.",
            "My client wants the manual by Friday. It's Wednesday night.",
            "It rained sideways all day, even the seagulls gave up.",
            "Spent an hour arguing with myself about a comma.",
        ),
        (
            "Planed a door for six hours, my arms are spaghetti.",
            "Glasgow did four seasons before lunch.",
            "The workshop heater died, working in a hat and gloves.",
            "Fiona made a stovies mountain, we'll be eating it till Friday.",
            "A customer wants a bookshelf 'like IKEA but nicer'. Cheers.",
            "Sawdust in my eyebrows again.",
            "Got rained off the crag and went for chips instead.",
            "Sharpened every chisel I own, deeply satisfying.",
        ),
    ),
)

PAIRS = (NADIA_TOM, GWEN_ROHAN, BEATRIZ_OLU)


# -- small talk: composed per message, each chat's own lines mixed in ----------------------------------------------

SHORT = (
    "ha",
    "lol",
    "omg",
    "nooo",
    "same",
    "fair enough",
    "ugh",
    "aww",
    "oh no",
    "nice",
    "wait what",
    "true",
    "classic",
    "ok ok",
    "deal",
    "ooh",
    "yikes",
    "bless",
    "love that",
    "exactly",
    "typical",
    "mood",
    "honestly same",
    "go on then",
    "yesss",
    "hmm",
    "oof",
    "cute",
    "no way",
    "sounds about right",
    "thank god",
    "brilliant",
    "sigh",
    "hahaha",
    "not again",
    "fair",
    "stop it",
    "amazing",
    "tell me about it",
    "oh dear",
)
SHORT_TAILS = ("", "", "!", "!!", " 😂", " 🙈", " x", " haha", "...", " 😭")
PICKS: dict[str, tuple[str, ...]] = {
    "weather": (
        "raining sideways",
        "weirdly warm",
        "grey all day",
        "blowing a gale",
        "freezing",
        "gorgeous",
        "drizzly and miserable",
        "foggy",
        "muggy",
        "bright but bitter",
        "hailing, of all things",
        "that flat white sky",
    ),
    "tv": (
        "a baking show",
        "a documentary about whales",
        "some awful reality thing",
        "an old detective series",
        "a Danish crime drama",
        "a show about people restoring furniture",
        "the snooker",
        "a film about a heist that made no sense",
        "a quiz show with impossible questions",
        "a series about a hospital in the seventies",
        "three episodes of a sitcom I've seen ten times",
        "a programme about tiny houses",
    ),
    "meal": (
        "beans on toast",
        "a giant stir fry",
        "leftover soup",
        "cereal",
        "a curry",
        "a roast",
        "cheese on toast",
        "pasta with whatever was in the fridge",
        "a fish finger sandwich",
        "dhal",
        "a sad salad",
        "chips from the place on the corner",
    ),
    "tired": ("shattered", "running on fumes", "half asleep", "so tired", "wiped out", "a zombie", "knackered"),
    "thing": (
        "the washing",
        "my emails",
        "the kitchen floor",
        "my tax return",
        "the recycling",
        "birthday cards",
        "the dentist",
        "the bathroom",
        "my bank statements",
        "ringing the insurance people",
        "the pile of post by the door",
        "defrosting the freezer",
    ),
    "when": ("all week", "since Monday", "for days", "all afternoon", "since lunch", "for about a fortnight"),
    "feel": (
        "a bit flat",
        "weirdly good",
        "pretty content",
        "restless",
        "ready for bed",
        "all over the place",
        "oddly calm",
        "a bit homesick",
        "more awake than usual",
    ),
    "errand": (
        "the post office",
        "the big supermarket",
        "the chemist",
        "the tip with a car full of cardboard",
        "the hardware shop",
        "the launderette",
        "the garden centre",
        "the optician",
    ),
    "somebody": (
        "a man with a parrot on his shoulder",
        "two kids arguing about dinosaurs",
        "a woman walking three pugs",
        "a busker playing the same song four times",
        "an old couple holding hands",
        "someone in a full suit of armour",
        "a very lost tourist",
        "a toddler having the tantrum of the century",
    ),
    "gripe": (
        "the Wi-Fi keeps dropping",
        "the washing machine sounds like a jet engine",
        "my neighbour is drilling again",
        "the heating only works on one side of the flat",
        "my phone is on 3% permanently",
        "next door's alarm went off at 4am",
        "the fridge has started humming",
        "I've lost my good scissors",
    ),
    "song": (
        "an ABBA song",
        "the theme tune from a kids' show",
        "some advert jingle",
        "a Christmas song, in this weather",
        "a Bowie song",
        "a Spice Girls classic",
    ),
    "person": ("my mum", "my dad", "my sister", "an old school friend", "my neighbour", "my auntie"),
}
MEDIUM = (
    "It's been {weather} here {when}.",
    "Watched {tv} last night and now I can't stop thinking about it.",
    "Had {meal} for tea, living the dream.",
    "I'm {tired} today, no idea why.",
    "I've been putting off {thing} {when}, it's becoming a whole thing.",
    "Feeling {feel} today, not sure why.",
    "Finally did {thing}, I feel like a real adult.",
    "Sat on the sofa with {tv} for three hours, zero regrets.",
    "It's {weather} and I have to go out in it.",
    "Honestly I'm {tired}, it's been a week.",
    "Made {meal} and it was better than it had any right to be.",
    "Just me, {meal} and {tv} tonight.",
    "Went to {errand} and saw {somebody}, which made my day.",
    "Nothing exciting, just {errand} and then {meal}.",
    "Small complaint: {gripe}. That's it, that's the complaint.",
    "Also {gripe} and I'm choosing to ignore it.",
    "Had {song} stuck in my head since I woke up and it's driving me up the wall.",
    "{Person} rang for an hour about nothing, it was lovely actually.",
    "{Person} sent me a voice note that was just coughing, then 'sorry wrong person'.",
    "Spent the whole morning on {thing}, then rewarded myself with {meal}.",
    "The walk back from {errand} was {weather}, my hair is a disaster.",
    "Did you ever watch {tv}? You'd hate it, in a fun way.",
    "I keep meaning to ring {person} and then it's suddenly eleven at night.",
    "Woke up at five for no reason and lay there thinking about {thing}.",
    "I'm {feel} and {tired}, which is a confusing combination.",
    "Saw {somebody} on the way to {errand}, the world is strange.",
    "Treated myself to {meal} because {gripe} and I deserve nice things.",
    "Weekend plan: {thing}, {tv}, absolutely nothing else.",
    "{Person} thinks I should get more sleep, and annoyingly that's fair.",
    "Good mood officially ruined: {gripe}.",
)
ASK_BACK = (
    "How's your week been?",
    "What are you up to this weekend?",
    "How are you doing anyway?",
    "Anything new with you?",
    "You ok?",
    "How's things up there?",
    "Busy week?",
    "What's new?",
)
OPENERS = (
    "hiya!",
    "Hey you!",
    "Morning!",
    "Evening 👋",
    "Oi, you alive?",
    "Hello stranger!",
    "Hi hi!",
    "Quick one:",
    "Right, catch-up time.",
    "Sorry I've been rubbish at replying.",
)
CLOSERS = (
    ("Right, bed. Night!", "Night night x"),
    ("Gotta go, dinner's ready", "Go! Speak soon"),
    ("Ok I need to actually do some work now", "Same, ugh. Later!"),
    ("Talk at the weekend?", "Deal"),
    ("Off to the shops before they shut", "Get me some crisps"),
    ("Phone's about to die, speak soon", "Bye!!"),
)
REACT_GOOD = (
    "That's brilliant!",
    "Ahh I'm so happy for you",
    "Yesss",
    "Love this for you",
    "Oh amazing",
    "Well done you!",
    "That's so good",
)
REACT_SAD = ("Oh no, I'm sorry", "Ugh, that's rubbish", "That sounds awful", "Oh mate", "Sending hugs")
REACT_PLAN = ("Exciting!", "Ooh nice", "Makes sense", "Oh, fair enough", "Good call", "Ha, of course")
AFTER = (
    "Anyway, how are you?",
    "Still can't quite believe it.",
    "It's been a weird few days.",
    "I'll tell you more when I see you.",
    "Life, eh.",
    "So that's my news!",
)
ASK_AFTER = (
    "How's {ref} going?",
    "Any news on {ref}?",
    "How's {ref}?",
    "Update on {ref}?",
    "Still thinking about {ref}?",
)
ANSWER_AFTER = (
    "Oh, fine, nothing new really.",
    "Ha, still going. Slowly.",
    "All good, I'll tell you properly another time.",
    "Don't ask 😂",
    "Better than last week!",
    "Same as ever, honestly.",
)
OWN_TIMES = 3
"""How often a person's everyday line comes back in a chat (people retell their days, not word for word often)."""
PARAGRAPH_OPEN = ("Long day.", "Right, so.", "Ok update.", "Where do I start.", "Honestly what a week.", "Sooo.")
PARAGRAPH_CLOSE = ("Anyway.", "That's all my news.", "Life's glamorous.", "Send help.", "Ha.", "")


# -- time phrases -------------------------------------------------------------------------------------------------


def time_phrase(rng: random.Random, day: dt.date) -> str:
    """A phrase placing news before ``day``."""
    pick = rng.randrange(6)
    if pick == 0:
        return "yesterday"
    if pick == 1:
        return "the day before yesterday"
    if pick == 2:  # two to six days back: unambiguous
        return f"last {WEEKDAYS[(day - dt.timedelta(days=rng.randint(2, 6))).weekday()]}"
    if pick == 3:
        return "last weekend"
    if pick == 4:
        return "a week ago"
    return "last month"


def time_answer(phrase: str, day: dt.date) -> str:
    """What ``phrase`` said on ``day`` points at."""
    if phrase == "yesterday":
        return f"{day - dt.timedelta(days=1):%-d %B %Y}"
    if phrase == "the day before yesterday":
        return f"{day - dt.timedelta(days=2):%-d %B %Y}"
    if phrase == "a week ago":
        return f"{day - dt.timedelta(days=7):%-d %B %Y}"
    if phrase.startswith("last ") and phrase[5:].capitalize() in WEEKDAYS:
        back = (day.weekday() - WEEKDAYS.index(phrase[5:].capitalize())) % 7 or 7
        return f"{day - dt.timedelta(days=back):%-d %B %Y}"
    if phrase == "last weekend":  # the Saturday and Sunday before, Sunday already over
        sunday = day - dt.timedelta(days=(day.weekday() + 1) % 7 or 7)
        return f"the weekend of {sunday - dt.timedelta(days=1):%-d %B} to {sunday:%-d %B %Y}"
    month = day.replace(day=1) - dt.timedelta(days=1)
    return f"{month:%B %Y}"


# -- the writer ---------------------------------------------------------------------------------------------------


@dataclass
class _Scene:
    """What a session holds besides small talk: one part of a story, labelled for the questions."""

    who: int
    write: Callable[[dt.date], None]


@dataclass
class _Writer:
    life: Life
    rng: random.Random
    chat: Conversation = field(init=False)
    evidence: dict[str, int] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    said: set[str] = field(default_factory=set)
    heading: dt.datetime | None = None
    echoes: list[str] = field(default_factory=list)
    own: tuple[list[str], list[str]] = field(default_factory=lambda: ([], []))
    """Each one's everyday lines still to say: each said at most ``OWN_TIMES`` times in a chat."""

    def __post_init__(self) -> None:
        self.chat = Conversation(self.life.name, "friends")
        self.echoes = list(self.life.echoes)
        self.rng.shuffle(self.echoes)
        for who in (0, 1):
            self.own[who].extend(self.life.own[who] * OWN_TIMES)
            self.rng.shuffle(self.own[who])

    def write(self) -> Conversation:
        rng, life = self.rng, self.life
        sessions = rng.randint(27, 33)
        plan: dict[int, list[_Scene]] = {n: [] for n in range(sessions)}
        questions: list[tuple[str, str, tuple[str, ...], str, tuple[str, ...]]] = []

        def spread(scenes: list[_Scene]) -> None:
            """Into distinct sessions, in order."""
            at = sorted(rng.sample(range(sessions), len(scenes)))
            for scene, n in zip(scenes, at, strict=True):
                plan[n].append(scene)

        for n, fact in enumerate(life.facts):
            at = rng.randrange(sessions - 1)
            plan[at].append(_Scene(fact.who, lambda day, f=fact, n=n: self.fact(f, f"f{n}", day)))
            for later in rng.sample(range(at + 1, sessions), min(2, sessions - at - 1)):
                if rng.random() < 0.6:
                    plan[later].append(_Scene(fact.who, lambda day, f=fact: self.ask_after(f)))
            style = fact.same if rng.random() < 0.5 else fact.other
            questions.append(("single_hop", self.ask(style, fact.who), (f"f{n}.d",), fact.answer, (fact.answer,)))
        for n in sorted(rng.sample(range(len(life.facts)), 5)):
            fact = life.facts[n]
            questions.append(("temporal", self.ask(fact.when, fact.who), (f"f{n}.w",), "", ()))
        for n, update in enumerate(life.updates):
            spread(
                [
                    _Scene(update.who, lambda day, u=update, n=n, i=i: self.state(u, f"u{n}.{i}", i))
                    for i in range(len(update.states))
                ]
            )
            last = f"u{n}.{len(update.states) - 1}"
            style = update.same if rng.random() < 0.5 else update.other
            answer = update.values[-1]
            questions.append(("knowledge_update", self.ask(style, update.who), (last,), answer, update.values))
        for n, hops in enumerate(life.hops):
            spread(
                [
                    _Scene(hops.who, lambda day, line=line, label=f"h{n}.{i}", w=hops.who: self.told(w, line, label))
                    for i, line in enumerate(hops.lines)
                ]
            )
            labels = tuple(f"h{n}.{i}" for i in range(len(hops.lines)))
            questions.append(("multi_hop", self.ask(hops.question, hops.who), labels, hops.answer, hops.keys))
        for n, like in enumerate(life.likes):
            spread(
                [
                    _Scene(like.who, lambda day, line=line, label=f"i{n}.{i}", w=like.who: self.told(w, line, label))
                    for i, line in enumerate(like.lines)
                ]
            )
            labels = tuple(f"i{n}.{i}" for i in range(len(like.lines)))
            questions.append(("inference", self.ask(like.question, like.who), labels, like.answer, like.keys))
        for asked, keys in rng.sample(life.unraised, 4):
            questions.append(("unanswerable", self.ask(asked, rng.randrange(2)), (), "", keys))

        when = dt.datetime.combine(life.start, dt.time(rng.randint(7, 22), rng.randrange(60)))
        for number in range(sessions):
            if number:
                day = when.date() + dt.timedelta(days=rng.randint(3, 9))
                when = dt.datetime.combine(day, dt.time(rng.randint(7, 22), rng.randrange(60)))
            self.session(when, plan[number])
        self.chat.questions = [
            Asked(
                text,
                kind,
                tuple(self.evidence[label] for label in labels),
                self.answers[labels[0]] if kind == "temporal" else answer,
                keys,
            )
            for kind, text, labels, answer, keys in questions
        ]
        rng.shuffle(self.chat.questions)
        return self.chat

    def ask(self, template: str, who: int) -> str:
        """A question about ``who``: by name (once, a pronoun after), or by pronoun (each chat is a woman and a
        man)."""
        subject, possessive = self.life.pronouns[who]
        text = template.replace("{S}", "\0S").replace("{P}", "\0P")
        if self.rng.random() < 0.6 and "\0" in text:
            name = self.life.names[who]
            first = text.index("\0")
            text = text[:first] + (name if text[first + 1] == "S" else f"{name}'s") + text[first + 2 :]
        text = text.replace("\0S", subject).replace("\0P", possessive)
        return text[0].upper() + text[1:]

    # -- a session ---------------------------------------------------------------------------------------------

    def session(self, when: dt.datetime, scenes: list[_Scene]) -> None:
        rng = self.rng
        self.heading = when
        start, target = len(self.chat.messages), rng.randint(15, 22)
        first = rng.randrange(2)
        self.say(first, self.compose(lambda: f"{rng.choice(OPENERS)} {self.medium(first)}".strip()))
        self.say(1 - first, self.compose(lambda: self.reply(1 - first)))
        rng.shuffle(scenes)
        for scene in scenes:
            self.small(rng.randint(0, 2))
            scene.write(when.date())
        while len(self.chat.messages) - start < target - 2:
            self.small(1)
        if rng.random() < 0.7:
            bye, back = rng.choice(CLOSERS)
            who = rng.randrange(2)
            self.say(who, self.compose(lambda: bye if bye not in self.said else f"{bye} {self.short()}"))
            self.say(1 - who, self.compose(lambda: back if back not in self.said else f"{back} {self.short()}"))

    def fact(self, fact: Fact, label: str, day: dt.date) -> None:
        """News with a dated phrase, then its detail: asked for, or told at once in a paragraph."""
        rng, who = self.rng, fact.who
        phrase = time_phrase(rng, day)
        self.answers[f"{label}.w"] = time_answer(phrase, day)
        news = fact.news.format(when=phrase)
        if rng.random() < 0.3:  # a paragraph: the day, the news, the detail, more of the day
            before = " ".join(self.medium(who) for _ in range(rng.randint(0, 2)))
            after = " ".join(self.medium(who) for _ in range(rng.randint(1, 2)))
            text = " ".join(p for p in (rng.choice(PARAGRAPH_OPEN), before, f"{news}.", fact.detail, after) if p)
            told = self.say(who, self.compose(lambda: text.replace("..", ".").replace("!.", "!"), once=True))
            self.evidence[f"{label}.w"] = self.evidence[f"{label}.d"] = told
        else:
            self.evidence[f"{label}.w"] = self.say(who, self.compose(lambda: news, once=True))
            self.say(1 - who, self.compose(lambda: fact.ask))
            self.evidence[f"{label}.d"] = self.say(who, self.compose(lambda: fact.detail, once=True))
        self.say(1 - who, self.compose(lambda: rng.choice(REACT_GOOD + REACT_SAD[:1])))
        if rng.random() < 0.5:
            self.say(who, self.compose(lambda: rng.choice(AFTER)))

    def ask_after(self, fact: Fact) -> None:
        """A later session asks after the news: its words, not its detail or its date."""
        who, rng = fact.who, self.rng
        self.say(1 - who, self.compose(lambda: rng.choice(ASK_AFTER).format(ref=fact.ref)))
        self.say(who, self.compose(lambda: rng.choice(ANSWER_AFTER)))

    def state(self, update: Update, label: str, i: int) -> None:
        """A plan (``i`` = 0) or a change to it, and the friend's answer."""
        rng, who = self.rng, update.who
        self.evidence[label] = self.say(who, self.compose(lambda: update.states[i], once=True))
        self.say(1 - who, self.compose(lambda: rng.choice(REACT_PLAN if i == 0 else (*REACT_PLAN, *REACT_SAD))))

    def told(self, who: int, line: str, label: str) -> None:
        """A line of one's life, alone or inside a longer message, and a reply."""
        rng = self.rng
        if rng.random() < 0.3:
            text = f"{self.medium(who)} {line}"
        elif rng.random() < 0.3:
            text = f"{line} {rng.choice(AFTER)}"
        else:
            text = line
        self.evidence[label] = self.say(who, self.compose(lambda: text, once=True))
        self.say(1 - who, self.compose(lambda: self.reply(1 - who)))

    # -- small talk ----------------------------------------------------------------------------------------------

    def small(self, exchanges: int) -> None:
        for _ in range(exchanges):
            self.exchange(self.rng.randrange(2), self.rng.random())

    def exchange(self, who: int, roll: float) -> None:
        """Small talk: an echo of someone's news, a paragraph, a line or a burst of two, and an answer."""
        if roll < 0.12 and self.echoes:
            self.say(who, self.compose(lambda: self.echoes.pop()))
            self.say(1 - who, self.compose(lambda: self.reply(1 - who)))
        elif roll < 0.4:  # a paragraph about the day
            self.say(who, self.compose(lambda: self.paragraph(who)))
            self.say(1 - who, self.compose(lambda: self.reply(1 - who)))
        elif roll < 0.85:
            self.say(who, self.compose(lambda: self.medium(who)))
            self.say(1 - who, self.compose(lambda: self.reply(1 - who)))
        else:  # a burst: two short lines from one, a word back
            self.say(who, self.compose(lambda: self.medium(who)))
            self.say(who, self.compose(self.short))
            self.say(1 - who, self.compose(self.short))

    def short(self) -> str:
        rng = self.rng
        word = rng.choice(SHORT)
        return f"{word.capitalize() if rng.random() < 0.4 else word}{rng.choice(SHORT_TAILS)}"

    def medium(self, who: int) -> str:
        """A line of one's day: one's own life now and then, else composed (one sentence or two)."""
        rng = self.rng
        if rng.random() < 0.2 and self.own[who]:
            return self.own[who].pop()
        sentences = [self.sentence() for _ in range(1 if rng.random() < 0.5 else 2)]
        return " ".join(dict.fromkeys(sentences))

    def sentence(self) -> str:
        rng = self.rng
        slots = {k: rng.choice(v) for k, v in PICKS.items()}
        slots["Person"] = slots["person"][0].upper() + slots["person"][1:]
        return rng.choice(MEDIUM).format(**slots)

    def paragraph(self, who: int) -> str:
        rng = self.rng
        lines, length = [rng.choice(PARAGRAPH_OPEN)], rng.randint(4, 7)
        while len(lines) < length:
            line = self.own[who].pop() if rng.random() < 0.3 and self.own[who] else self.sentence()
            if line not in lines:
                lines.append(line)
        lines.append(rng.choice(PARAGRAPH_CLOSE))
        return " ".join(line for line in lines if line)

    def reply(self, who: int) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.25:
            return self.short()
        if roll < 0.4:
            return f"{self.short()} {rng.choice(ASK_BACK)}"
        if roll < 0.75:
            return f"{self.short()} {self.medium(who)}"
        return self.medium(who)

    def compose(self, write: Callable[[], str], once: bool = False) -> str:
        """A message not said before in this chat: written again until it is new (evidence is never said twice)."""
        for _ in range(40):
            text = write()
            if text not in self.said:
                return text
        assert not once, text
        while text in self.said:
            text = f"{text} {self.short()}"
        return text

    def say(self, who: int, text: str) -> int:
        self.said.add(text)
        name = self.life.names[who]
        content = f"{name}: {text}" if self.life.tagged else text
        if self.heading:
            content, self.heading = self.life.stamp(self.heading, content), None
        message = {"role": "user" if who == 0 else "assistant", "content": content}
        if not self.life.tagged:
            message["name"] = name
        self.chat.messages.append(message)
        return len(self.chat.messages) - 1


def fresh7_conversations(count: int = 3, seed: int = 0) -> list[Conversation]:
    """The first ``count`` chats, written from ``seed`` (the same seed writes the same chats)."""
    return [_Writer(life, random.Random(f"fresh7:{seed}:{life.name}")).write() for life in PAIRS[:count]]


if __name__ == "__main__":  # a look at the data: sizes and kinds
    from collections import Counter

    for chat in fresh7_conversations():
        kinds = Counter(q.kind for q in chat.questions)
        print(chat.name, len(chat.messages), "messages,", dict(kinds))

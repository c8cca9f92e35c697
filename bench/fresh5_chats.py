"""A sixth long-conversation set (``BENCH_DATA=fresh5``), harder in the two ways generated chats are easy.

fresh4's writer named them: the news names rare things the questions repeat word for word, and the small talk is a
stock of lines. Here:

* **Questions in a third person's words.** A question shares at most a person's name with its evidence, most of the
  time: a hypernym ("bird" for "goose"), a paraphrase ("the trip" for "four days in Porto", "relative" for
  "cousin"). Kinds: ``single_hop``; ``multi_hop`` (two facts from two sessions: "what does the man who helped with
  the move do?"); ``temporal`` (the day a message's "yesterday", "on friday", "the tuesday before last", "a
  fortnight ago" points at from its session's stamp); ``counting`` (the same kind of thing told in 2-4 sessions,
  each time in other words); ``latest`` (a value updated over sessions: the last one); ``inference`` ("would X
  likely ...": a stated like or dislike); and three nothing answers (no evidence): ``unanswerable`` (a topic never
  raised), ``missing_detail`` (a raised topic's detail never given), ``wrong_speaker`` (a thing the other one did).
* **Small talk composed per message** from many parts (food, weather, work, family, chores, plans), so a line is
  rarely said twice, and its words (car, dog, sister, trip, hospital, garden, job) are the questions' words too: a
  word of a question appears in many messages, not only in its evidence.
* **Facts arrive as real ones do:** mid-message in a long ramble, split over two or three consecutive messages (all
  of them evidence), or as the answer to the other's question ("yes" + detail).

Three chats (Teodor and Ffion, friends; Amara and her brother Lewin; Baptiste and Yusra, old flatmates), 24-30
sessions over months, each session's first message headed by its date/time stamp (each chat its own format), 400-700
messages a chat, ~32 questions a chat. A seed (``BENCH_FRESH_SEED``) picks which facts each chat holds, who tells
them, in which session and how, and writes the small talk anew.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass

from bench.conversation_data import Conversation
from bench.fresh4_chats import KINDS as FRESH4_KINDS
from bench.fresh4_chats import NOTHING, WEEKDAYS, Asked

KINDS = tuple(kind for kind in FRESH4_KINDS if kind != "callback")
"""fresh4's kinds, the same questions and answers (``Asked``: its ``keys`` are words the evidence holds, across its
messages; ``wrong_speaker``: words only the other person says; ``unanswerable`` and ``missing_detail``: words the
chat never says), but ``callback``. ``NOTHING``: the kinds no evidence answers."""
__all__ = ["KINDS", "NOTHING", "WEEKDAYS", "Asked", "fresh5_conversations"]


@dataclass(frozen=True)
class Fact:
    """A thing told once: ``text`` (``|`` marks where it may be split over consecutive messages) and the question a
    third person would ask of it afterwards ("{X}": the teller's name)."""

    text: str
    question: str
    answer: str
    keys: tuple[str, ...]
    missing: tuple[str, tuple[str, ...]] | None = None
    """A question about a detail of it the chat never gives, and words that detail would need."""


# -- the facts: evidence and questions, in different words ---------------------------------------------------

SINGLE = (
    Fact(
        "we finally collected the goose from Harrow's farm | she's called Duchess and already hates the postman",
        "What kind of bird did {X} take in?",
        "a goose",
        ("goose",),
        ("How much did {X} pay for the bird?", ("quid for duchess", "paid harrow")),
    ),
    Fact(
        "booked four days in Porto for when the clocks change | flights were only forty quid each way",
        "Which city is {X} heading to on the trip?",
        "Porto",
        ("porto",),
        ("Which hotel is {X} staying at on the trip?", ("hotel", "airbnb")),
    ),
    Fact(
        "the boiler packed in so it's cold showers for me until the plumber turns up",
        "What broke down at {X}'s place?",
        "the boiler",
        ("boiler",),
    ),
    Fact(
        "my cousin Raf is marrying a vet from Cork | they met at a wine tasting of all places",
        "What does the person {X}'s relative is engaged to do for a living?",
        "a vet",
        ("vet",),
        ("Where is the wedding of {X}'s relative being held?", ("venue", "ceremony at")),
    ),
    Fact(
        "passed the theory test!! the hazard perception clips nearly finished me off",
        "Which exam did {X} get through?",
        "the driving theory test",
        ("theory",),
    ),
    Fact(
        "signed up for the pottery class at the community hall | first bowl came out looking like an ashtray",
        "What craft is {X} learning?",
        "pottery",
        ("pottery",),
        ("Who teaches {X}'s craft lessons?", ("tutor", "instructor")),
    ),
    Fact(
        "went back about that molar and he says it wants a crown, four hundred quid",
        "What treatment was {X} told a tooth needs?",
        "a crown",
        ("crown",),
    ),
    Fact(
        "swapped the Fiesta for a little electric Zoe | charging it off the neighbour's socket for now",
        "What car does {X} drive now?",
        "an electric Renault Zoe",
        ("zoe",),
    ),
    Fact(
        "started nights at the sorting office, ten till six, the pay's better at least",
        "Which hours is {X} working in the new role?",
        "nights, ten till six",
        ("sorting office",),
    ),
    Fact(
        "Gran turned ninety-one and insisted on hiring a karaoke booth",
        "How did {X}'s grandmother celebrate her birthday?",
        "in a karaoke booth",
        ("karaoke",),
        ("What did {X}'s grandmother sing?", ("she sang", "song")),
    ),
    Fact(
        "I've gone veggie since Lent | cheese is the only thing keeping me sane",
        "What diet did {X} switch to?",
        "vegetarian",
        ("veggie",),
    ),
    Fact(
        "sold the cello to a girl from the youth orchestra, felt like giving away a child",
        "Which instrument did {X} part with?",
        "a cello",
        ("cello",),
        ("How much did {X} get for the instrument?", ("sold it for", "got 300")),
    ),
    Fact(
        "the landlord is putting the flat on the market | so I've got till August to find somewhere",
        "Why does {X} have to move out?",
        "the owner is selling",
        ("on the market",),
    ),
    Fact(
        "went over on my ankle on the stairs at Leila's party, it's purple",
        "How did {X} get injured?",
        "fell on the stairs at a party",
        ("ankle",),
    ),
    Fact(
        "Mum's knee op is booked in at St Anne's for the ninth",
        "Which hospital is {X}'s mother having surgery at?",
        "St Anne's",
        ("st anne",),
    ),
    Fact(
        "the allotment lot gave us plot 14 | right next to the compost heaps, lovely",
        "Which patch of land was {X} allocated to grow veg on?",
        "plot 14",
        ("plot 14",),
    ),
    Fact(
        "took up bouldering at the old mill on Canal Street, my forearms are wrecked",
        "Where does {X} go climbing?",
        "the old mill on Canal Street",
        ("bouldering",),
    ),
    Fact(
        "our Ellie's first wobbly one came out in a toffee apple, she was thrilled",
        "What was {X}'s daughter eating when she lost a tooth?",
        "a toffee apple",
        ("toffee apple",),
    ),
    Fact(
        "the book lot picked Middlemarch | I'm already three chapters behind",
        "Which novel is {X}'s reading group on?",
        "Middlemarch",
        ("middlemarch",),
    ),
    Fact(
        "got the keys to our new office in Deptford | it smells of curry from the place downstairs",
        "Where did {X}'s workplace relocate to?",
        "Deptford",
        ("deptford",),
    ),
    Fact(
        "entered the Cardiff half in October, thirteen miles of hills apparently",
        "Which race is {X} training for?",
        "the Cardiff half marathon",
        ("cardiff half",),
        ("What finishing time is {X} aiming for?", ("target time", "under two hours")),
    ),
    Fact(
        "my brother's band got a slot at the Crescent, first proper gig",
        "Where is {X}'s sibling performing?",
        "the Crescent",
        ("crescent",),
    ),
    Fact(
        "we adopted a greyhound from the rescue in Hove | called Biscuit, sleeps twenty hours a day",
        "What breed of dog does {X} have?",
        "a greyhound",
        ("greyhound",),
        ("How old is {X}'s dog?", ("years old", "months old")),
    ),
    Fact(
        "finally cleared the student loan, the last nine hundred in one go",
        "What debt did {X} pay off?",
        "the student loan",
        ("student loan",),
    ),
)

MULTI = (  # the first part in an earlier session, the second later; the question needs both
    (
        Fact("Colm let me borrow his van to shift everything into the new flat", "", "", ("colm",)),
        Fact("Colm's a tree surgeon, he was up an oak all afternoon", "", "", ("tree surgeon",)),
        "What does the man who lent {X} a vehicle for the house move do for work?",
        "a tree surgeon",
    ),
    (
        Fact("my sister's seeing a guy called Ashok now", "", "", ("ashok",)),
        Fact("Ashok plays bass in a wedding covers band apparently", "", "", ("bass",)),
        "What instrument does {X}'s sibling's boyfriend play?",
        "bass",
    ),
    (
        Fact("the new manager, Priscilla, used to be at Boots", "", "", ("priscilla",)),
        Fact("Priscilla has handed me the Leeds account, no pressure", "", "", ("leeds account",)),
        "Which client did {X}'s boss give them?",
        "the Leeds account",
    ),
    (
        Fact("our Theo starts at Greenbank Primary in the autumn", "", "", ("greenbank",)),
        Fact("Greenbank closed for a week with norovirus, the whole place was sick", "", "", ("norovirus",)),
        "Why did {X}'s son miss a week of lessons?",
        "a norovirus outbreak shut it",
    ),
    (
        Fact("the cat came from my aunt Bev originally", "", "", ("bev",)),
        Fact("Bev is selling up and moving to Alicante", "", "", ("alicante",)),
        "Where is the relative who gave {X} their pet relocating to?",
        "Alicante",
    ),
    (
        Fact("doing the Three Peaks with Jonah's lot, he's organising it", "", "", ("jonah",)),
        Fact("Jonah's out, his back went lifting a sofa", "", "", ("his back",)),
        "Why did the friend planning {X}'s hiking challenge drop out?",
        "he hurt his back",
    ),
    (
        Fact("the place I keep raving about is Ferro, the Sicilian one by the canal", "", "", ("ferro",)),
        Fact("Ferro got a Michelin mention!! can't get a table now", "", "", ("michelin",)),
        "What recognition did {X}'s favourite restaurant receive?",
        "a Michelin mention",
    ),
    (
        Fact("my new flatmate Gus works at the aquarium", "", "", ("gus",)),
        Fact("Gus brought home a lobster the tanks rejected, it's in the bath", "", "", ("lobster",)),
        "What creature did {X}'s housemate bring back?",
        "a lobster",
    ),
)

TEMPORAL = (  # "{when}": a relative phrase the writer picks; the question asks for the day
    ("{when} I finally got the cast off my wrist", "When did {X}'s arm come out of plaster?", ("cast off",)),
    (
        "we viewed that terrace on Elm Row {when} and put an offer in",
        "When did {X} look round the property?",
        ("elm row",),
    ),
    (
        "some idiot clipped my wing mirror in the Lidl car park {when}",
        "When was {X}'s vehicle damaged?",
        ("wing mirror",),
    ),
    (
        "the interview at the council was {when}, a panel of four",
        "When was {X} questioned for the post?",
        ("panel of four",),
    ),
    ("Dad had his pacemaker fitted {when}", "When did {X}'s father have heart surgery?", ("pacemaker",)),
    ("we scattered Nan's ashes off the pier {when}", "When was the memorial for {X}'s grandmother?", ("ashes",)),
    ("did my first ever parkrun {when}, 31 minutes", "When did {X} debut at the weekly timed 5k?", ("parkrun",)),
    ("the citizenship letter came {when}", "When did {X} hear back about naturalisation?", ("citizenship",)),
    (
        "the kitchen fitters finally finished {when}",
        "When did the renovation at {X}'s place wrap up?",
        ("kitchen fitters",),
    ),
    ("I handed my notice in {when}", "When did {X} resign?", ("notice in",)),
)

COUNTING = (  # told in 2-4 sessions, in other words each time
    (
        "How many appointments for the injured leg did {X} mention?",
        (
            "physio again, she's merciless",
            "another session with the physio, calf is jelly",
            "the physio says two more and I'm done",
            "physio had me hopping on one foot for forty minutes",
        ),
        ("physio",),
    ),
    (
        "How many films did {X} see on the big screen?",
        (
            "saw Dune at the Everyman, the sound was insane",
            "got dragged to the new Pixar at the Odeon",
            "went to that Korean thriller at the Picturehouse",
            "the Hitchcock rerun at the Curzon was packed",
        ),
        ("at the",),
    ),
    (
        "How many cakes did {X} describe making?",
        (
            "made a lemon drizzle for Kath's leaving do",
            "did a coffee and walnut for Dad's seventieth",
            "knocked up a banana loaf, mostly for the freezer",
            "attempted a Victoria sponge, it sank",
        ),
        ("made", "did", "knocked", "attempted"),
    ),
    (
        "How many positions did {X} apply for?",
        (
            "sent the form off for the Network Rail role",
            "applied to the museum for the archivist post",
            "put in for the planning officer vacancy",
            "CV's gone off for that charity fundraiser role",
        ),
        ("role", "post", "vacancy"),
    ),
)

LATEST = (  # the values in order over sessions; the question asks for the last
    (
        "rent is going up to {v} a month from the spring",
        "What is {X}'s monthly housing payment now?",
        ("650", "720", "795"),
    ),
    (
        "my 5k best is {v} now",
        "What's {X}'s personal record over that running distance now?",
        ("29:40", "27:55", "26:31"),
    ),
    ("the choir's up to {v} singers", "How big is {X}'s vocal group these days?", ("12", "17", "23")),
    (
        "got {v} saved towards the deposit",
        "How much has {X} put aside for buying a home so far?",
        ("£4,000", "£6,500", "£9,200"),
    ),
    ("that's book {v} of the year done", "What's {X}'s running total of novels read now?", ("7", "11", "15")),
)

INFERENCE = (
    (
        "can't stand boats, I was green the whole ferry to Arran",
        "Would {X} likely say yes to a sailing holiday?",
        "no",
        ("ferry",),
    ),
    (
        "anything with coriander tastes like soap to me",
        "Would {X} probably enjoy a curry loaded with fresh herbs?",
        "no",
        ("coriander",),
    ),
    ("I could listen to Nina Simone all day", "Would {X} enjoy an evening of jazz vocals?", "yes", ("nina simone",)),
    (
        "heights are my nightmare, I couldn't even stand on the glass floor at the tower",
        "Would {X} likely go skydiving?",
        "no",
        ("glass floor",),
    ),
    (
        "horror is the only genre I'll pay full price at the pictures for",
        "Would {X} be up for a scary movie marathon?",
        "yes",
        ("horror",),
    ),
    (
        "I'm allergic to cats, my eyes swell shut",
        "Would {X} be comfortable staying somewhere with two kittens?",
        "no",
        ("allergic",),
    ),
)

UNRAISED = (  # topics no chat raises
    ("Which football club does {X} support?", ("football",)),
    ("What did {X} dress up as for Halloween?", ("halloween", "costume")),
    ("Which university did {X} go to?", ("university", "degree")),
    ("What's {X}'s star sign?", ("star sign", "horoscope")),
    ("Which language is {X} learning on the app?", ("duolingo", "spanish")),
    ("What kind of tattoo did {X} get?", ("tattoo",)),
)


# -- the small talk: composed per message from many parts -----------------------------------------------------

FOOD = (
    "leftover lasagne",
    "beans on toast",
    "a massive curry",
    "soup",
    "noodles",
    "fish fingers",
    "a jacket potato",
    "porridge",
    "pizza",
    "halloumi wraps",
    "a roast",
    "chips",
    "cheese on toast",
    "stir fry",
    "a pie",
    "toast",
    "a kebab",
    "risotto",
    "pasta bake",
    "dal",
    "shepherd's pie",
    "a salad nobody wanted",
    "tacos",
    "ramen",
)
EATING = (
    "had {f} for tea",
    "living on {f}",
    "made {f} and burnt it",
    "craving {f}",
    "just ate {f} standing up",
    "the kids only eat {f}",
    "{f} again, no shame",
    "ordered {f}, don't judge",
)
WEATHER = (
    "it's chucking it down",
    "grey again",
    "weirdly warm for the time of year",
    "freezing here",
    "blowing a gale",
    "muggy and horrible",
    "sunny for once",
    "foggy, can't see the end of the road",
    "hail, actual hail",
    "drizzle all day",
    "the heating's on already",
)
PEOPLE = (
    "my sister",
    "mum",
    "dad",
    "my brother",
    "my aunt",
    "the kids",
    "my cousin",
    "gran",
    "the neighbour",
    "my boss",
    "a colleague",
    "the landlord",
    "my mate from school",
    "our dog walker",
    "my partner",
)
ABOUT = (
    "the car",
    "christmas",
    "the dog",
    "a hospital appointment",
    "their trip",
    "the garden",
    "exam results",
    "the house",
    "some bird in the garden",
    "money",
    "the wedding",
    "the bins",
    "work stuff",
    "a parcel",
    "their new job",
    "the holiday",
    "the cat",
    "the school run",
    "a leak",
    "the bill",
    "the flat",
    "a birthday",
    "the doctor",
    "a race",
)
PEOPLE_DO = (
    "{p} rang about {a}",
    "{p} won't stop going on about {a}",
    "{p} asked me about {a}",
    "{p} is stressing over {a}",
    "{p} sent me a voice note about {a}",
    "had a row with {p} about {a}",
    "{p} came round to moan about {a}",
    "{p} needs help with {a}",
)
WORK = (
    "work was {w}",
    "the job is {w}",
    "meetings were {w}",
    "the office is {w}",
    "my shift was {w}",
    "the new system at work is {w}",
    "the commute was {w}",
    "the boss was {w}",
)
HOW = (
    "a nightmare",
    "fine actually",
    "dead boring",
    "chaos",
    "long",
    "alright",
    "a lot",
    "grim",
    "weirdly calm",
    "manic",
    "exhausting",
    "not terrible",
)
CHORES = (
    "need to sort the washing",
    "have to ring the bank",
    "must book the car in",
    "should walk the dog",
    "the oven needs cleaning",
    "the grass needs cutting",
    "got to return a parcel",
    "need to renew the insurance",
    "have to fix the bike",
    "meant to be decluttering",
    "must ring the doctor",
    "need to tidy the garden",
    "should pay the bill",
    "need new shoes",
    "have to book a train",
    "need to fill the car up",
)
FEEL = (
    "I'm shattered",
    "I'm so tired",
    "feeling a bit rough",
    "in a good mood weirdly",
    "my back aches",
    "I've got a cold coming",
    "can't sleep lately",
    "I'm buzzing",
    "a bit fed up",
    "running on coffee",
)
PLANS = (
    "thinking of a trip somewhere cheap",
    "might go to the pictures",
    "fancy a walk by the river",
    "want to get the bike out",
    "should see my family soon",
    "might paint the hall",
    "could do with a holiday",
    "want to try that new cafe",
    "might go swimming",
    "fancy a curry out",
    "planning a big shop",
)
SEEN = (
    "saw a fox in the garden",
    "a bird flew into the kitchen window",
    "the dog next door got out again",
    "someone parked across the drive",
    "the bus was rammed",
    "a car alarm went off for an hour",
    "the train was cancelled",
    "the shop had run out of milk",
    "found a tenner in my coat",
)
TOPICS = (
    "a new car",
    "the vehicle tax",
    "a novel I can't get into",
    "my grandmother's old house",
    "a relative's wedding",
    "the group chat",
    "a film everyone's seen but me",
    "a big client at work",
    "the move",
    "an injured pigeon",
    "my tooth",
    "a restaurant booking",
    "the pet insurance",
    "my father's birthday",
    "mother's day",
    "the home insurance",
    "a hospital parking fine",
    "my son's homework",
    "our daughter's party",
    "the boss's leaving do",
    "an exam I have to sit",
    "the city centre roadworks",
    "an instrument I'll never play",
    "the diet",
    "a race for charity",
    "the training at work",
    "the job hunt",
    "my hours",
    "the new role",
    "an evening class",
    "swimming lessons",
    "a bird on the roof",
    "a birthday cake",
    "an appointment",
    "my leg",
    "the big screen in the pub",
    "the housing costs",
    "a record shop closing",
    "the holiday",
    "a sibling row",
    "the mortgage",
    "the trip",
    "surgery waiting lists",
    "reading glasses",
    "my running shoes",
    "the hiking boots",
    "a creature in the shed",
    "my housemate's cooking",
    "my favourite mug",
    "the weekly shop",
    "the renovation next door",
    "the heart rate thing on my watch",
    "the damaged fence",
    "the record temperatures",
    "a memorial bench",
    "staying in",
    "my personal trainer",
    "the distance to the station",
    "a client who never pays",
    "the music group at church",
    "my family's place",
    "the kids' friend's mum",
    "the man from the council",
    "a movie night",
    "a position going at work",
    "how to apply for a passport",
    "the climbing frame in the park",
    "the monthly bills",
    "a payment that bounced",
    "the scary bit of the news",
    "my notice period",
    "the property prices",
    "the bus to the city",
    "a class the kids want",
    "my sister's daughter",
    "the exam season",
    "the breed of dog next door",
    "a hiking trip",
    "a friend's new job",
    "the vocal warm-ups at choir practice",
    "the marathon on telly",
    "my mother's hip",
    "the hospital food",
    "a holiday in the sun",
)
TOPICAL = (
    "{p} keeps on about {t}",
    "can't stop thinking about {t}",
    "{t} is doing my head in",
    "spent ages on {t}",
    "still haven't sorted {t}",
    "had a long chat with {p} about {t}",
    "{t}, don't ask",
    "been reading up on {t}",
    "{p} sent a photo of {t}",
    "so much faff with {t}",
    "{t} again, honestly",
)
OTHERS = (  # other people's news, of the same sorts as the facts: near misses for a question
    "{p} just got {g}",
    "{p} is off to {c} soon",
    "{p} has taken up {h}",
    "{p} had {o}",
    "{p} is thinking of getting {g}",
    "{p} went to {c} and loved it",
    "{p} is doing {h} now, who knew",
    "{p} is waiting on {o}",
)
GOT = (
    "a parrot",
    "chickens",
    "a rescue cat",
    "a hatchback",
    "a campervan",
    "a keyboard",
    "a puppy",
    "two rabbits",
    "a tortoise",
    "a van",
    "a motorbike",
    "ducks",
    "a cockapoo",
    "a second-hand piano",
    "a hamster",
    "an allotment shed",
)
CITIES = (
    "Lisbon",
    "Krakow",
    "the Lakes",
    "Cornwall",
    "Seville",
    "Bruges",
    "Berlin",
    "Skye",
    "Valencia",
    "Prague",
    "Dublin",
    "Rome",
    "Snowdonia",
    "Marrakech",
    "Copenhagen",
)
HOBBIES = (
    "salsa",
    "knitting",
    "rowing",
    "life drawing",
    "archery",
    "open water swimming",
    "the ukulele",
    "chess",
    "cycling",
    "yoga",
    "rock climbing",
    "baking bread",
    "choir",
    "five-a-side",
    "watercolours",
    "birdwatching",
)
OPS = (
    "a hip replacement",
    "a filling",
    "a scan on her knee",
    "stitches in his hand",
    "a cataract done",
    "an MRI",
    "a tooth out",
    "a cast on his arm",
    "blood tests",
    "a heart check-up",
    "keyhole surgery",
)
PARTS = (EATING, WEATHER, PEOPLE_DO, WORK, CHORES, FEEL, PLANS, SEEN, TOPICAL, TOPICAL, TOPICAL, OTHERS, OTHERS)
LEAD = ("", "", "", "ok so ", "honestly ", "ugh ", "right so ", "lol ", "well ", "mm ", "tbh ", "anyway ")
TAIL = ("", "", "", " haha", " x", " lol", " ugh", " tbh", " anyway", " 🙃", " ffs", "!!")
REPLY = (
    "ha",
    "oh no",
    "nice",
    "same",
    "ugh",
    "lol",
    "fair",
    "yikes",
    "aw",
    "ooh",
    "ha, classic",
    "oh god",
    "mood",
    "ok",
    "brilliant",
    "no way",
    "good good",
)
ASK_BACK = (
    "how's {a} going",
    "what about {a}",
    "any news on {a}",
    "did you sort {a}",
    "how's your {r}",
    "how's work",
    "what are you up to",
)
RELATION = ("mum", "dad", "sister", "brother", "back", "week", "job", "garden", "car", "dog")
PROMPT = (
    "did anything come of that thing you mentioned?",
    "any news your end?",
    "so? did it happen?",
    "go on, anything exciting?",
    "did you end up doing it then?",
    "you said you had news?",
)
YES = ("yes! ", "yeah, ", "yes actually, ", "yep, ", "yes, ", "ha yes, ")
OPEN = ("hey", "hiya", "hello you", "morning", "evening", "oi", "hey stranger", "you about?", "hi hi")
CLOSE = (
    "right, off to bed",
    "gotta go, speak soon",
    "dinner's ready, later",
    "ok going, x",
    "off out, bye",
    "talk later",
    "need to crash, night",
)

BANNED = ("yesterday", "today", "tonight", "fortnight", "week ago", "before last", *WEEKDAYS)
"""Words that place a day: only temporal evidence says them, so a time question's day is its evidence's own."""


def _clause(rng: random.Random) -> str:
    """One piece of small talk: a template from a random part, its slots filled."""
    text = rng.choice(rng.choice(PARTS))
    return text.format(
        f=rng.choice(FOOD),
        p=rng.choice(PEOPLE),
        a=rng.choice(ABOUT),
        w=rng.choice(HOW),
        t=rng.choice(TOPICS),
        g=rng.choice(GOT),
        c=rng.choice(CITIES),
        h=rng.choice(HOBBIES),
        o=rng.choice(OPS),
    )


def chatter(rng: random.Random, clauses: int) -> str:
    """A message of small talk: ``clauses`` pieces run together as typed, a lead and a tail."""
    said: list[str] = []
    while len(said) < clauses:  # no piece twice in a message
        if (piece := _clause(rng)) not in said:
            said.append(piece)
    joins = [rng.choice((", ", ". ", " and ", ", also ", "... ")) for _ in said[1:]]
    body = said[0] + "".join(j + s for j, s in zip(joins, said[1:], strict=True))
    return rng.choice(LEAD) + body + rng.choice(TAIL)


def reply(rng: random.Random) -> str:
    """A short answer, now and then with a question back or a thing of one's own."""
    roll = rng.random()
    if roll < 0.35:
        return rng.choice(REPLY)
    if roll < 0.6:
        asked = rng.choice(ASK_BACK).format(a=rng.choice(ABOUT), r=rng.choice(RELATION))
        return f"{rng.choice(REPLY)}. {asked}?"
    return f"{rng.choice(REPLY)}, {chatter(rng, rng.randint(1, 5))}"


# -- the pairs and their stamps ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    name: str
    names: tuple[str, str]
    stamp: Callable[[dt.datetime], str]
    start: dt.date


PAIRS = (
    Pair("teodor_ffion", ("Teodor", "Ffion"), lambda t: f"[{t:%Y-%m-%d %H:%M}]", dt.date(2023, 9, 4)),
    Pair("amara_lewin", ("Amara", "Lewin"), lambda t: f"--- {t:%a %d %b %Y, %H:%M} ---", dt.date(2024, 1, 15)),
    Pair("baptiste_yusra", ("Baptiste", "Yusra"), lambda t: f"{t:%d/%m/%Y} at {t:%H:%M}", dt.date(2024, 4, 2)),
)


def fresh5_conversations(count: int = 3, seed: int = 0) -> list[Conversation]:
    """The first ``count`` chats, written from ``seed`` (the same seed writes the same chats)."""
    return [_Writer(pair, random.Random(f"fresh5:{seed}:{pair.name}")).write() for pair in PAIRS[:count]]


def when_phrase(rng: random.Random, day: dt.date) -> tuple[str, dt.date]:
    """A phrase placing an event before ``day``, and the day it places it on."""
    pick = rng.randrange(6)
    if pick == 0:
        return "yesterday", day - dt.timedelta(days=1)
    if pick == 1:
        return "the day before yesterday", day - dt.timedelta(days=2)
    if pick == 2:
        return "a fortnight ago", day - dt.timedelta(days=14)
    if pick == 3:
        return "a week ago", day - dt.timedelta(days=7)
    back = rng.randint(2, 6)
    then = day - dt.timedelta(days=back)
    name = WEEKDAYS[then.weekday()]
    if pick == 4:
        return f"on {name}", then
    return f"the {name} before last", then - dt.timedelta(days=7)


@dataclass
class _Told:
    """A fact waiting for its session: who tells it, its text and a label for the question."""

    who: int
    text: str
    label: str
    when: bool = False
    """Its text has "{when}": placed in time from the session's day."""
    keys: tuple[str, ...] = ()
    """Told over several messages, the ones holding these words are its evidence (the rest is said around it)."""


class _Writer:
    """Writes one pair's chat: sessions of composed small talk with the facts told in them."""

    def __init__(self, pair: Pair, rng: random.Random) -> None:
        self.pair, self.rng = pair, rng
        self.chat = Conversation(pair.name, "friends")
        self.evidence: dict[str, list[int]] = {}
        self.days: dict[str, dt.date] = {}
        self.heading = ""

    def write(self) -> Conversation:
        rng = self.rng
        sessions = rng.randint(24, 30)
        plan: dict[int, list[_Told]] = {}
        questions: list[tuple[str, str, tuple[str, ...], str, tuple[str, ...]]] = []

        def place(told: _Told, session: int) -> None:
            plan.setdefault(session, []).append(told)

        def spread(n: int) -> list[int]:
            return sorted(rng.sample(range(1, sessions), n))

        singles = rng.sample(SINGLE, 11)
        for n, fact in enumerate(singles):
            who = rng.randrange(2)
            name, other = self.pair.names[who], self.pair.names[1 - who]
            place(_Told(who, fact.text, f"s{n}", keys=fact.keys), rng.randrange(sessions))
            if n < 9:
                questions.append(("single_hop", fact.question.format(X=name), (f"s{n}",), fact.answer, fact.keys))
            else:  # asked of the other one, who never said it
                questions.append(("wrong_speaker", fact.question.format(X=other), (), "", fact.keys))
        missing = [(f, n) for n, f in enumerate(singles[:9]) if f.missing]
        for fact, n in rng.sample(missing, min(2, len(missing))):
            teller = self.pair.names[next(t.who for s in plan.values() for t in s if t.label == f"s{n}")]
            assert fact.missing
            questions.append(("missing_detail", fact.missing[0].format(X=teller), (), "", fact.missing[1]))
        for n, (first, second, asked, answer) in enumerate(rng.sample(MULTI, 4)):
            who = rng.randrange(2)
            a, b = spread(2)
            place(_Told(who, first.text, f"m{n}a"), a)
            place(_Told(who, second.text, f"m{n}b"), b)
            keys = (*first.keys, *second.keys)
            questions.append(("multi_hop", asked.format(X=self.pair.names[who]), (f"m{n}a", f"m{n}b"), answer, keys))
        for n, (text, asked, keys) in enumerate(rng.sample(TEMPORAL, 4)):
            who = rng.randrange(2)
            place(_Told(who, text, f"t{n}", when=True), rng.randrange(1, sessions))
            questions.append(("temporal", asked.format(X=self.pair.names[who]), (f"t{n}",), "", keys))
        for n, (asked, lines, keys) in enumerate(rng.sample(COUNTING, 3)):
            who, times = rng.randrange(2), rng.randint(2, 4)
            labels = tuple(f"c{n}.{i}" for i in range(times))
            for label, line, at in zip(labels, rng.sample(lines, times), spread(times), strict=True):
                place(_Told(who, line, label), at)
            questions.append(("counting", asked.format(X=self.pair.names[who]), labels, str(times), keys))
        for n, (text, asked, values) in enumerate(rng.sample(LATEST, 3)):
            who = rng.randrange(2)
            for i, (value, at) in enumerate(zip(values, spread(3), strict=True)):
                place(_Told(who, text.format(v=value), f"l{n}.{i}"), at)
            questions.append(("latest", asked.format(X=self.pair.names[who]), (f"l{n}.2",), values[-1], (values[-1],)))
        for n, (text, asked, answer, keys) in enumerate(rng.sample(INFERENCE, 3)):
            who = rng.randrange(2)
            place(_Told(who, text, f"i{n}"), rng.randrange(sessions))
            questions.append(("inference", asked.format(X=self.pair.names[who]), (f"i{n}",), answer, keys))
        for asked, keys in rng.sample(UNRAISED, 2):
            questions.append(("unanswerable", asked.format(X=rng.choice(self.pair.names)), (), "", keys))

        when = dt.datetime.combine(self.pair.start, dt.time(rng.randint(8, 22), rng.randrange(60)))
        for number in range(sessions):
            if number:
                days = rng.choice((1, 2, 3, 4, 5, 6, 7, 9, 12))
                when = dt.datetime.combine(
                    when.date() + dt.timedelta(days=days), dt.time(rng.randint(8, 22), rng.randrange(60))
                )
            self.session(when, plan.get(number, []))
        self.chat.questions = [self.question(*q) for q in questions]
        rng.shuffle(self.chat.questions)
        return self.chat

    def question(self, kind: str, text: str, labels: tuple[str, ...], answer: str, keys: tuple[str, ...]) -> Asked:
        evidence = tuple(i for label in labels for i in self.evidence[label])
        if kind == "temporal":
            answer = f"{self.days[labels[0]]:%-d %B %Y}"
        return Asked(text, kind, evidence, answer=answer, keys=keys)

    # -- a session ---------------------------------------------------------------------------------------------

    def session(self, when: dt.datetime, told: list[_Told]) -> None:
        rng = self.rng
        self.heading = self.pair.stamp(when)
        start, target = len(self.chat.messages), rng.randint(15, 23)
        first = rng.randrange(2)
        self.say(first, rng.choice(OPEN) if rng.random() < 0.6 else chatter(rng, rng.randint(1, 2)))
        self.say(1 - first, reply(rng))
        rng.shuffle(told)
        for fact in told:
            for _ in range(rng.randint(1, 3)):
                self.small()
            self.tell(fact, when.date())
        while len(self.chat.messages) - start < target:
            self.small()
        if rng.random() < 0.7:
            who = rng.randrange(2)
            self.say(who, rng.choice(CLOSE))
            self.say(1 - who, rng.choice(REPLY))

    def small(self) -> None:
        """A message of small talk and its answer, now and then a long ramble or a burst of two."""
        rng = self.rng
        who = rng.randrange(2)
        roll = rng.random()
        if roll < 0.2:
            self.say(who, chatter(rng, rng.randint(9, 18)))
        elif roll < 0.35:
            self.say(who, chatter(rng, rng.randint(1, 4)))
            self.say(who, chatter(rng, rng.randint(1, 4)))
        else:
            self.say(who, chatter(rng, rng.choice((1, 2, 3, 4, 5, 6, 7, 8, 9, 10))))
        self.say(1 - who, reply(rng))

    def tell(self, fact: _Told, day: dt.date) -> None:
        """A fact said plainly, mid-ramble, over consecutive messages, or as the answer to the other's question."""
        rng = self.rng
        text = fact.text
        if fact.when:
            phrase, self.days[fact.label] = when_phrase(rng, day)
            text = text.format(when=phrase)
        parts = [p.strip() for p in text.split("|")]
        how = rng.choice(
            ("split", "split", "answer", "ramble", "ramble", "plain")
            if len(parts) > 1
            else ("answer", "ramble", "ramble", "plain", "plain")
        )
        if how == "split":  # over consecutive messages
            said = [(self.say(fact.who, part), part.lower()) for part in parts]
            self.evidence[fact.label] = [at for at, part in said if any(k in part for k in fact.keys)]
        elif how == "answer":  # asked for first: "yes" and the detail
            self.say(1 - fact.who, rng.choice(PROMPT))
            self.evidence[fact.label] = [self.say(fact.who, rng.choice(YES) + ", ".join(parts))]
        elif how == "ramble":  # mid-message in a long one
            before, after = chatter(rng, rng.randint(3, 8)), chatter(rng, rng.randint(3, 8))
            self.evidence[fact.label] = [self.say(fact.who, f"{before}. oh and {', '.join(parts)}. {after}")]
        else:
            self.evidence[fact.label] = [self.say(fact.who, ", ".join(parts))]
        self.say(1 - fact.who, reply(rng))

    def say(self, who: int, text: str) -> int:
        content = f"{self.pair.names[who]}: {text}"
        if self.heading:  # a session's first message carries its stamp
            content, self.heading = f"{self.heading}\n{content}", ""
        self.chat.messages.append({"role": "user" if who == 0 else "assistant", "content": content})
        return len(self.chat.messages) - 1

"""A fifth held-out set of long chats (``BENCH_DATA=fresh4``), written apart from recall and the other sets' phrasing.

What it copies from real chats between two people, beyond the earlier sets:

* **Exported, stamped sessions.** Each session is headed by its date and time the way an export writes it, each
  chat its own way ("[Thu 14 Mar 2024, 21:07]", "── 14/03/2024 21:07 ──", a long "Thursday, March 14, 2024 at 9:07
  PM" line, and in one chat every message stamped with its clock time "(21:09)"); two sessions may share a day.
* **Loose references back.** News is later picked up by "the place from before", "that thing with your sister", "the
  shop": the message that moves the story on names neither the story nor its people (kind ``callback``: the
  question needs both that message and the one it points back to).
* **Corrections, changed plans, updated facts.** "no wait, it was the tuesday", a trip planned for one place and
  taken to another, a budget or a rent that goes up twice: the latest word wins (``latest``), and a time question
  on a corrected day needs the correction and what it corrects.
* **Texture.** Bursts of two or three messages from one person, one-word replies, run-on messages of 150-250
  tokens, "[image: ...]" captions, links, typos in common words ("definately", "abt", "tho"), news tucked into a
  message about something else.

Three chats (old friends Ilse in Bristol and Dara in Galway; Wen in Glasgow and her brother Callum in Melbourne;
library colleagues Malin and Joss), 24-32 sessions over three to nine months, 15-40 messages a session, 400-700
messages a chat. Every person has three threads of news told in distinct sessions, and between the news they ask
after each other's threads and answer without news, so a thread's words come back in many sessions.

Questions (~31 a chat) come the way someone asks a memory assistant afterwards: ``single_hop``, ``multi_hop`` (two
facts from two sessions), ``temporal`` ("when did ...": the day a message's "yesterday" / "on tuesday" / "last
weekend" points at from its session's stamp; "how long after ...": the days between two such), ``counting``,
``latest`` (the last of several values), ``inference`` ("would X enjoy ...": a stated like or dislike),
``callback`` (see above), and three kinds nothing answers (no evidence): ``unanswerable`` (a topic never raised),
``missing_detail`` (a raised topic's detail never given) and ``wrong_speaker`` (asked of the person who never said
it: the other one did). A seed places the same stories anew: which sessions hold the news, the dates and times, the
chatter around it.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from bench.conversation_data import Conversation, Question

KINDS = (
    "single_hop",
    "multi_hop",
    "temporal",
    "counting",
    "latest",
    "inference",
    "callback",
    "unanswerable",
    "missing_detail",
    "wrong_speaker",
)
NOTHING = ("unanswerable", "missing_detail", "wrong_speaker")
"""The kinds nothing in the chat answers (no evidence)."""

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
RELATIVE = ("the day before yesterday", "yesterday", "last night", "this morning", "today", "tonight", "last weekend")
"""The words that place news in time (with a weekday's name): only the news says them, never the small talk."""


@dataclass(frozen=True)
class Asked(Question):
    answer: str = ""
    keys: tuple[str, ...] = ()
    """One word each evidence message holds, in the evidence's order (``wrong_speaker``: words only the other person
    says; ``unanswerable`` and ``missing_detail``: words the chat never says)."""


@dataclass(frozen=True)
class Line:
    who: int
    text: str
    label: str = ""
    """The name questions call this message by (empty: not evidence)."""


@dataclass(frozen=True)
class Thread:
    who: int
    """Whose news it is (both may speak in its scenes)."""
    scenes: tuple[tuple[Line, ...], ...]
    """The news in order, each scene told in a session of its own."""
    chatter: tuple[str, ...]
    """The owner's updates without news: the thread's words, nothing a question asks."""
    asks: tuple[str, ...]
    """The other one asking after it, often loosely ("hows the thing with your sister")."""


@dataclass(frozen=True)
class Ask:
    kind: str
    text: str
    labels: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    answer: str = ""
    span: bool = False
    """A "how long after" question: the answer is the days between the first label's day and the last's."""


@dataclass(frozen=True)
class Pair:
    name: str
    names: tuple[str, str]
    stamp: Callable[[dt.datetime], str]
    """A session's heading, the chat export's way."""
    clock: bool
    """Every message stamped with its time, "(21:09) Malin: ..."."""
    start: dt.date
    gap: tuple[int, int]
    """Days between sessions (0: a second session the same day)."""
    threads: tuple[Thread, ...]
    asides: tuple[Line, ...]
    """Things said once, in passing, in a random session (a like, a dislike, a partner's job)."""
    life: tuple[tuple[str, ...], tuple[str, ...]]
    """Each person's own small talk."""
    images: tuple[tuple[str, ...], tuple[str, ...]]
    asks: tuple[Ask, ...]


def _t(who: int, scenes: tuple[tuple[Line, ...], ...], chatter: tuple[str, ...], asks: tuple[str, ...]) -> Thread:
    return Thread(who, scenes, chatter, asks)


L = Line

# -- shared small talk: no weekday, no relative day (time questions read the news's own words) -----------------------

OPENERS = (
    "oi",
    "you about?",
    "ok so",
    "hiya x",
    "how's tricks",
    "guess what",
    "quick one",
    "free for a sec?",
    "right.",
    "hello hello",
    "need to vent for a minute",
    "is it too early to text",
    "are you still alive over there",
    "I have a question and it's stupid",
    "so. news.",
    "how are things in your corner of the world",
    "sorry, been a hermit. how are you",
    "you'll never guess who I bumped into",
    "just escaped a three hour meeting, talk to me",
    "good news and bad news, which first",
)
OPENER_BACK = (
    "here!",
    "always",
    "go on",
    "hey you. all fine here, bit knackered",
    "lol what now",
    "never too early",
    "barely. you?",
    "bad news first always",
    "ooh who",
    "hit me",
    "oh god what happened",
    "I'm on the loo so you have my full attention",
    "yes hi hello",
    "surviving, just about. what's up",
)
SMALL = (
    "the fridge has started humming a note I can only describe as B flat",
    "I tried to parallel park in front of a group of builders and it went exactly as badly as you'd expect",
    "there's a wasp living in the car and I've decided we are flatmates now",
    "I bought a fancy olive oil and now I'm scared to actually use it",
    "got called madam by a teenager in the shop, I think I aged ten years on the spot",
    "my glasses broke so I'm currently wearing sunglasses indoors like a rock star",
    "the broadband went off for a whole evening and I had to talk to my own thoughts",
    "I have been looking at the same spreadsheet for so long the cells have started moving",
    "someone on the train was eating a whole roast chicken out of a bag, no fork, total commitment",
    "I went to buy milk and came back with a lamp. no milk. just a lamp",
    "my hands smell of garlic and I'm not sure it will ever leave",
    "I found a receipt from 2016 in my coat and apparently I spent forty quid on crisps once",
    "the recycling van came at six and I think the driver hates glass personally",
    "there's a man on our road who walks a cat on a lead, and honestly the cat looks happier than me",
    "my knee makes a noise on the stairs like a bag of crisps",
    "I've watched so many cooking videos I now own a blowtorch and no reason for it",
    "the neighbours have put up a trampoline and the kids go past the window every four seconds",
    "I got told off by a self checkout machine for an unexpected item, it was my own elbow",
    "all the good biscuits are gone and only the sad rich teas are left",
    "I've been reading a book about mushrooms and now I see them absolutely everywhere",
    "the shower has two settings, arctic and lava, nothing in between",
    "my step counter says I walked 400 steps, which is a new low even for me",
    "I tried making bread in the slow cooker, it's edible but only technically",
    "I had a dream I missed a maths exam, I'm thirty-odd, why am I still doing this",
    "the plant you told me to buy is thriving, which is suspicious",
    "the postman and I have a whole silent rivalry about who gets to the gate first",
    "I got a parking ticket outside my own flat, it's basically rent now",
    "I've started talking to the toaster, it's fine, everything's fine",
    "some lad knocked on the door selling fish out of a van, I bought a mackerel out of pure panic",
    "our street's whatsapp group is in a full war about hedges again",
    "there's a new coffee place that does everything in jam jars, I hate that I love it",
    "I accidentally wore two different shoes to a meeting and nobody said a word",
    "I've been doing the thing where you put your phone in another room, lasted about four minutes",
    "I can't stop buying notebooks I'm never going to write in",
    "the wind nearly took the bins down the hill again, full chase scene",
    "my dentist has a fish tank and I swear one of the fish judges me",
    "I've started ironing pillowcases, I think that's a cry for help",
    "every song on the radio is either from my teenage years or sounds like a ringtone",
    "the smoke alarm only goes off when I make toast, never when I actually burn things",
    "I signed a petition about potholes and now I get fourteen emails a day about potholes",
    "the lady at the bakery gave me a free croissant and I've decided she's my best friend now",
    "I've been trying to fix the wobbly table with a folded beer mat for about a year",
    "I locked myself out and had to climb in the kitchen window in front of half the street",
    "there's a spider in the bath that's been there so long I've named it Gerald",
    "my landlord texted 'quick question' and I aged a decade before he asked about the meter",
    "I tried a new hairdresser and came out looking like a medieval monk",
    "I found a hair in my soup at a fancy restaurant and was too polite to say anything",
    "the car park at the big supermarket is a lawless wasteland",
    "I put a wash on and forgot about it for two days, the towels smell like a pond",
    "I walked into a glass door at the bank, very confidently, with witnesses",
    "a pigeon got into the office and the whole floor stood on chairs",
    "I went to a wine tasting and could only say 'that one's nice' about every single one",
    "I bought a houseplant that's supposedly unkillable and it's already looking sad",
    "the bus driver waited for me when I was running and I nearly cried with gratitude",
    "I ate a whole bag of those little cheese biscuits standing at the fridge",
    "my grandad has discovered memes and sends them at six in the morning",
    "I keep meaning to book a dentist appointment and then just not doing it",
    "the printer at work jammed so badly someone called IT and IT called it a lost cause",
    "I learned a card trick off the internet and I've shown it to everyone, nobody is impressed",
    "I tried meditating with an app and fell asleep in the first two minutes",
    "my jeans shrank in the wash, I'm choosing to believe it was the jeans",
    "there's a mystery smell in the hallway and the whole building is blaming each other",
    "I went to a car boot sale and bought a box of records I can't even play",
    "the cashier asked if I wanted a bag and I panicked and said no to four tins of beans",
    "I spent an hour on hold to the council just to be told to email them",
    "someone left a single shoe on the wall outside, it's been there long enough to be a landmark",
    "I've been using the same teabag twice to save money, this is who I've become",
    "my friend's toddler called me 'the tall one' and now that's my name",
    "I went to bed at nine like a pensioner and woke up at four like a farmer",
    "the couple across the road argue about bins at a volume I can hear through glass",
    "I tried on a jumper in a shop and got stuck, a staff member had to help",
    "I made a lasagne that could feed a village and it's just me",
    "the hot water ran out halfway through my shower, I screamed like a kettle",
    "I keep getting adverts for hiking boots and I've never hiked in my life",
    "someone's cat has started coming in through our window for breakfast",
    "I stood in a puddle that was much deeper than it looked, sock fully gone",
    "I found out I've been saying a word wrong for twenty years and nobody told me",
    "there's a queue for the new ice cream place that goes round the block in the rain",
    "I accidentally liked an old photo while looking at someone's profile and I have to move country",
)
SMALL_BACK = (
    "stoppp",
    "I can't with you",
    "this is the content I'm here for",
    "honestly same energy as my week",
    "that's so you",
    "mate.",
    "oh no that's brilliant",
    "iconic behaviour",
    "I'm wheezing",
    "you need a holiday",
    "respect",
    "the dream",
    "classic",
    "nooo",
    "I felt that in my soul",
    "ha. relatable",
    "ok that's weirdly wholesome",
    "please keep me updated on this",
)
SHORT = (
    "ha",
    "yeah",
    "omg",
    "nooo",
    "k",
    "👍",
    "true",
    "same",
    "lol",
    "😂",
    "ok",
    "mm",
    "yep",
    "ugh",
    "fair",
    "wait",
    "🙈",
)
REACT = (
    "WHAT",
    "no way!!",
    "oh that's amazing",
    "hang on, tell me everything",
    "ahh finally",
    "oh no. are you ok?",
    "this is huge",
    "yesss",
    "wow ok",
    "I'm so proud of you honestly",
    "ha, of course it did",
    "well that's one way to do it",
)
LINKS = (
    "https://www.theguardian.com/lifeandstyle/2024/jan/26/why-adults-are-buying-sticker-books",
    "https://youtu.be/Qx7yR2kLp0c this made me think of you",
    "look at this https://www.reddit.com/r/CasualUK/comments/1b2c3d/what_is_this_sign_trying_to_tell_me/",
    "https://www.bbc.co.uk/food/recipes/one_pan_orzo_22615 making this later",
    "this is us in ten years https://youtu.be/w8Lm3ZtVb5s",
    "https://www.instagram.com/p/C3xk9Fh0aB1/ the last slide",
    "saw this and laughed for ages https://twitter.com/ducksdoingthings/status/1754402211",
    "https://www.atlasobscura.com/places/the-tiny-museum-of-lost-gloves we HAVE to go",
)
LINK_BACK = ("😂😂", "saving this", "that last bit!!", "why is this so accurate", "sent it to my mum", "ok I'm in")
CLOSERS = (
    "right, bed. night x",
    "gotta run, chat soon",
    "dinner's ready, bye!!",
    "ok I'd better actually do some work",
    "phone's on 2%, byeee",
    "love ya, speak soon",
    "right, off to pretend to be an adult",
    "anyway, laters",
)
CLOSE_BACK = ("night!", "bye x", "laters", "speak soon", "👋", "go go go", "xx")
TYPOS = {
    "really": "realy",
    "definitely": "definately",
    "because": "becuase",
    "though": "tho",
    "about": "abt",
    "you": "u",
    "tomorrow": "tmrw",
    "probably": "prob",
    "the": "teh",
    "with": "wiht",
    "going": "goin",
    "what": "waht",
}
_WORD = re.compile(r"\b(" + "|".join(TYPOS) + r")\b")


# -- Ilse (Bristol) and Dara (Galway): old friends from university ---------------------------------------------------

ILSE_DARA = Pair(
    name="ilse_dara",
    names=("Ilse", "Dara"),
    stamp=lambda t: f"[{t:%a} {t.day} {t:%b %Y, %H:%M}]",
    clock=False,
    start=dt.date(2024, 1, 8),
    gap=(1, 9),
    threads=(
        _t(
            0,
            (
                (
                    L(
                        0,
                        "so the bathroom is finally happening. found a plumber, "
                        "Shay, he's doing the whole room for 4,200",
                        "i_bath1",
                    ),
                    L(1, "the one with the avocado bath?"),
                    L(0, "the very same. the avocado bath is going to a better place"),
                ),
                (
                    L(
                        0,
                        "Shay found rot under the floorboards so the quote is now 5,100. I actually laughed out loud",
                        "i_bath2",
                    ),
                    L(1, "oof. that's the old house tax"),
                ),
                (
                    L(0, "picked tiles!! terrazzo, pink flecks, you're going to hate them", "i_bath3"),
                    L(1, "I'm going to love them and you know it"),
                ),
                (
                    L(
                        0,
                        "update nobody asked for: the bathroom total is now 5,650 because "
                        "the window frame went too. never renovating again",
                        "i_bath4",
                    ),
                    L(1, "that's a holiday's worth of window"),
                    L(0, "don't"),
                ),
            ),
            (
                "the house is full of dust, I'm basically a ghost now",
                "washing my hair in the kitchen sink is a whole new skill",
                "Shay plays local radio all day, I know every advert by heart",
                "the bathroom is a hole in the floor and a dream",
                "I've been showering at the leisure centre like a teenager on a school trip",
            ),
            (
                "how's the bathroom saga",
                "any progress with your plumber man",
                "do you have a floor yet",
                "hows the hole",
            ),
        ),
        _t(
            0,
            (
                (
                    L(
                        0,
                        "I've booked dinghy sailing lessons at Chew Valley lake. "
                        "six weeks. I am a woman of the sea now",
                        "i_sail1",
                    ),
                    L(1, "you get sick on the ferry"),
                    L(0, "it's a LAKE"),
                ),
                (
                    L(
                        0,
                        "first sailing lesson was yesterday and I capsized within ten minutes. the "
                        "instructor, Marguerite, just said 'good, now you know'",
                        "i_sail2",
                    ),
                    L(1, "hahaha I love her"),
                    L(0, "no wait, it was the wednesday, I'm losing track. the week's a blur", "i_sail2b"),
                ),
                (
                    L(0, "I passed!! RYA level 2, I can officially take a boat out on my own", "i_sail3"),
                    L(1, "captain Ilse"),
                    L(0, "admiral please"),
                ),
            ),
            (
                "my arms are bruised from the boom, it's very glamorous",
                "I keep saying port and starboard at the dinner table and everyone hates me",
                "the lake was like glass, just me and a heron",
                "I have bought a very expensive waterproof and I regret nothing",
            ),
            ("still alive on the water?", "how's the boat life", "capsized again yet?", "how are your sea legs"),
        ),
        _t(
            0,
            (
                (
                    L(
                        0,
                        "my sister Phoebe is engaged!! they're looking at a "
                        "converted mill near Hebden Bridge for the wedding",
                        "i_wed1",
                    ),
                    L(1, "aww tell her congrats from me"),
                ),
                (
                    L(
                        0,
                        "you know the place from before? they've booked it. 14th of September, save the date",
                        "i_wed2",
                    ),
                    L(1, "what place"),
                    L(0, "keep up!!"),
                ),
                (
                    L(
                        0,
                        "big change of plan with that thing I told you about my sister: the mill "
                        "double-booked them, so now it's her in-laws' garden in Cork",
                        "i_wed3",
                    ),
                    L(1, "a garden do in Ireland in September, brave"),
                    L(0, "there will be a marquee and a prayer"),
                ),
            ),
            (
                "Phoebe sends me forty pinterest boards a day",
                "the family group chat has 212 unread messages and I'm scared",
                "mum's already crying about the speeches",
                "I'm apparently on favours duty, whatever that means",
            ),
            (
                "how's the planning going",
                "hows the thing with your sister",
                "is Phoebe still sane",
                "any bridezilla stories",
            ),
        ),
        _t(
            1,
            (
                (
                    L(
                        1,
                        "I've signed the lease on a unit off Shop Street. I'm going to "
                        "open a bike repair shop. properly doing it",
                        "d_shop1",
                    ),
                    L(0, "DARA. this is huge"),
                    L(1, "it's very small actually. but it's mine"),
                ),
                (
                    L(1, "the shop has a name: Spoke & Pint. Fiona says it sounds like a pub", "d_shop2"),
                    L(0, "it does sound like a pub"),
                ),
                (
                    L(
                        1,
                        "scratch the name, the solicitor says another Spoke & Pint exists in Cork. it's Wheelhouse now",
                        "d_shop3",
                    ),
                    L(0, "Wheelhouse is better tbh"),
                ),
                (
                    L(
                        1,
                        "doors open!! first customer this morning was a priest with "
                        "a puncture. I'm taking it as a blessing",
                        "d_shop4",
                    ),
                    L(0, "a literal blessing"),
                ),
            ),
            (
                "covered in chain grease again, it's my natural state now",
                "the paperwork for a business is unreal, I've filled in the same form three times",
                "spent the whole evening building shelves for inner tubes",
                "my accountant speaks to me like I'm a golden retriever",
            ),
            ("how's the shop", "how's business", "any customers yet", "hows the bike empire"),
        ),
        _t(
            1,
            (
                (
                    L(
                        1,
                        "Yasmin lost her first tooth, biting into an apple. she's "
                        "demanding five euro from the tooth fairy",
                        "d_yas1",
                    ),
                    L(0, "inflation hits the tooth fairy"),
                ),
                (
                    L(
                        1,
                        "Yasmin won a medal at her first Irish dancing feis! bronze. she's worn it to bed every night",
                        "d_yas2",
                    ),
                    L(0, "stop that's adorable"),
                ),
                (
                    L(1, "another one for the small one, silver this time, at the feis in Athenry", "d_yas3"),
                    L(0, "she's a machine"),
                ),
                (
                    L(1, "gold at the Ennis feis!! that's the third. we need a bigger shelf", "d_yas4"),
                    L(0, "a dynasty"),
                ),
            ),
            (
                "Yasmin is practising her jig in the kitchen at all hours",
                "the dancing shoes cost more than my car",
                "she has a wig for the competitions, it's terrifying",
                "every sentence Yasmin says now begins with actually",
            ),
            ("how's the small one", "how's Yasmin doing", "is she still dancing", "hows your girl"),
        ),
        _t(
            1,
            (
                (
                    L(
                        1,
                        "new hobby: I'm making cheese. bought a press off a "
                        "farmer in Moycullen. first wheel is a gouda",
                        "d_chz1",
                    ),
                    L(0, "of course you are"),
                ),
                (
                    L(1, "the gouda grew blue fur. it's in the bin. Fiona made me promise not to cry", "d_chz2"),
                    L(0, "rip gouda"),
                ),
                (
                    L(1, "cheese redemption: my cheddar is actually good. aged it eight weeks in the shed", "d_chz3"),
                    L(0, "post me some"),
                ),
                (
                    L(
                        1,
                        "the man from before, who sold me the press, wants to stock "
                        "my stuff at his farm shop. twelve a wedge!!",
                        "d_chz4",
                    ),
                    L(0, "a cheesemonger. my friend the cheesemonger"),
                ),
            ),
            (
                "the shed smells like feet and I'm proud of it",
                "I've read every cheese forum on the internet",
                "rennet is a strange thing to have in your fridge",
                "Fiona has banned cheese talk at dinner",
            ),
            ("how's the cheese", "hows the dairy empire", "any edible cheese yet", "how's your shed project"),
        ),
    ),
    asides=(
        L(0, "I can't stand coriander, it tastes like washing up liquid, don't fight me", "i_coriander"),
        L(
            0,
            "found a jazz trio that plays at the Old Duke every month, I haven't missed one since, it's my church",
            "i_jazz",
        ),
        L(1, "I get seasick looking at a photo of a boat, I'm a disgrace to an island nation", "d_seasick"),
        L(1, "Fiona's doing nights at the hospital so I'm single parenting and it shows", "d_fiona"),
    ),
    life=(
        (
            "work is all budget meetings at the moment, I dream in cost codes",
            "my cycle to work is mostly uphill both ways, I'm sure of it",
            "the gulls in Bristol are the size of small dogs and twice as rude",
            "I'm trying to learn to cook one new thing a week, at the moment it's dal",
            "the cat next door sits in our window and looks at me like I'm the guest",
            "I went to a talk on bridges for fun, that's who I am now",
            "I absolutely cannot do ladders, I went up one to clear the gutter and had to sit down after",
            "my boss has discovered voice memos and it's ruining my life",
        ),
        (
            "Galway is sideways rain again",
            "there's a busker on Shop Street who only knows one song and it's a good one",
            "I walked the prom to clear my head and came back with wet socks",
            "I've started watching horror films again, the worse the better",
            "our car has started making a whistling noise on hills",
            "I'm reading about the history of the bicycle, it's more exciting than it sounds",
            "my mam rings every evening at seven to ask if I've eaten",
        ),
    ),
    images=(
        (
            "[image: a bathroom with no floor, a toilet standing alone in the rubble]",
            "[image: a dinghy on its side in grey water, a person in a yellow lifejacket waving]",
            "[image: a tray of very flat sourdough]",
            "[image: a seagull on a car bonnet, staring into the camera]",
        ),
        (
            "[image: a small shopfront with a bike wheel hanging over the door]",
            "[image: a girl in a curly wig mid-jump]",
            "[image: a wheel of pale cheese on a wooden board in a shed]",
            "[image: rain on a windscreen, the sea behind]",
        ),
    ),
    asks=(
        Ask("single_hop", "What's the name of Ilse's sailing instructor?", ("i_sail2",), ("marguerite",), "Marguerite"),
        Ask("single_hop", "Where did Dara get his cheese press?", ("d_chz1",), ("moycullen",), "a farmer in Moycullen"),
        Ask("single_hop", "What did Ilse pick for the bathroom tiles?", ("i_bath3",), ("terrazzo",), "pink terrazzo"),
        Ask("single_hop", "Who was Dara's first customer?", ("d_shop4",), ("priest",), "a priest with a puncture"),
        Ask(
            "single_hop", "What does Dara's partner do for work?", ("d_fiona",), ("hospital",), "nights at the hospital"
        ),
        Ask(
            "multi_hop",
            "Near which town was the mill Ilse's sister wanted, and why did it fall through?",
            ("i_wed1", "i_wed3"),
            ("hebden", "double-booked"),
        ),
        Ask(
            "multi_hop",
            "By how much did Ilse's bathroom quote go up once the rot was found?",
            ("i_bath1", "i_bath2"),
            ("4,200", "5,100"),
            "900",
        ),
        Ask(
            "multi_hop",
            "What was Dara's first cheese, and how long did he age the one that worked?",
            ("d_chz1", "d_chz3"),
            ("gouda", "eight weeks"),
        ),
        Ask(
            "multi_hop",
            "What did Yasmin want from the tooth fairy, and what colour was her first dancing medal?",
            ("d_yas1", "d_yas2"),
            ("five euro", "bronze"),
        ),
        Ask("temporal", "When did Ilse capsize her dinghy?", ("i_sail2", "i_sail2b"), ("capsized", "wednesday")),
        Ask("temporal", "When did Dara's bike shop open?", ("d_shop4",), ("first customer",)),
        Ask("temporal", "When did Ilse get her sailing qualification?", ("i_sail3",), ("rya",)),
        Ask("temporal", "When did Ilse tell Dara her sister was engaged?", ("i_wed1",), ("engaged",)),
        Ask(
            "temporal",
            "How long after Dara signed his lease did the shop open?",
            ("d_shop1", "d_shop4"),
            ("lease", "first customer"),
            span=True,
        ),
        Ask(
            "counting",
            "How many medals has Yasmin won at Irish dancing?",
            ("d_yas2", "d_yas3", "d_yas4"),
            ("bronze", "silver", "gold"),
            "three",
        ),
        Ask(
            "counting",
            "How many different figures has Ilse given for what the bathroom costs?",
            ("i_bath1", "i_bath2", "i_bath4"),
            ("4,200", "5,100", "5,650"),
            "three",
        ),
        Ask("latest", "What's the bathroom going to cost Ilse in the end?", ("i_bath4",), ("5,650",), "5,650"),
        Ask("latest", "What is Dara's shop called?", ("d_shop3",), ("wheelhouse",), "Wheelhouse"),
        Ask("latest", "Where is Phoebe getting married?", ("i_wed3",), ("cork",), "her in-laws' garden in Cork"),
        Ask("inference", "Would Dara enjoy a whale-watching boat trip off Kerry?", ("d_seasick",), ("seasick",), "no"),
        Ask(
            "inference",
            "Would Ilse like a Thai green curry heaped with fresh coriander?",
            ("i_coriander",),
            ("coriander",),
            "no",
        ),
        Ask("inference", "Would Ilse enjoy an evening at a jazz club?", ("i_jazz",), ("jazz",), "yes"),
        Ask(
            "callback",
            "What date did Ilse's sister book the mill for?",
            ("i_wed1", "i_wed2"),
            ("mill", "14th of september"),
            "14 September",
        ),
        Ask(
            "callback",
            "Who wants to sell Dara's cheddar, and for how much?",
            ("d_chz1", "d_chz4"),
            ("moycullen", "man from before"),
            "the Moycullen farmer who sold him the press, twelve a wedge",
        ),
        Ask("unanswerable", "What breed is Ilse's dog?", keys=("spaniel", "labrador", "terrier", "puppy")),
        Ask("unanswerable", "Which football team does Dara support?", keys=("football", "rovers", "united")),
        Ask("missing_detail", "How much is the rent on Dara's shop unit?", keys=("per month", "a month", "monthly")),
        Ask("missing_detail", "What colour is Phoebe's wedding dress?", keys=("wedding dress", "gown")),
        Ask("wrong_speaker", "What level did Dara pass in sailing?", keys=("rya", "level 2")),
        Ask("wrong_speaker", "How many dancing medals has Ilse's daughter won?", keys=("medal", "feis")),
    ),
)

# -- Wen (Glasgow) and her brother Callum (Melbourne) ------------------------------------------------------------------

WEN_CALLUM = Pair(
    name="wen_callum",
    names=("Wen", "Callum"),
    stamp=lambda t: f"── {t:%d/%m/%Y %H:%M} ──",
    clock=False,
    start=dt.date(2024, 2, 19),
    gap=(0, 11),
    threads=(
        _t(
            0,
            (
                (
                    L(
                        0,
                        "bought an e-bike!! second hand, a green Cube, 900 quid off a guy in "
                        "Shawlands. my commute is twelve minutes now instead of forty",
                        "w_bike1",
                    ),
                    L(1, "look at you, a cyclist"),
                ),
                (
                    L(
                        0,
                        "someone nicked the e-bike from outside Partick station "
                        "last night. cut straight through the lock",
                        "w_bike2",
                    ),
                    L(1, "no!! did you report it"),
                    L(0, "crime number and everything. the officer said 'aye, happens'"),
                ),
                (
                    L(0, "insurance finally paid out for the bike, 1,150. more than I paid for it lol", "w_bike3"),
                    L(1, "crime does pay. for you"),
                ),
                (
                    L(
                        0,
                        "spent the insurance money on a cargo bike with a big box on "
                        "the front. I look like a dad from Copenhagen",
                        "w_bike4",
                    ),
                    L(1, "you ARE a dad from Copenhagen"),
                ),
            ),
            (
                "the hills in the west end are murder on the legs",
                "the man in the bike shop scares me and I need a new chain",
                "the hills in this city were designed by a sadist",
                "I've been looking at bike locks like they're engagement rings",
            ),
            ("any word on the bike", "how's the commute", "still walking everywhere?", "hows the wheels situation"),
        ),
        _t(
            0,
            (
                (
                    L(
                        0,
                        "so I met someone. at the board game café on Byres Road on saturday. Ola. "
                        "she destroyed me at Catan and then asked for my number",
                        "w_ola1",
                    ),
                    L(1, "WEN"),
                    L(1, "a woman who wins at Catan. marry her"),
                ),
                (
                    L(0, "Ola and I are going to Skye in May!! a cottage with a wood stove", "w_ola2"),
                    L(1, "midges though"),
                ),
                (
                    L(0, "Skye's off, the cottage flooded. we're doing Arran instead, same dates", "w_ola3"),
                    L(1, "Arran's lovely, less midgey too"),
                ),
                (
                    L(0, "we went back to the place from before for our six months. she let me win for once", "w_ola4"),
                    L(1, "aw. what place?"),
                    L(0, "where we met!! with the dice and the terrible scones"),
                ),
            ),
            (
                "Ola's teaching me to make pierogi, mine look like ears",
                "she laughs at my jokes, which is new and frightening",
                "I've started keeping a spare toothbrush at hers, it's very serious",
                "she has a cat who hates me personally",
            ),
            (
                "how's the girlfriend",
                "hows the lady",
                "still seeing the one who's good at games?",
                "how's it going with Ola",
            ),
        ),
        _t(
            0,
            (
                (
                    L(
                        0,
                        "mum's sixtieth. I'm thinking a boat on Loch Lomond, forty people, October 12th. thoughts?",
                        "m_p1",
                    ),
                    L(1, "love a boat"),
                ),
                (
                    L(1, "I can't make October, the tour runs till the 20th. I'm gutted", "m_p2"),
                    L(0, "noooo. mum will be sad but she'll understand"),
                ),
                (
                    L(
                        0,
                        "the boat company went bust, so the party's at the golf club in Helensburgh now. same date",
                        "m_p3",
                    ),
                    L(1, "mum hates golf"),
                    L(0, "mum hates boats too, she just didn't say"),
                ),
                (
                    L(
                        1,
                        "don't tell mum. I've moved things around, I'm flying in for the "
                        "party after all. landing at Glasgow the morning of",
                        "m_p4",
                    ),
                    L(0, "CALLUM. I'm going to cry"),
                ),
            ),
            (
                "mum keeps asking what we're doing for her birthday and I keep saying nothing",
                "I've made a playlist of mum's favourites, it's mostly Cher",
                "the guest list has reached forty and I haven't started on the cousins",
            ),
            ("hows the party planning", "how's the thing for mum", "did mum suspect anything yet", "party update?"),
        ),
        _t(
            0,
            (
                (
                    L(0, "weirdest patient of the week: a python in for a check up. he was very polite", "w_vet1"),
                    L(1, "nope"),
                ),
                (
                    L(0, "a goose came into the clinic with a broken wing. it bit everyone. it's my hero", "w_vet2"),
                    L(1, "a goose!!"),
                ),
                (
                    L(0, "work was wild, a ferret that had eaten a hair tie. surgery, he's fine, very smug", "w_vet3"),
                    L(1, "how does one eat a hair tie"),
                ),
            ),
            (
                "the clinic is mad busy, everyone's dog has eaten a sock",
                "I smell permanently of surgical spirit",
                "the new vet is nice but sings while he operates",
            ),
            ("how's the zoo", "any weird animals at work?", "how's work"),
        ),
        _t(
            1,
            (
                (
                    L(1, "Marnie's pregnant!! due the 3rd of March. you're going to be an auntie", "c_baby1"),
                    L(0, "WHAT"),
                    L(0, "I'm crying in the staff room"),
                    L(1, "no wait, the 9th. the scan moved it. sorry, my brain's gone", "c_baby1b"),
                ),
                (L(1, "we found out it's a girl", "c_baby2"), L(0, "a niece!!")),
                (
                    L(
                        1,
                        "she's here!! Iris. born at 4am yesterday, 3.4 kilos, she's got her mum's nose thank god",
                        "c_baby3",
                    ),
                    L(0, "IRIS"),
                    L(0, "send ten thousand photos immediately"),
                ),
                (L(1, "Iris smiled at me. it was probably wind but I'm counting it", "c_baby4"), L(0, "it counts")),
            ),
            (
                "the bump kicks whenever I play bass-heavy stuff",
                "we've painted the spare room a yellow called Custard Tart",
                "I've read four books about sleep and understood none of them",
                "I'm running on three hours and flat whites",
            ),
            ("how's the bump", "how are you both holding up", "any news from the baby department", "how's home life"),
        ),
        _t(
            1,
            (
                (
                    L(
                        1,
                        "we got it!! the weatherboard in Footscray. 880 thousand, "
                        "which is insane, but there's a lemon tree",
                        "c_house1",
                    ),
                    L(0, "a lemon tree!! worth it"),
                ),
                (
                    L(
                        1,
                        "the building inspector found termites in the deck. TERMITES. the deck is coming off",
                        "c_house2",
                    ),
                    L(0, "oh no. are they in the house?"),
                    L(1, "just the deck, thank god"),
                ),
                (
                    L(1, "new deck is in. spotted gum. I've sat on it for three hours straight", "c_house3"),
                    L(0, "send a pic"),
                ),
            ),
            (
                "the house creaks like it's got opinions",
                "I've learned what a stump is and I wish I hadn't",
                "the lemon tree is throwing lemons at us like it's angry",
            ),
            ("how's the house", "hows the new place", "the deck still standing?"),
        ),
        _t(
            1,
            (
                (
                    L(
                        1,
                        "touring with The Lantern Years again, fourteen dates up the east coast. I live in a van now",
                        "c_job1",
                    ),
                    L(0, "make sure they feed you"),
                ),
                (
                    L(
                        1,
                        "got offered a teaching job at a college in Collingwood, audio production. starts in February",
                        "c_job2",
                    ),
                    L(0, "Professor Callum"),
                ),
                (
                    L(1, "I said yes to the college. no more vans. I'll miss the free sandwiches", "c_job3"),
                    L(0, "so proud of you"),
                ),
            ),
            (
                "the band's drummer has a new girlfriend in every city, it's a whole thing",
                "I've mixed the same song about forty times",
                "my ears are ringing, occupational hazard",
            ),
            ("how's the band life", "hows work", "still on the road?"),
        ),
    ),
    asides=(
        L(0, "I put chilli oil on everything, the hotter the better, my eyes water and I love it", "w_chilli"),
        L(1, "I hate flying with every cell of my body. a day in a metal tube is my personal hell", "c_fly"),
        L(
            1,
            "I've gone a bit mad for birdwatching, binoculars, a notebook, the lot. the wetlands at dawn are magic",
            "c_birds",
        ),
        L(0, "I still can't swim, I never learned, I panic if the water's past my knees", "w_swim"),
    ),
    life=(
        (
            "Glasgow has done four seasons in an hour again",
            "the flat's boiler is held together by prayer",
            "I had chips for tea and I'm not sorry",
            "my flatmate has taken up the ukulele, I'm looking at other flats",
            "I've been rewatching the same comfort show for the third time",
            "the subway smells of wet dog and ambition",
            "I did a night shift and now I don't know what time it is",
        ),
        (
            "it's 38 degrees and the flies are on strike from leaving",
            "the magpies here swoop you like they've got a grudge",
            "I forgot how loud possums are on a tin roof",
            "coffee in Melbourne is a religion and I'm a monk",
            "I drove to the coast and back just to see the sea",
            "the neighbours have a veggie patch bigger than our whole house",
        ),
    ),
    images=(
        (
            "[image: a green e-bike leaning on a railing]",
            "[image: a goose in a cardboard box looking furious]",
            "[image: two women laughing over a board game]",
            "[image: rain running down a tenement window]",
        ),
        (
            "[image: a tiny baby asleep on a chest]",
            "[image: a lemon tree heavy with fruit by a blue weatherboard wall]",
            "[image: a mixing desk in a dark venue]",
            "[image: a magpie on a fence glaring]",
        ),
    ),
    asks=(
        Ask("single_hop", "Where was Wen's e-bike stolen from?", ("w_bike2",), ("partick",), "outside Partick station"),
        Ask(
            "single_hop",
            "What did the building inspector find at Callum's house?",
            ("c_house2",),
            ("termites",),
            "termites",
        ),
        Ask(
            "single_hop",
            "What's the name of the band Callum toured with?",
            ("c_job1",),
            ("lantern years",),
            "The Lantern Years",
        ),
        Ask("single_hop", "Where did Wen meet Ola?", ("w_ola1",), ("byres road",), "a board game café on Byres Road"),
        Ask("single_hop", "What wood is Callum's new deck made of?", ("c_house3",), ("spotted gum",), "spotted gum"),
        Ask(
            "multi_hop",
            "How much did Wen pay for her e-bike, and how much did insurance give her for it?",
            ("w_bike1", "w_bike3"),
            ("900", "1,150"),
        ),
        Ask(
            "multi_hop",
            "What did Callum's house cost, and what had to be ripped out?",
            ("c_house1", "c_house2"),
            ("880", "deck"),
        ),
        Ask(
            "multi_hop",
            "Why did the first plan for Mum's birthday fall through, and where is it now?",
            ("m_p1", "m_p3"),
            ("loch lomond", "golf club"),
        ),
        Ask(
            "multi_hop",
            "What's Callum's daughter called and when was she due?",
            ("c_baby1b", "c_baby3"),
            ("9th", "iris"),
        ),
        Ask("temporal", "When was Wen's bike stolen?", ("w_bike2",), ("last night",)),
        Ask("temporal", "When was Iris born?", ("c_baby3",), ("yesterday",)),
        Ask("temporal", "When did Wen first meet Ola?", ("w_ola1",), ("saturday",)),
        Ask("temporal", "When did Callum accept the teaching job?", ("c_job3",), ("said yes",)),
        Ask(
            "temporal",
            "How long after the theft did Wen's insurance pay out?",
            ("w_bike2", "w_bike3"),
            ("nicked", "paid out"),
            span=True,
        ),
        Ask(
            "counting",
            "How many unusual animals has Wen told Callum about from work?",
            ("w_vet1", "w_vet2", "w_vet3"),
            ("python", "goose", "ferret"),
            "three",
        ),
        Ask(
            "counting",
            "How many bikes has Wen owned?",
            ("w_bike1", "w_bike4"),
            ("e-bike", "cargo bike"),
            "two: the green Cube e-bike, then a cargo bike",
        ),
        Ask("latest", "Where did Wen and Ola go on holiday in May?", ("w_ola3",), ("arran",), "Arran"),
        Ask("latest", "Is Callum coming to his mum's sixtieth?", ("m_p4",), ("flying in",), "yes, flying in"),
        Ask("latest", "What date was Iris due?", ("c_baby1b",), ("9th",), "the 9th of March"),
        Ask("inference", "Would Wen like a really fiery Sichuan hotpot?", ("w_chilli",), ("chilli",), "yes"),
        Ask(
            "inference", "Would Callum enjoy a round-the-world trip with twelve flights?", ("c_fly",), ("flying",), "no"
        ),
        Ask(
            "inference",
            "Would Callum enjoy a dawn walk through a nature reserve?",
            ("c_birds",),
            ("birdwatching",),
            "yes",
        ),
        Ask(
            "callback",
            "Where did Wen and Ola celebrate six months together?",
            ("w_ola1", "w_ola4"),
            ("board game café", "place from before"),
            "the board game café on Byres Road",
        ),
        Ask(
            "callback",
            "After the boat fell through, what date is the party at the golf club?",
            ("m_p1", "m_p3"),
            ("october 12th", "same date"),
            "12 October",
        ),
        Ask("unanswerable", "What instrument does Callum play?", keys=("guitar", "drums", "piano", "violin")),
        Ask("unanswerable", "Which university did Wen go to?", keys=("university", "graduated", "my course")),
        Ask("missing_detail", "What's Iris's middle name?", keys=("middle name",)),
        Ask("missing_detail", "How much did Wen's cargo bike cost?", keys=("cargo bike cost", "paid for the cargo")),
        Ask("wrong_speaker", "How much did Callum pay for his e-bike?", keys=("cube", "shawlands")),
        Ask("wrong_speaker", "When is Wen's baby due?", keys=("pregnant", "scan")),
    ),
)

# -- Malin and Joss: colleagues at a library in Edinburgh, every message stamped ---------------------------------------

MALIN_JOSS = Pair(
    name="malin_joss",
    names=("Malin", "Joss"),
    stamp=lambda t: f"{t:%A, %B} {t.day}, {t.year} at {t.hour % 12 or 12}:{t:%M %p}",
    clock=True,
    start=dt.date(2023, 9, 4),
    gap=(2, 12),
    threads=(
        _t(
            0,
            (
                (
                    L(
                        0,
                        "I've started BSL level 3 at the college. my teacher Rhiannon is "
                        "deaf and very funny and I'm terrified of her",
                        "m_bsl1",
                    ),
                    L(1, "signing is so cool"),
                ),
                (
                    L(0, "the BSL exam got moved, it's the 22nd of May now, not April", "m_bsl2"),
                    L(1, "more time to practise at least"),
                ),
                (
                    L(
                        0,
                        "passed my BSL exam!! signed a whole conversation about my garden without falling apart",
                        "m_bsl3",
                    ),
                    L(1, "so so proud"),
                ),
            ),
            (
                "I sign in my sleep now, apparently",
                "my hands are tired in a way I didn't know hands could be",
                "I practise fingerspelling on the bus and people stare",
            ),
            ("how's the signing", "hows the course", "still scared of your teacher?"),
        ),
        _t(
            0,
            (
                (
                    L(
                        0,
                        "the flat upstairs flooded through my ceiling last night. "
                        "there's a brown stain shaped like Norway",
                        "m_flat1",
                    ),
                    L(1, "noooo. are your books ok??"),
                    L(0, "mostly. one atlas died"),
                ),
                (
                    L(
                        0,
                        "landlord says the ceiling can't be fixed for months so I'm "
                        "moving. found a place in Portobello, 925 a month",
                        "m_flat2",
                    ),
                    L(1, "by the beach!!"),
                ),
                (
                    L(0, "the Portobello place put the rent up before I'd even moved in, 980 now. cheeky", "m_flat3"),
                    L(1, "that's criminal"),
                ),
                (
                    L(0, "moved in!! the new flat has a view of the sea and a bath with feet", "m_flat4"),
                    L(1, "a bath with feet is all anyone needs"),
                ),
                (
                    L(
                        0,
                        "remember the Norway stain? the upstairs man finally "
                        "apologised, with a bottle of wine and a fern",
                        "m_flat5",
                    ),
                    L(1, "a fern. for a flood. bold"),
                ),
            ),
            (
                "the ceiling drips into a saucepan, it's a whole percussion section",
                "I've moved the same lamp to four different spots",
                "I've been sleeping on the sofa, away from the stain",
            ),
            ("how's the flat", "any news on the leak", "settled in yet?", "hows the new place"),
        ),
        _t(
            0,
            (
                (
                    L(
                        0,
                        "I've signed up to foster hedgehogs for the wildlife rescue in "
                        "Musselburgh. my first is a tiny thing called Conker",
                        "m_hog1",
                    ),
                    L(1, "a hedgehog in your flat??"),
                ),
                (
                    L(
                        0,
                        "Conker went back to the wild. I cried in a hedge. the new foster is a grumpy one called Pip",
                        "m_hog2",
                    ),
                    L(1, "Pip!!"),
                ),
                (
                    L(0, "Pip's released, and now I've got Thistle. she eats more than I do", "m_hog3"),
                    L(1, "a legend"),
                ),
            ),
            (
                "there's a hedgehog in a box in my bedroom and it snores",
                "I've started buying mealworms in bulk, the shop guy knows me",
                "the rescue sends me updates like they're school reports",
            ),
            ("how are the spiky lodgers", "how's the hedgehog", "any prickly news?"),
        ),
        _t(
            1,
            (
                (
                    L(
                        1,
                        "Quiet Ferns played the Wee Red Bar, first gig in two "
                        "years. my hands were shaking the whole set",
                        "j_band1",
                    ),
                    L(0, "I'm so sorry I missed it"),
                ),
                (
                    L(
                        1,
                        "we played Sneaky Pete's on saturday, thirty people came "
                        "and twenty-eight of them were my cousins",
                        "j_band2",
                    ),
                    L(0, "that's a crowd!"),
                    L(1, "no wait, it was the friday. the day after was the christening", "j_band2b"),
                ),
                (
                    L(1, "we got a slot at Kelburn festival!! the small stage, but a stage", "j_band3"),
                    L(0, "JOSS"),
                ),
                (
                    L(
                        1,
                        "played Kelburn. it rained, we were brilliant, a dog got on stage during the last song",
                        "j_band4",
                    ),
                    L(0, "the dog is the headline"),
                ),
            ),
            (
                "we've rehearsed in my kitchen so much the neighbours know the lyrics",
                "the bassist has written a song about a bus, it's actually good",
                "I've been restringing guitars like it's meditation",
            ),
            ("how's the band", "hows the rock and roll lifestyle", "any more gigs coming up?"),
        ),
        _t(
            1,
            (
                (
                    L(
                        1,
                        "I'm learning Welsh. my gran was from Aberystwyth and I want to talk to my aunties properly",
                        "j_welsh1",
                    ),
                    L(0, "da iawn!"),
                ),
                (L(1, "200 day streak on the owl app!", "j_welsh2"), L(0, "the owl is proud")),
                (
                    L(
                        1,
                        "the Welsh streak's dead at 312 days. I fell asleep at my sister's. the owl is furious",
                        "j_welsh3",
                    ),
                    L(0, "rip streak"),
                ),
            ),
            (
                "Welsh has a word for everything and they're all forty letters long",
                "my aunties reply to my texts in Welsh now and I have to guess",
            ),
            ("how's the Welsh", "still talking to the owl?", "hows the language"),
        ),
        _t(
            1,
            (
                (
                    L(1, "my first batch of cider is bubbling away, 23 litres, apples from my dad's tree", "j_cider1"),
                    L(0, "cider man"),
                ),
                (
                    L(
                        1,
                        "three bottles of cider exploded in the cupboard last "
                        "night. the kitchen smells like a pub floor",
                        "j_cider2",
                    ),
                    L(0, "a crime scene"),
                ),
                (
                    L(1, "the cider has a name now: Scrumpy McScrumpface. my dad is ashamed", "j_cider3"),
                    L(0, "perfect"),
                ),
                (
                    L(
                        1,
                        "the stuff from my dad's apples won a rosette at the village "
                        "show. third out of five but a rosette is a rosette",
                        "j_cider4",
                    ),
                    L(0, "champion brewer"),
                ),
            ),
            (
                "I've got airlocks bubbling in every cupboard",
                "my dad keeps sending photos of apples",
            ),
            ("how's the brewing", "any more explosions?", "how's the booze project"),
        ),
    ),
    asides=(
        L(0, "I'm a total musicals person, I've seen Les Mis five times and I'd go again", "m_musicals"),
        L(1, "I would rather be stuck in a lift for a day than sit through a musical", "j_musicals"),
        L(1, "I'm useless before ten. anything before ten is the middle of the night", "j_mornings"),
        L(0, "I've started going to the climbing wall with my cousin, my forearms are on fire", "m_climb"),
    ),
    life=(
        (
            "the reading room heating is broken again, I'm in a hat",
            "a man returned a book eleven years late and looked me in the eye",
            "I've reorganised my spice rack alphabetically, it's a sickness",
            "someone left a sandwich in the returns box, again",
            "I'm on a cheese toastie streak, don't judge me",
            "the Meadows are full of people pretending it's warm",
        ),
        (
            "the children's section had a story time riot, I'm still shaking",
            "I've been eating cereal for dinner, it's called independence",
            "my bike chain fell off on the Mound, very dignified",
            "the printer on the second floor is possessed",
            "I've started a sourdough, don't tell anyone",
            "the flat next door has a parrot that says my name",
        ),
    ),
    images=(
        (
            "[image: a hedgehog curled in a fleece in a cardboard box]",
            "[image: a water stain on a white ceiling]",
            "[image: a claw-foot bath by a window over the sea]",
            "[image: a pile of overdue books on a trolley]",
        ),
        (
            "[image: a band on a tiny stage, fairy lights, a blur]",
            "[image: a row of demijohns bubbling on a shelf]",
            "[image: a phone screen with an owl and a flame]",
            "[image: a wet festival field and a dog]",
        ),
    ),
    asks=(
        Ask("single_hop", "Who teaches Malin sign language?", ("m_bsl1",), ("rhiannon",), "Rhiannon"),
        Ask("single_hop", "Where did Joss's gran come from?", ("j_welsh1",), ("aberystwyth",), "Aberystwyth"),
        Ask(
            "single_hop",
            "Which rescue does Malin foster for?",
            ("m_hog1",),
            ("musselburgh",),
            "the wildlife rescue in Musselburgh",
        ),
        Ask("single_hop", "What did Joss call his cider?", ("j_cider3",), ("scrumpy",), "Scrumpy McScrumpface"),
        Ask(
            "single_hop", "What happened during the last song at Kelburn?", ("j_band4",), ("dog",), "a dog got on stage"
        ),
        Ask(
            "multi_hop",
            "Where did Malin move after the flood, and what did her first rent turn out to be?",
            ("m_flat2", "m_flat3"),
            ("portobello", "980"),
        ),
        Ask(
            "multi_hop",
            "How big was Joss's first batch of cider, and how many bottles blew up?",
            ("j_cider1", "j_cider2"),
            ("23 litres", "three bottles"),
        ),
        Ask(
            "multi_hop",
            "What was the name of Malin's first hedgehog, and who came after it?",
            ("m_hog1", "m_hog2"),
            ("conker", "pip"),
        ),
        Ask(
            "multi_hop",
            "Where did Quiet Ferns play their comeback gig, and which festival did they play later?",
            ("j_band1", "j_band4"),
            ("wee red bar", "kelburn"),
        ),
        Ask("temporal", "When did Malin's ceiling flood?", ("m_flat1",), ("last night",)),
        Ask("temporal", "When did Quiet Ferns play Sneaky Pete's?", ("j_band2", "j_band2b"), ("sneaky", "friday")),
        Ask("temporal", "When did the cider bottles explode?", ("j_cider2",), ("exploded",)),
        Ask("temporal", "When did Malin pass her sign language exam?", ("m_bsl3",), ("passed",)),
        Ask(
            "temporal",
            "How long after the flood did Malin move into her new flat?",
            ("m_flat1", "m_flat4"),
            ("flooded", "moved in"),
            span=True,
        ),
        Ask(
            "counting",
            "How many hedgehogs has Malin fostered?",
            ("m_hog1", "m_hog2", "m_hog3"),
            ("conker", "pip", "thistle"),
            "three",
        ),
        Ask(
            "counting",
            "How many gigs has Joss's band played?",
            ("j_band1", "j_band2", "j_band4"),
            ("wee red bar", "sneaky pete", "played kelburn"),
            "three",
        ),
        Ask("latest", "What's Malin's rent at the new flat?", ("m_flat3",), ("980",), "980 a month"),
        Ask("latest", "How long did Joss's Welsh streak get?", ("j_welsh3",), ("312",), "312 days"),
        Ask("latest", "When is Malin's BSL exam?", ("m_bsl2",), ("22nd of may",), "22 May"),
        Ask("inference", "Would Malin want tickets to a West End show?", ("m_musicals",), ("musicals",), "yes"),
        Ask("inference", "Would Joss enjoy a night at Les Mis?", ("j_musicals",), ("musical",), "no"),
        Ask("inference", "Would Joss be up for a 5am sunrise hike?", ("j_mornings",), ("before ten",), "no"),
        Ask(
            "callback",
            "How did Malin's upstairs neighbour apologise?",
            ("m_flat1", "m_flat5"),
            ("flooded", "apologised"),
            "a bottle of wine and a fern",
        ),
        Ask(
            "callback",
            "What did Joss's cider win at the village show?",
            ("j_cider1", "j_cider4"),
            ("cider", "rosette"),
            "a rosette, third of five",
        ),
        Ask("unanswerable", "Has Joss ever been to Japan?", keys=("japan", "tokyo", "kyoto")),
        Ask("unanswerable", "What's Joss's partner called?", keys=("partner", "girlfriend", "boyfriend", "husband")),
        Ask("missing_detail", "What song did Quiet Ferns open with at Kelburn?", keys=("opened with", "setlist")),
        Ask("missing_detail", "How old is Thistle the hedgehog?", keys=("weeks old", "months old")),
        Ask("wrong_speaker", "Who teaches Joss sign language?", keys=("rhiannon", "bsl")),
        Ask("wrong_speaker", "How many hedgehogs has Joss fostered?", keys=("conker", "thistle", "musselburgh")),
    ),
)

PAIRS = (ILSE_DARA, WEN_CALLUM, MALIN_JOSS)


def fresh4_conversations(count: int = 3, seed: int = 0) -> list[Conversation]:
    """The first ``count`` chats, written from ``seed`` (the same seed writes the same chats)."""
    return [_Writer(pair, random.Random(f"fresh4:{seed}:{pair.name}")).write() for pair in PAIRS[:count]]


def happened_on(text: str, day: dt.date) -> dt.date:
    """The day a message sent on ``day`` places its news: "the day before yesterday", a weekday's name (the last one
    before ``day``), "yesterday" / "last night", "last weekend" (its Saturday), else ``day`` itself."""
    lowered = text.lower()
    if "the day before yesterday" in lowered:
        return day - dt.timedelta(days=2)
    for number, weekday in enumerate(WEEKDAYS):
        if weekday in lowered:
            return day - dt.timedelta(days=(day.weekday() - number - 1) % 7 + 1)
    if "yesterday" in lowered or "last night" in lowered:
        return day - dt.timedelta(days=1)
    if "last weekend" in lowered:
        saturday = day - dt.timedelta(days=(day.weekday() - 5) % 7 or 7)
        return saturday - dt.timedelta(days=7) if saturday + dt.timedelta(days=1) >= day else saturday
    return day


def _joined(said: list[str]) -> str:
    """Sentences run together as typed: a full stop between them unless one already ends in ? or !"""
    return "".join(s if not i else (" " if said[i - 1][-1] in "?!." else ". ") + s for i, s in enumerate(said))


class _Writer:
    """Writes one pair's chat: sessions of small talk around the news, each headed by its export stamp."""

    def __init__(self, pair: Pair, rng: random.Random) -> None:
        self.pair, self.rng = pair, rng
        self.chat = Conversation(pair.name, "friends")
        self.labelled: dict[str, tuple[int, dt.date]] = {}
        """Each evidence label: its message and the day its news happened."""
        self.heading = ""
        self.now = dt.datetime(2000, 1, 1)
        self.live: list[int] = []
        """The threads whose news has begun (their chatter fits)."""
        self.used: set[str] = set()
        """The small talk said this session."""

    def write(self) -> Conversation:
        rng, pair = self.rng, self.pair
        sessions = rng.randint(22, 30)
        news: dict[int, list[tuple[int, int]]] = {}
        first: list[int] = []
        for t, thread in enumerate(pair.threads):  # a thread's scenes in order, each in a session of its own
            slots = sorted(rng.sample(range(sessions), len(thread.scenes)))
            first.append(slots[0])
            for s, slot in enumerate(slots):
                news.setdefault(slot, []).append((t, s))
        asides: dict[int, list[Line]] = {}
        for line in pair.asides:
            asides.setdefault(rng.randrange(sessions), []).append(line)
        when = dt.datetime.combine(pair.start, dt.time(rng.randint(7, 21), rng.randrange(60)))
        for number in range(sessions):
            if number:
                when = self.next_session(when)
            live = [t for t, at in enumerate(first) if at < number]
            self.session(when, news.get(number, []), asides.get(number, []), live)
        self.chat.questions = [self.question(ask) for ask in pair.asks]
        return self.chat

    def next_session(self, last: dt.datetime) -> dt.datetime:
        """Some days on (or, where the pair's gap allows, a few hours later the same day), at a waking hour."""
        rng = self.rng
        days = rng.randint(*self.pair.gap)
        if days == 0 and last.hour < 17:
            return last + dt.timedelta(hours=rng.randint(3, 5), minutes=rng.randrange(60))
        day = last.date() + dt.timedelta(days=max(days, 1))
        return dt.datetime.combine(day, dt.time(rng.randint(7, 21), rng.randrange(60)))

    # -- a session ---------------------------------------------------------------------------------------------

    def session(self, when: dt.datetime, news: list[tuple[int, int]], asides: list[Line], live: list[int]) -> None:
        rng, pair = self.rng, self.pair
        self.heading, self.now, self.live, self.used = pair.stamp(when), when, live, set()
        start, target = len(self.chat.messages), rng.randint(15, 21)
        first = rng.randrange(2)
        if rng.random() < 0.2:
            self.say(first, rng.choice(pair.images[first]))
            self.say(1 - first, rng.choice(REACT))
        else:
            self.say(first, self.typed(rng.choice(OPENERS)))
            self.say(1 - first, self.typed(rng.choice(OPENER_BACK)))
        for _ in range(rng.randint(0, 2)):
            self.small()
        needed = [functools.partial(self.scene, t, s, when.date()) for t, s in news]
        needed += [functools.partial(self.aside, line) for line in asides]
        quiet = [t for t in live if t not in {t for t, _ in news}]
        asked = rng.sample(quiet, min(len(quiet), rng.randint(1, 2)))
        optional: list[Callable[[], None]] = [functools.partial(self.catch_up, t) for t in asked]
        optional += [self.extra for _ in range(rng.randint(0, 2))]
        optional += [self.ramble for _ in range(rng.choice((1, 2, 2, 3)))]
        parts = [(part, True) for part in needed] + [(part, False) for part in optional]
        rng.shuffle(parts)
        for part, must in parts:
            if must or len(self.chat.messages) - start < 28:  # a session stays under 40 messages
                part()
            if rng.random() < 0.3 and len(self.chat.messages) - start < 28:
                self.small()
        closing = rng.random() < 0.75  # some sessions just stop
        while len(self.chat.messages) - start < target - 2 * closing:
            self.small()
        if closing:
            who = rng.randrange(2)
            self.say(who, self.typed(rng.choice(CLOSERS)))
            self.say(1 - who, rng.choice(CLOSE_BACK))

    def small(self) -> None:
        """One to three things in a message, answered with a word, a laugh or a thing of one's own."""
        rng = self.rng
        who = rng.randrange(2)
        self.say(who, self.typed(self.things(who, rng.choices((1, 2, 3, 4), (25, 35, 25, 15))[0])))
        roll = rng.random()
        if roll < 0.25:
            self.say(1 - who, rng.choice(SHORT))
        elif roll < 0.45:
            self.say(1 - who, self.typed(rng.choice(SMALL_BACK)))
        else:
            self.say(1 - who, self.typed(self.things(1 - who, rng.choice((1, 2, 3, 3)))))

    def things(self, who: int, count: int) -> str:
        return _joined(self.unsaid(who, count))

    def unsaid(self, who: int, count: int) -> list[str]:
        """Small talk of one's own: half the shared stock is each person's, and none is said twice a session."""
        pool = [line for line in (*SMALL[who::2], *self.pair.life[who]) if line not in self.used]
        said = self.rng.sample(pool, min(count, len(pool)))
        self.used.update(said)
        return said

    def catch_up(self, t: int) -> None:
        """The other asks after a thread; its owner answers without news."""
        rng, thread = self.rng, self.pair.threads[t]
        self.say(1 - thread.who, self.typed(rng.choice(thread.asks)))
        said = rng.sample(thread.chatter, rng.choice((1, 1, 2)))
        self.say(thread.who, self.typed(_joined(said)))
        if rng.random() < 0.5:
            self.say(1 - thread.who, rng.choice(SHORT))

    def ramble(self) -> None:
        """A run-on message: a live thread's chatter, life and grumbles in one breath (150-250 tokens)."""
        rng = self.rng
        who = rng.randrange(2)
        mine = [line for t in self.live if self.pair.threads[t].who == who for line in self.pair.threads[t].chatter]
        picked = rng.sample(mine, min(len(mine), 3)) + self.unsaid(who, rng.randint(6, 9))
        rng.shuffle(picked)
        self.say(who, self.typed(", and ".join(picked[:2]) + ". " + _joined(picked[2:]) + ". anyway. rant over"))
        self.say(1 - who, rng.choice((*SHORT, *SMALL_BACK)))

    def extra(self) -> None:
        """A photo, a link, or a burst of messages from one person."""
        rng = self.rng
        who, pick = rng.randrange(2), rng.random()
        if pick < 0.4:
            caption = rng.choice(self.pair.images[who])
            self.say(who, caption if rng.random() < 0.5 else f"{caption} {self.things(who, 1)}")
            self.say(1 - who, rng.choice(REACT + SMALL_BACK))
        elif pick < 0.65:
            self.say(who, rng.choice(LINKS))
            self.say(1 - who, rng.choice(LINK_BACK))
        else:
            self.say(who, self.typed(self.things(who, 1)))
            self.say(who, rng.choice(("wait", "actually no", "ignore me", "anyway", "hang on", "hm")))
            self.say(who, self.typed(self.things(who, 1)))
            self.say(1 - who, rng.choice(SMALL_BACK))

    def scene(self, t: int, s: int, day: dt.date) -> None:
        """A thread's news, now and then asked for first, now and then tucked into a message about something else."""
        rng, thread = self.rng, self.pair.threads[t]
        if s and rng.random() < 0.4:
            self.say(1 - thread.who, self.typed(rng.choice(thread.asks)))
        for line in thread.scenes[s]:
            self.line(line, day)
        if rng.random() < 0.5:
            self.say(1 - thread.who, rng.choice(REACT))

    def aside(self, line: Line) -> None:
        self.line(line, self.now.date())
        self.say(1 - line.who, self.typed(self.rng.choice(SMALL_BACK)))

    def line(self, line: Line, day: dt.date) -> None:
        text = line.text
        if line.label and not text.startswith("no wait") and self.rng.random() < 0.3:  # the news said in passing
            aside = self.things(line.who, 1)
            text = _joined([aside, f"also {text}"] if self.rng.random() < 0.5 else [text, aside])
        at = self.say(line.who, self.typed(text))
        if line.label:
            self.labelled[line.label] = (at, happened_on(line.text, day))

    # -- a message ------------------------------------------------------------------------------------------------

    def typed(self, text: str) -> str:
        """As people type: now and then a common word misspelt."""
        if self.rng.random() < 0.2:
            return _WORD.sub(lambda m: TYPOS[m.group(1)], text, count=1)
        return text

    def say(self, who: int, text: str) -> int:
        name = self.pair.names[who]
        self.now += dt.timedelta(minutes=self.rng.choice((0, 0, 1, 1, 2, 3)))
        content = f"({self.now:%H:%M}) {name}: {text}" if self.pair.clock else f"{name}: {text}"
        if self.heading:  # a session's first message carries its heading
            content, self.heading = f"{self.heading}\n{content}", ""
        self.chat.messages.append({"role": "user" if who == 0 else "assistant", "content": content})
        return len(self.chat.messages) - 1

    def question(self, ask: Ask) -> Asked:
        evidence = tuple(self.labelled[label][0] for label in ask.labels)
        answer = ask.answer
        if ask.kind == "temporal":
            days = [self.labelled[label][1] for label in ask.labels]
            answer = f"{(days[-1] - days[0]).days} days" if ask.span else f"{days[-1]:%-d %B %Y}"
        return Asked(ask.text, ask.kind, evidence, answer=answer, keys=ask.keys)

"""A fourth held-out set of long chats (``BENCH_DATA=fresh3``), written apart from recall and the other sets' phrasing.

What it models, and why: real chats between two people are unlike the earlier sets in ways this one copies.

* **Sessions open with small talk and drift.** A session starts with the weather, a biscuit confession or "you
  alive?", wanders through the telly and the neighbours, and the news comes somewhere in the middle, often because
  the other one asked ("any news on the house??").
* **Two lives in parallel threads.** Each person has three threads (a job change, a move, a pet, a course, a family
  illness, a trip planned then taken) that come back across many sessions with updates and with vague chatter that
  says the thread's word without its news, so one topic's words match a dozen sessions.
* **The texture of texting.** Replies are questions about the other's news; photos are bracketed captions ("[photo:
  ...]") or "*sends a picture of ...*", links, voice-note summaries; many messages are one word or an emoji, a few run
  to 150-250 tokens; lower case, typos, in-jokes.
* **Time told relative to the session.** "last thursday", "yesterday", "last night", "in a fortnight": the date a
  temporal question wants is worked out from the session's date, which each chat writes its own way (a header line
  "── Tuesday 14 March 2023 ──", the first message's text "(03/06/2023)", an ISO header line "2023-09-02").

Three chats (old flatmates Nell and Tomasz, cousins Bex and Sunil, former colleagues Ify and Grant), 27-33 sessions
over six to nine months, 18-30 messages a session. Questions come in eleven kinds: ``single_hop``, ``paraphrased`` (no
content word shared with the evidence, which is a message of its own), ``multi_hop`` (two or three sessions apart),
``temporal`` (a date to work out from the session's date), ``counting``, ``latest`` (a value that changed: the message
with its last value), ``inference`` ("Would X enjoy ...?": a stated like or dislike), ``swapped`` (asked of the wrong
person: the evidence is the other's message), ``summary`` ("How has X's job search gone?": a few messages across
sessions), ``unanswerable`` (never raised) and ``missing_detail`` (a detail never given of a raised topic); for the last
two the keys are words the chat never uses. A seed places the same stories anew (which sessions hold each thread's
news, the dates, the chatter around it and its length).
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from bench.conversation_data import Conversation, Question

KINDS = (
    "single_hop",
    "paraphrased",
    "multi_hop",
    "temporal",
    "counting",
    "latest",
    "inference",
    "swapped",
    "summary",
    "unanswerable",
    "missing_detail",
)
NOTHING = ("unanswerable", "missing_detail")


@dataclass(frozen=True)
class Asked(Question):
    answer: str = ""
    keys: tuple[str, ...] = ()
    """One word each evidence message holds, in the evidence's order (nothing answers: words the chat never uses)."""


@dataclass(frozen=True)
class Beat:
    """One piece of a thread's news, told by ``who`` in a session of its own."""

    key: str
    who: int
    text: str
    alone: bool = False
    """Told as a message of its own, no chatter around it (paraphrased and time questions are checked on it)."""


@dataclass(frozen=True)
class Thread:
    who: int
    beats: tuple[Beat, ...]
    chatter: tuple[str, ...]
    """The owner's vague updates: the thread's words without any beat's news."""
    asks: tuple[str, ...]
    """The other one asking after it."""


@dataclass(frozen=True)
class Ask:
    kind: str
    text: str
    beats: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    answer: str = ""


@dataclass(frozen=True)
class Pair:
    name: str
    names: tuple[str, str]
    dated: Callable[[dt.date], str]
    header: bool
    """The date as a line of its own above the first message, else as the first message's opening text."""
    start: dt.date
    threads: tuple[Thread, ...]
    life: tuple[tuple[str, ...], tuple[str, ...]]
    """Each person's own small talk (work, home), beside the shared stock."""
    photos: tuple[tuple[str, ...], tuple[str, ...]]
    voice: tuple[tuple[str, ...], tuple[str, ...]]
    asks: tuple[Ask, ...]


def _b(key: str, who: int, text: str, *, alone: bool = False) -> Beat:
    return Beat(key, who, text, alone)


# -- the shared stock of small talk (no relative days in it: time questions read the news's own words) --------------

OPENERS = (
    "morning {other}!! how was the weekend",
    "hiya, you alive?",
    "ok the weather today is actually offensive",
    "heyyy sorry i went quiet, the week ate me",
    "did you watch the lighthouse thing? no spoilers if not",
    "good morning from the bus, which smells of wet dog today",
    "how's your week been",
    "just made the worst coffee of my life. how are you",
    "happy almost-friday",
    "i have had three biscuits for breakfast and i regret nothing",
    "right, finally sitting down. how are things",
    "yo",
    "evening! what are you up to",
    "sorry for the radio silence, how are you doing",
    "{other}. {other}. {other}.",
    "are you awake",
    "it's so warm, i'm melting into the sofa",
    "hello stranger",
    "quick q, what's that film with the dog who plays football",
    "ok i need a distraction, talk to me",
)
REPLIES = (
    "hey! tired but fine. you?",
    "alive, barely",
    "haha go on",
    "good thanks, busy busy. what's new",
    "ugh same here",
    "not bad, eating toast over the sink like a raccoon",
    "it's grim here too",
    "oh no, tell me everything",
    "all good! what's happening with you",
    "been better, been worse",
    "just got in, perfect timing",
    "hiii. i was literally about to message you",
    "air bud. you're welcome",
    "i am always awake, it's a problem",
    "omg hello!! how are you",
)
DRIFT = (
    "have you started that series everyone's on about, the one with the lighthouse",
    "i made a curry tonight that was mostly chickpeas and hope",
    "my neighbour is doing diy again, it sounds like he's building an ark",
    "i've got a cold and i'm being very brave about it",
    "the bins didn't get collected again, the street smells like a festival",
    ("i keep meaning to go to bed early and then it's 1am and i'm watching people restore old knives"),
    "do you ever think about how much money we spent on takeaways at uni",
    "i'm trying to drink more water. it's going badly",
    "the football was painful to watch. i need a new team",
    ("i'm listening to a podcast about shipwrecks, highly recommend if you like being sad"),
    ("a man in the supermarket told me i looked like a young judi dench. i'm choosing to take it well"),
    "the heating's doing the clanking thing again",
    "is it me or has bread got really expensive",
    "finished my book and now i'm in that awful between-books state",
    "tried a spin class. never again",
    "my phone screen cracked, it's a whole spiderweb situation",
    "went to a pub quiz and we came second to last, a personal best",
    ("i've been doing the crossword with my coffee every morning, i feel very grown up"),
    "bought a plant. i give it a month",
    "there's a fox that sits on our wall every evening like it pays rent",
    "made soup. it's beige but it's mine",
    "been thinking about getting a haircut for about four months now",
    "we had a power cut and i realised i own no candles",
    "have you seen the price of train tickets lately",
    "i've started saying 'sorted' like my dad, it's happening",
    "the dentist says i grind my teeth. i said have you met my life",
    "my sourdough starter died. rip gerald",
    "found a tenner in an old coat, best day of the month",
    ("the new series of bake off is so tense, someone's custard split and i had to leave the room"),
    "why does every advert now have a man on a mountain looking at his phone",
    ("i ordered a jumper online and it's sized for a giant. keeping it, it's a lifestyle now"),
    "the washing machine has started walking across the kitchen on the spin cycle",
    "i went for a run. well. a jog. a brisk walk with ambition",
    "there's a new bakery on the corner and i've been in four times, it's a crisis",
    ("do you remember the name of the guy from the flat downstairs who only ate cereal"),
    ("i've been sleeping terribly, my brain wants to replay every awkward thing i said in 2009"),
    "the pigeons outside the window are having some kind of divorce",
    "i'm on hold with the bank. the music is panpipes. send help",
    "watched a documentary about octopuses and now i can't eat calamari",
    "remember when we tried to make a pavlova and it exploded",
    ("my mum has discovered voice notes and sends me six minute ones about her neighbour's hedge"),
    "it's been grey for about a month, i've forgotten what the sun looks like",
    "i've eaten nothing but toast and crisps today, living the dream",
    "our street has a new cat and it's got more confidence than i've ever had",
    "i accidentally replied-all to the whole building about a parcel",
    "spent an hour choosing a sofa cushion. an hour. for a cushion",
    ("the guy upstairs has started playing the saxophone at 11pm, only one song, badly"),
    "do you think it's normal to have strong opinions about teaspoons",
    ("i fell asleep on the train and woke up two stops past mine with a stranger's crisp on my coat"),
    "my mum has started a facebook group for her street and it's pure drama",
    "i'm growing chillies on the windowsill, there are two, i love them like family",
    "i went to a wedding and the best man's speech was forty minutes long, we aged",
    ("the self checkout told me there was an unexpected item in the bagging area and it was my own hand"),
    "i have decided to become a person who irons. day one. it's going fine",
    "how are we already halfway through the year, who approved this",
    "made pancakes, the first one was a crime scene as usual",
    ("i've been trying to learn to juggle off youtube, the neighbours have seen things"),
    "the barber gave me the exact haircut i asked for and i still hate it",
    "we watched a horror film and now i have to sleep with the landing light on",
    "i bought the expensive crisps and i don't regret it, i'm an adult",
    "my friend's baby called me 'dog' and honestly, fair",
    "i'm knitting a scarf. it's a rectangle. it's the only shape i know",
    ("someone parked across our drive again and left a note saying 'sorry x' like that helps"),
    "we had a barbecue and it rained the moment the sausages went on, british summer",
    ("i've got tickets to see a comedian i'd never heard of, my friend swears he's brilliant"),
    "i cleaned the oven. i found things. i will not be elaborating",
    "i'm trying to do a no-spend month and i've already bought a lamp",
    "the library fined me for a book i swear i returned in 2019",
    "i've got that sunday night dread but on a random weekday",
    "tried to fix the dripping tap myself, now it's a fountain",
    ("the new coffee place does oat milk that tastes like a wet field. i keep going back"),
    ("we had a fire drill at work and everyone just stood on the pavement eating biscuits"),
)
DRIFT_BACK = (
    "haha what",
    "noooo",
    "stop it 😂",
    "honestly relatable",
    "that's so you",
    "wait which one",
    "i've been saying this for years",
    "you need a nap",
    "amazing. no notes",
    "this is why i love you",
    "the cereal guy!! was it dave? it was dave",
    "lol ok but why",
    "not gerald 😭",
    "i would watch that",
    "same energy as the pavlova",
    "why are you like this 😂",
    "honestly that's the best thing i've heard all week",
    "ok but did you tell them that",
    "i need a full report",
    "that's a whole sitcom episode",
    "you're so dramatic, i love it",
)
SHORT = (
    "ha",
    "lol",
    "omg",
    "yes",
    "nooo",
    "ok",
    "same",
    "true",
    "ugh",
    "wow",
    "oof",
    "yep",
    "haha",
    "😂",
    "❤️",
    "aw",
    "hmm",
    "nice",
    "ikr",
    "fair",
    "yikes",
    "mood",
    "go on",
    "brilliant",
    "lmao",
    "🙈",
    "👍",
    "eek",
    "yesss",
    "sigh",
)
REACTIONS = (
    "wait what!! how did that happen?",
    "omg. how do you feel about it?",
    "no way. when did you find out?",
    "ok that's huge. what happens next?",
    "oh no. are you ok?",
    "so proud of you!! what's the plan now?",
    "is that good news or bad news, i can't tell",
    "hang on, tell me everything",
    "aw that's lovely. how did they take it?",
    "that's mad. was it a surprise?",
    "yesss finally. did you celebrate?",
    "ugh. anything i can do?",
)
LINKS = (
    ("this made me think of you https://www.youtube.com/watch?v=x7Tq2 (the bit at 2 mins)"),
    "have you seen this https://www.theguardian.com/lifeandstyle/2023/small-joys",
    "https://www.bbc.co.uk/news/uk-england-64 can you believe",
    "look at this absolute unit https://www.reddit.com/r/absoluteunits/comments/11q",
    "i'm obsessed with this recipe https://www.bbcgoodfood.com/recipes/one-pot-orzo",
    "https://www.instagram.com/p/CqZ3 the caption 😂",
    ("sending you this and then leaving https://www.tiktok.com/@grannygrooves/video/72"),
)
SIGNOFFS = (
    "right i need to sleep. night x",
    "ok off to make tea, speak soon",
    "gotta run, love you",
    "night night",
    "talk tomorrow?",
    "bye!! x",
    "going to attempt to be a functioning adult now. later",
    "ok that's my lunch break over, ttyl",
)
SIGNOFF_BACK = ("night x", "speak soon!", "x", "love you too", "👋", "yes! go", "good luck with that")


# -- Nell (a primary teacher in Bristol leaving teaching) and Tomasz (a software tester in Leeds), old flatmates ----

NELL_TOMASZ = Pair(
    name="nell_tomasz",
    names=("Nell", "Tomasz"),
    dated=lambda d: f"── {d:%A %-d %B %Y} ──",
    header=True,
    start=dt.date(2023, 2, 20),
    threads=(
        Thread(
            0,
            (
                _b(
                    "n_leave",
                    0,
                    (
                        "ok big decision made. i've told the head i'm not coming back in "
                        "september, i'm getting out of teaching"
                    ),
                ),
                _b(
                    "n_apply",
                    0,
                    (
                        "applied for four jobs this weekend. a museum, a charity, the council "
                        "and something called 'learning experience designer' which i think is "
                        "made up"
                    ),
                ),
                _b(
                    "n_interview",
                    0,
                    (
                        "i had the interview at the maritime museum last thursday. three "
                        "people on the panel and a model ship staring at me the whole time"
                    ),
                    alone=True,
                ),
                _b(
                    "n_offer",
                    0,
                    (
                        "THEY OFFERED ME IT!!! learning officer at the maritime museum. 29k "
                        "which is less than teaching but i genuinely don't care"
                    ),
                ),
                _b(
                    "n_negot",
                    0,
                    ("update: i asked for more money like you told me to and they came up to 31k. who even am i"),
                ),
                _b(
                    "n_start",
                    0,
                    ("first day at the museum is in a fortnight, i've bought a lanyard holder like a proper adult"),
                    alone=True,
                ),
                _b(
                    "n_firstweek",
                    0,
                    ("first week done. i ran a workshop on knots for thirty year fives and nobody cried, including me"),
                ),
            ),
            (
                "the job stuff is doing my head in, i refresh my emails like it's a slot machine",
                "still marking books every night, the job situation can't come soon enough",
                "i keep reading job adverts in the bath and getting them wet",
                "no job news really, just vibes and anxiety",
                "^honestly the best bit of the job so far is the people",
                "my cover letter has been rewritten so many times it's basically a poem now",
                "^work's fine. the new job still feels like a holiday some days",
            ),
            (
                "any news on the job front?",
                "how's the job stuff going",
                "^so how's work these days?",
                "did you hear back from anyone?",
            ),
        ),
        Thread(
            0,
            (
                _b(
                    "n_dad1",
                    0,
                    (
                        "dad's been taken into hospital in shrewsbury, they think it's his "
                        "heart. i'm driving up to see him after school"
                    ),
                ),
                _b(
                    "n_dad2",
                    0,
                    (
                        "they've diagnosed him with atrial fibrillation. basically his heart's "
                        "doing jazz instead of keeping a beat"
                    ),
                ),
                _b(
                    "n_dad3",
                    0,
                    (
                        "heading back up to shrewsbury this weekend, he's having a "
                        "cardioversion, which is where they shock your heart back into rhythm. "
                        "he's weirdly excited about it"
                    ),
                ),
                _b(
                    "n_dad4",
                    0,
                    ("he's home. walking to the end of the garden and back twice a day, moaning the whole time"),
                    alone=True,
                ),
                _b(
                    "n_dad5",
                    0,
                    (
                        "drove up to shrewsbury again. dad's started cardiac rehab at the "
                        "leisure centre and he's already flirting with the instructor"
                    ),
                ),
            ),
            (
                ("dad's ok, he rang me to complain about the tv licence so he's definitely himself"),
                "i worry about dad a lot, i keep checking my phone",
                "mum says dad's being a nightmare patient, which is a good sign",
                "no real news on dad, he's just plodding on",
                "spoke to dad for an hour, mostly about his tomatoes",
            ),
            (
                "how's your dad doing?",
                "any news on your dad?",
                "how's your dad getting on",
                "give your dad my love, how is he?",
            ),
        ),
        Thread(
            0,
            (
                _b(
                    "n_swim1",
                    0,
                    (
                        "i've joined a sea swimming group!! they meet at clevedon at 7am and "
                        "call themselves the blue tits"
                    ),
                ),
                _b("n_swim2", 0, "bought a wetsuit. it's like putting on a sausage skin that hates you", alone=True),
                _b(
                    "n_swim3",
                    0,
                    "swam out to the buoy and back yesterday without stopping!! first time ever",
                    alone=True,
                ),
                _b(
                    "n_swim4",
                    0,
                    (
                        "honestly the cold is the best bit. the colder the better, i come out "
                        "feeling like i could fight god"
                    ),
                ),
            ),
            (
                "swim this morning was glorious, the water was like glass",
                "didn't swim this week, the sea was doing a whole storm thing",
                "the swimming ladies are all about seventy and they're faster than me",
                "my hair permanently smells of the sea now, i've accepted it",
                "went swimming and a seal popped up. or a bin bag. we're not sure",
            ),
            ("been swimming lately?", "how's the sea swimming going?", "are you still doing the swimming thing?"),
        ),
        Thread(
            1,
            (
                _b("t_view", 1, "viewed a house in otley today. two bed terrace, tiny garden, a bath with feet"),
                _b("t_offer", 1, "offer accepted on the otley house!!! i feel sick"),
                _b(
                    "t_survey",
                    1,
                    (
                        "survey came back. there's damp in the back bedroom and the roof needs "
                        "'attention'. the seller knocked 4 grand off"
                    ),
                ),
                _b("t_date1", 1, "completion date is the 12th of may, if the solicitors don't fall asleep"),
                _b("t_date2", 1, "completion pushed back AGAIN, now it's the 2nd of june. solicitors are a cult"),
                _b(
                    "t_moved",
                    1,
                    ("[photo: boxes up to the ceiling in the otley front room] we're in. we're actually in"),
                ),
            ),
            (
                "house stuff is just paperwork paperwork paperwork",
                "the solicitors want another form, i think they just like forms",
                "i keep looking at the house on rightmove like a creep",
                "^new house has a creaky stair that sounds like a duck",
                "^still unpacking. found the kettle, that's the main thing",
                "^the house is cold but it's MY cold",
                "^spent the whole weekend painting the house, i'm magnolia now",
            ),
            (
                "any news on the house??",
                "how's the house stuff",
                "is the house still happening?",
                "^how's the new place?",
            ),
        ),
        Thread(
            1,
            (
                _b(
                    "t_dog1",
                    1,
                    (
                        "i'm going to meet a retired greyhound at the rescue at the weekend. "
                        "she's called mabel and she's six"
                    ),
                ),
                _b("t_dog2", 1, "mabel's coming home with me once i've moved!! the rescue said yes"),
                _b(
                    "t_dog3",
                    1,
                    ("mabel can't do stairs. she stands at the bottom and stares at me like i've betrayed her"),
                ),
                _b(
                    "t_dog4",
                    1,
                    "mabel ate an entire pack of butter off the counter last night, wrapper and all",
                    alone=True,
                ),
            ),
            (
                "the dog is asleep upside down again, legs in the air like a dead spider",
                "walked the dog for an hour and she sat down in a puddle and refused to move",
                "the dog has a better social life than me, everyone in the park knows her",
                "she's doing zoomies round the garden, the dog has two speeds: asleep and rocket",
                "dog update: she's discovered the sofa",
            ),
            ("how's the dog?", "dog update pls", "how's she settling in?", "is the dog thing happening?"),
        ),
        Thread(
            1,
            (
                _b("t_jp1", 1, "booked flights to japan for october!! osaka in, tokyo out"),
                _b(
                    "t_jp2",
                    1,
                    (
                        "found a ryokan in hakone with its own hot spring. it's expensive but "
                        "i've decided it's a once in a lifetime thing"
                    ),
                ),
                _b(
                    "t_jp3",
                    1,
                    (
                        "my japanese evening class is going badly. i can say 'where is the "
                        "toilet' and 'i am a cat' and that's it"
                    ),
                ),
                _b("t_jp4", 1, "[photo: a deer in nara bowing at me] they BOW", alone=True),
                _b(
                    "t_jp5",
                    1,
                    (
                        "best thing in the whole trip was the hakone ryokan, i sat in the hot "
                        "spring in the rain for an hour and forgot my own name"
                    ),
                ),
                _b(
                    "t_jp6",
                    1,
                    ("i'd genuinely rather walk into the sea than do karaoke. singing in public is my personal hell"),
                ),
            ),
            (
                "i've been watching youtube videos about japan trains for three hours",
                "the trip spreadsheet has eleven tabs now",
                "japan countdown is on, i'm unbearable",
                "^jet lag from japan is still wrecking me",
                "^i miss japan already, the convenience stores especially",
                "^i'm making a photo book of the trip that nobody asked for",
            ),
            ("how's the trip planning going?", "when do you go to japan again?", "^how was japan?? tell me everything"),
        ),
    ),
    life=(
        (
            "year four were feral today, it was windy, they go feral in wind",
            "spent my whole evening laminating. this is my life",
            "parents evening tomorrow, pray for me",
            "one of my kids asked if i was alive when the dinosaurs were",
            "the staffroom biscuits have gone, someone's stealing the hobnobs",
        ),
        (
            "found a bug at work that's been there since 2017. nobody believes me",
            "stand-up went on for 45 minutes. it was a sit-down",
            "my manager said 'let's take this offline' about a lunch order",
            "the office fridge has a yoghurt in it from before the pandemic",
            "did a release today and nothing caught fire. suspicious",
        ),
    ),
    photos=(
        (
            "[photo: a very wet nell in a woolly hat holding a flask]",
            "[photo: a display board covered in paper fish]",
            "[photo: a cake shaped like a hedgehog, slightly melted]",
        ),
        (
            "[photo: a sad desk plant with one leaf]",
            "[photo: leeds station at 6am, very empty]",
            "[photo: a bowl of ramen the size of a sink]",
        ),
    ),
    voice=(
        (
            ("[voice note, 1:12: nell laughing so hard she can't finish a story about a child and a stick insect]"),
            "[voice note, 0:48: nell singing happy birthday badly, a day late]",
        ),
        (
            ("[voice note, 2:03: tomasz describing his new neighbour's wind chimes in great detail]"),
            "[voice note, 0:35: tomasz saying he's too tired to type]",
        ),
    ),
    asks=(
        Ask("single_hop", "What is the name of Tomasz's greyhound?", ("t_dog1",), ("mabel",), "Mabel"),
        Ask(
            "single_hop", "Where does Nell's sea swimming group meet?", ("n_swim1",), ("clevedon",), "Clevedon, at 7am"
        ),
        Ask(
            "single_hop",
            "What did the survey find wrong with the house Tomasz was buying?",
            ("t_survey",),
            ("damp",),
            "damp in the back bedroom and the roof",
        ),
        Ask(
            "paraphrased",
            "How far can Nell's father manage on foot since his discharge?",
            ("n_dad4",),
            ("garden",),
            "to the end of the garden and back, twice a day",
        ),
        Ask("paraphrased", "What new gear did Nell buy for the cold water?", ("n_swim2",), ("wetsuit",), "a wetsuit"),
        Ask(
            "paraphrased",
            "Which animal greeted Tomasz with a nod of the head on his holiday?",
            ("t_jp4",),
            ("deer",),
            "a deer in Nara",
        ),
        Ask(
            "multi_hop",
            ("How much did Nell's salary go up between the museum's first offer and the pay she agreed?"),
            ("n_offer", "n_negot"),
            ("29k", "31k"),
            "2k: 29k to 31k",
        ),
        Ask(
            "multi_hop",
            "What is Nell's dad's heart condition, and what procedure did he have for it?",
            ("n_dad2", "n_dad3"),
            ("fibrillation", "cardioversion"),
            "atrial fibrillation; a cardioversion",
        ),
        Ask(
            "multi_hop",
            "Where is the hot spring inn Tomasz booked, and what did he end up doing there?",
            ("t_jp2", "t_jp5"),
            ("hakone", "rain"),
            "Hakone; sat in the hot spring in the rain for an hour",
        ),
        Ask("temporal", "When was Nell's interview at the maritime museum?", ("n_interview",), ("maritime",)),
        Ask("temporal", "When did Nell first swim out to the buoy and back without stopping?", ("n_swim3",), ("buoy",)),
        Ask("temporal", "When did Mabel eat the butter?", ("t_dog4",), ("butter",)),
        Ask("temporal", "When was Nell's first day at the museum?", ("n_start",), ("lanyard",)),
        Ask(
            "counting",
            "How many times did Nell drive up to Shrewsbury to see her dad?",
            ("n_dad1", "n_dad3", "n_dad5"),
            ("shrewsbury", "shrewsbury", "shrewsbury"),
            "three",
        ),
        Ask(
            "counting",
            "How many completion dates was Tomasz given for the house?",
            ("t_date1", "t_date2"),
            ("12th", "2nd"),
            "two",
        ),
        Ask("latest", "What salary will Nell be on at the museum?", ("n_negot",), ("31k",), "31k"),
        Ask("latest", "When is Tomasz completing on the house?", ("t_date2",), ("2nd",), "2 June"),
        Ask("inference", "Would Nell enjoy a winter dip in an icy lake?", ("n_swim4",), ("colder",), "yes"),
        Ask("inference", "Would Tomasz like a night out at a karaoke bar in Tokyo?", ("t_jp6",), ("karaoke",), "no"),
        Ask(
            "swapped",
            "What did Nell's dog eat off the kitchen counter?",
            ("t_dog4",),
            ("butter",),
            "Tomasz's dog Mabel ate butter; Nell has no dog",
        ),
        Ask(
            "swapped",
            "Where did Tomasz have his museum interview?",
            ("n_interview",),
            ("maritime",),
            "Nell did, at the maritime museum",
        ),
        Ask(
            "summary",
            "How has Nell's move out of teaching gone?",
            ("n_leave", "n_offer", "n_firstweek"),
            ("teaching", "offered", "knots"),
            "left teaching, got the museum job, a good first week",
        ),
        Ask(
            "summary",
            "How did Tomasz's house purchase go from start to finish?",
            ("t_offer", "t_survey", "t_moved"),
            ("accepted", "damp", "boxes"),
        ),
        Ask("unanswerable", "What instrument does Tomasz play?", keys=("instrument", "guitar", "piano", "violin")),
        Ask("unanswerable", "Where did Nell go to university?", keys=("university", "degree")),
        Ask("missing_detail", "What is the name of the hospital Nell's dad was taken to?", keys=("infirmary", "royal")),
        Ask("missing_detail", "How much did Tomasz pay for the house in Otley?", keys=("paid", "asking")),
    ),
)


# -- Bex (a bike mechanic in Glasgow) and Sunil (an accountant in Cardiff, made redundant), cousins ---------------

BEX_SUNIL = Pair(
    name="bex_sunil",
    names=("Bex", "Sunil"),
    dated=lambda d: f"({d:%d/%m/%Y})",
    header=False,
    start=dt.date(2023, 4, 3),
    threads=(
        Thread(
            0,
            (
                _b(
                    "b_c1",
                    0,
                    (
                        "i've signed up for the open university geology course!! first module "
                        "is rocks and minerals, which, fair"
                    ),
                    alone=True,
                ),
                _b(
                    "b_c2",
                    0,
                    (
                        "first assignment back: 74! the tutor wrote 'good use of the hand "
                        "lens' which is the nicest thing anyone has ever said to me"
                    ),
                ),
                _b("b_c3", 0, "second assignment came back 88, i'm unstoppable"),
                _b(
                    "b_c4",
                    0,
                    (
                        "field trip to arran with the course. we spent four hours looking at "
                        "one unconformity and i've never been happier"
                    ),
                ),
                _b(
                    "b_c5",
                    0,
                    ("exam is on the 14th. i've made flashcards for every mineral and the cat sits on them"),
                    alone=True,
                ),
            ),
            (
                "course reading tonight, it's all about sediment. sediment!!",
                "i'm behind on the course again, the shop's been mental",
                ("i pick up every rock i see now, my pockets are full of gravel. the course has ruined me"),
                "did two hours of course stuff and then fell asleep on the textbook",
                "my course forum has a man who replies to every post with 'actually'",
            ),
            ("how's the rocks course going?", "how's the course? still loving it?", "any more course marks back?"),
        ),
        Thread(
            0,
            (
                _b(
                    "b_cat1",
                    0,
                    ("pudding's been drinking loads and the vet thinks it's diabetes. she's getting bloods done"),
                ),
                _b(
                    "b_cat2",
                    0,
                    ("pudding's on insulin now, two jabs a day, twelve hours apart. she's furious about it"),
                    alone=True,
                ),
                _b("b_cat3", 0, "pudding's dose went up to 3 units, her numbers were all over the place"),
                _b("b_cat4", 0, "the vet's dropped pudding to 2 units!! her numbers are way better"),
                _b("b_cat5", 0, "*sends a picture of pudding asleep in the bike stand at work*"),
            ),
            (
                "the cat has forgiven me for the needles, mostly",
                "cat's being a diva, she'll only eat if i watch her",
                "the cat knocked my tea over and looked me dead in the eye",
                "cat update: fat, happy, judgemental",
                "the vet bills for the cat are something else, i'm living on beans",
            ),
            ("how's pudding?", "how's the cat doing?", "is the cat ok?", "pudding update pls"),
        ),
        Thread(
            0,
            (
                _b(
                    "b_h1",
                    0,
                    ("me and kit are going to cycle the hebridean way in august. 185 miles, ten islands, one tent"),
                ),
                _b(
                    "b_h2",
                    0,
                    ("ferry to barra booked, that's where we start. the whole thing ends at the butt of lewis"),
                ),
                _b("b_h3", 0, "kit's knee's gone funny so we might have to do it in eight days instead of six"),
                _b("b_h4", 0, "we made it!!! *sends a picture of two very wet people and a lighthouse*"),
                _b(
                    "b_h5",
                    0,
                    (
                        "the best day was harris. white sand and turquoise water, like the "
                        "caribbean if the caribbean was 11 degrees"
                    ),
                ),
                _b(
                    "b_h6",
                    0,
                    ("i hate being stuck indoors on holiday. give me a tent and a headwind over a fancy room any day"),
                ),
            ),
            (
                "did a 60 mile training ride for the trip, my bum has filed a complaint",
                "the panniers are packed and unpacked every night, it's a ritual",
                "kit keeps sending me midge forecasts for the trip. that's love",
                "^still dreaming about the islands, i want to go back already",
                "trip stuff: we've bought a stove that weighs less than a sandwich",
            ),
            ("how's the cycling trip planning going?", "are you ready for the big ride?", "^how was the trip??"),
        ),
        Thread(
            1,
            (
                _b(
                    "s_j1",
                    1,
                    ("so. they've made me redundant. twelve of us in the finance team, all gone in one meeting"),
                ),
                _b(
                    "s_j2", 1, ("i've had a first interview at the welsh rugby union, for a management accountant role")
                ),
                _b("s_j3", 1, "didn't get the rugby one. they went with someone internal"),
                _b(
                    "s_j4",
                    1,
                    ("applied to 9 places this week. i've started a spreadsheet, obviously, i'm an accountant"),
                ),
                _b(
                    "s_j5",
                    1,
                    ("second interview at a solar panel company in newport. they make you do a case study on the spot"),
                ),
                _b("s_j6", 1, "I GOT THE SOLAR JOB. finance manager, and i start in a fortnight", alone=True),
            ),
            (
                "job hunting is a full time job that pays nothing",
                "had a recruiter call me 'buddy' four times about one job",
                "no job news. i've reorganised the spice rack twice",
                ("job sites are a nightmare, everyone on linkedin is 'thrilled to announce' something"),
                "^the new job's good. people actually say thank you",
            ),
            ("any job news?", "how's the job hunt going?", "^how's the new job?", "heard back from anywhere?"),
        ),
        Thread(
            1,
            (
                _b("s_n1", 1, "nani's dementia is getting worse. she called me by my uncle's name all weekend"),
                _b(
                    "s_n2",
                    1,
                    (
                        "we've found a care home for nani in leicester, it's called willow "
                        "court and there's a garden she can see from her room"
                    ),
                ),
                _b(
                    "s_n3",
                    1,
                    (
                        "visited nani yesterday. she remembered every word of an old hindi "
                        "film song even though she didn't know who i was"
                    ),
                    alone=True,
                ),
                _b("s_n4", 1, "mum drives up every sunday now and brings her homemade dal", alone=True),
            ),
            (
                "nani's about the same. some good days, some not",
                "talking to mum about nani every night, it's a lot",
                "the care home rang about nani, just paperwork, don't panic",
                "nani's started calling the nurses by film star names, they love it",
            ),
            ("how's your nani?", "how's nani doing?", "how's your mum coping with nani stuff?"),
        ),
        Thread(
            1,
            (
                _b(
                    "s_d1",
                    1,
                    ("i'm 34 and i've started driving lessons. my instructor is called gareth and he sighs a lot"),
                ),
                _b("s_d2", 1, "failed my test. two minors and one serious for a roundabout"),
                _b("s_d3", 1, "failed again. this time i mounted a kerb doing the parallel park"),
                _b("s_d4", 1, "PASSED. third time lucky. gareth shook my hand like i'd survived a war"),
                _b("s_d5", 1, "i get seasick on a pedalo, so anything on a boat is out for me"),
            ),
            (
                ("driving lesson tonight, i've been doing the hand positions on the steering wheel of my imagination"),
                "i stalled at the lights and a man in a van clapped",
                "^i'm driving everywhere now, even to the end of the road",
                "practising driving with dad is a test of our relationship",
            ),
            ("how's the driving going?", "how are the lessons going?", "when's your next test?"),
        ),
    ),
    life=(
        (
            "fixed eleven punctures today, it's glass season",
            "a man brought in a bike from 1974 and cried when i fixed it",
            "the shop radio only plays one station and it's ruining my brain",
            "someone tried to pay me in tomatoes. i took the tomatoes",
        ),
        (
            "the cardiff traffic is a personal attack",
            "made a lasagne that could stop a bullet",
            "my flatmate is learning the trumpet. i'm learning to leave",
            "went to the bay for a walk, saw a dog in a raincoat",
        ),
    ),
    photos=(
        (
            "*sends a picture of a bike covered in mud up to the saddle*",
            "*sends a picture of a rock that looks like a potato*",
            "*sends a picture of a very grey glasgow sky*",
        ),
        (
            "*sends a picture of a spreadsheet with too many colours*",
            "*sends a picture of a lasagne, slightly burnt*",
            "*sends a picture of cardiff bay in the drizzle*",
        ),
    ),
    voice=(
        (
            ("(voice note, 1:30: bex ranting about a customer who wanted a bell fitted in a specific key)"),
            "(voice note, 0:52: bex and kit arguing about where to get chips)",
        ),
        (
            ("(voice note, 2:10: sunil explaining pensions to bex whether she wants it or not)"),
            "(voice note, 0:40: sunil singing along to the radio in the kitchen)",
        ),
    ),
    asks=(
        Ask("single_hop", "What is the name of Bex's cat?", ("b_cat1",), ("pudding",), "Pudding"),
        Ask("single_hop", "What is Sunil's driving instructor called?", ("s_d1",), ("gareth",), "Gareth"),
        Ask(
            "single_hop",
            "What is the care home Sunil's nani moved into called?",
            ("s_n2",),
            ("willow",),
            "Willow Court",
        ),
        Ask(
            "paraphrased",
            "How is the student preparing for her final test?",
            ("b_c5",),
            ("flashcards",),
            "flashcards for every mineral",
        ),
        Ask(
            "paraphrased",
            "Which relative travels weekly to the grandmother, and what food does she carry?",
            ("s_n4",),
            ("dal",),
            "his mum, homemade dal",
        ),
        Ask("paraphrased", "What treatment does the pet need twice daily?", ("b_cat2",), ("insulin",), "insulin"),
        Ask(
            "multi_hop",
            "Which organisation interviewed Sunil first, and why didn't he get that role?",
            ("s_j2", "s_j3"),
            ("rugby", "internal"),
            "the Welsh Rugby Union; they hired internally",
        ),
        Ask(
            "multi_hop",
            "Where did Bex and Kit's ride start, and how did they mark the finish?",
            ("b_h2", "b_h4"),
            ("barra", "lighthouse"),
            "Barra; a photo at the Butt of Lewis lighthouse",
        ),
        Ask(
            "multi_hop",
            "What illness does Bex's cat have, and what dose is she on now?",
            ("b_cat1", "b_cat4"),
            ("diabetes", "2 units"),
            "diabetes; 2 units",
        ),
        Ask("temporal", "When did Sunil visit his nani and hear her sing the old film song?", ("s_n3",), ("song",)),
        Ask("temporal", "When did Sunil start at the solar company?", ("s_j6",), ("fortnight",)),
        Ask("temporal", "When did Bex sign up for the geology course?", ("b_c1",), ("geology",)),
        Ask(
            "counting",
            "How many driving tests did Sunil take?",
            ("s_d2", "s_d3", "s_d4"),
            ("failed", "failed", "passed"),
            "three",
        ),
        Ask("counting", "How many assignment marks has Bex told Sunil about?", ("b_c2", "b_c3"), ("74", "88"), "two"),
        Ask("latest", "What mark did Bex get on her most recent geology assignment?", ("b_c3",), ("88",), "88"),
        Ask("latest", "How many units of insulin is Pudding on now?", ("b_cat4",), ("2 units",), "2 units"),
        Ask("inference", "Would Bex enjoy a week at an all-inclusive resort hotel?", ("b_h6",), ("headwind",), "no"),
        Ask("inference", "Would Sunil enjoy a whale watching boat trip?", ("s_d5",), ("seasick",), "no"),
        Ask(
            "swapped",
            "How many driving tests did Bex fail?",
            ("s_d2", "s_d3"),
            ("failed", "failed"),
            "Sunil failed two; Bex none",
        ),
        Ask("swapped", "Which island's beaches did Sunil love most?", ("b_h5",), ("harris",), "Bex did: Harris"),
        Ask(
            "summary",
            "How has Sunil's job search gone?",
            ("s_j1", "s_j4", "s_j6"),
            ("redundant", "spreadsheet", "solar"),
        ),
        Ask("summary", "How has Bex's geology course gone?", ("b_c1", "b_c2", "b_c4"), ("geology", "74", "arran")),
        Ask("unanswerable", "What is Sunil's wife called?", keys=("wife", "married", "husband")),
        Ask("unanswerable", "Has Bex ever been skiing?", keys=("skiing", "ski", "slopes")),
        Ask("missing_detail", "What breed is Pudding?", keys=("breed", "tabby", "siamese")),
        Ask("missing_detail", "What salary was Sunil offered at the solar company?", keys=("salary", "grand")),
    ),
)


# -- Ify (a civil engineer in Manchester moving to Lisbon) and Grant (a chef in Edinburgh), former colleagues --------

IFY_GRANT = Pair(
    name="ify_grant",
    names=("Ify", "Grant"),
    dated=lambda d: f"{d:%Y-%m-%d}",
    header=True,
    start=dt.date(2023, 8, 28),
    threads=(
        Thread(
            0,
            (
                _b(
                    "i_m1",
                    0,
                    (
                        "work want me to move to the lisbon office for two years. i said i'd "
                        "think about it and then said yes in the lift"
                    ),
                    alone=True,
                ),
                _b(
                    "i_m2",
                    0,
                    (
                        "found a flat in alfama!! fourth floor no lift, view of the river. my "
                        "calves are going to be incredible"
                    ),
                ),
                _b("i_m3", 0, "moving date is the 3rd of november, the removal men are booked"),
                _b("i_m3b", 0, "removal men cancelled on me, so moving is now the 17th. deep breaths"),
                _b("i_m4", 0, "[photo: the tagus from my balcony at sunset] first night in the flat"),
                _b(
                    "i_m5",
                    0,
                    (
                        "the office here has a dog called bolacha who comes to every meeting "
                        "and sits on the engineers' feet"
                    ),
                ),
            ),
            (
                "the lisbon move is a lot. i've got three lists of lists",
                "lisbon is all hills. every walk is a leg day",
                "packing for lisbon, why do i own nine umbrellas",
                "^the lisbon office is nice but the coffee is so strong my eye twitches",
                "^still living out of boxes in lisbon, i use one as a bedside table",
            ),
            (
                "how's the lisbon move going?",
                "^how's lisbon treating you?",
                "any news on the lisbon thing?",
                "^how's the new flat?",
            ),
        ),
        Thread(
            0,
            (
                _b("i_p1", 0, "started portuguese lessons, an app plus a tutor called rita on zoom"),
                _b(
                    "i_p2",
                    0,
                    ("rita says my accent is 'brazilian telenovela villain', which i'm taking as a compliment"),
                ),
                _b(
                    "i_p3",
                    0,
                    ("ordered a whole meal in portuguese today and the waiter only switched to english once"),
                    alone=True,
                ),
                _b("i_p4", 0, ("i love a museum, i could spend a whole day reading the little cards next to things")),
            ),
            (
                "portuguese is hard, there are so many ways to say 'you'",
                "did my portuguese homework on the tram, felt very continental",
                "my portuguese streak is 40 days, the owl is proud of me",
                "i said 'i am pregnant' instead of 'i am embarrassed' in portuguese. classic",
            ),
            ("how's the portuguese coming along?", "say something in portuguese", "how are the lessons?"),
        ),
        Thread(
            0,
            (
                _b("i_k1", 0, ("chidi's kidneys are failing. they're talking about dialysis and the transplant list")),
                _b("i_k2", 0, ("i'm getting tested to see if i can be his donor. they took eleven vials of blood")),
                _b("i_k3", 0, "i'm a match!!! surgery pencilled in for march"),
                _b("i_k4", 0, "chidi's started dialysis three times a week, he does crosswords through it"),
                _b(
                    "i_k5",
                    0,
                    ("flew back to manchester for the weekend to sit with him. he beat me at scrabble twice"),
                    alone=True,
                ),
                _b("i_k6", 0, "flew back to manchester again for his appointment with the surgeon"),
                _b("i_k7", 0, "back in manchester for mum's 60th, flew in and out in a day"),
            ),
            (
                "chidi's tired but he's still chidi, he sent me a meme about kidneys",
                "i think about my brother all the time, it's hard being far away",
                "no news on chidi really, waiting game",
                "mum's being so brave about chidi, i don't know how she does it",
            ),
            (
                "how's chidi?",
                "how's your brother doing?",
                "any news on chidi?",
                "how are you holding up with the chidi stuff?",
            ),
        ),
        Thread(
            1,
            (
                _b("g_s1", 1, ("handed my notice in at the bistro. fourteen years of other people's menus is enough")),
                _b(
                    "g_s2",
                    1,
                    ("the supper club's going to be in my flat, twelve covers, one long table, charging 45 a head"),
                ),
                _b(
                    "g_s3",
                    1,
                    ("first supper club night was last saturday. sold out, and one person cried at the pudding"),
                    alone=True,
                ),
                _b("g_s4", 1, "price per head is going up to 55 now, ingredients are brutal"),
                _b(
                    "g_s5",
                    1,
                    "got reviewed in the scotsman!! four stars, they called the lamb 'unforgettable'",
                    alone=True,
                ),
            ),
            (
                "supper club prep all day, i've peeled about four hundred shallots",
                "the supper club washing up is biblical",
                (
                    "someone at the supper club asked if i could do it vegan next time. i "
                    "said i'd think about it. i will not"
                ),
                "menu planning for the supper club, i'm thinking something with rhubarb",
                "leaving the bistro was the best thing i ever did, even on the skint weeks",
            ),
            ("how's the supper club going?", "how was the supper club this week?", "how's life after the bistro?"),
        ),
        Thread(
            1,
            (
                _b("g_h1", 1, "i got hens!! four of them. they're called agnes, morag, dolly and the duchess"),
                _b("g_h2", 1, "a fox got morag. i'm not ok"),
                _b("g_h3", 1, "bought two more hens from a farm in fife, ex-battery girls, bald as eggs"),
                _b("g_h4", 1, "the girls laid nine today, i'm drowning in omelettes", alone=True),
            ),
            (
                "the hens have decided the back step is theirs",
                "hen update: the duchess is still in charge",
                "spent the evening fixing the hen run, i'm covered in straw",
                "the hens are moulting, they look like they've been in a fight",
            ),
            ("how are the hens?", "how are the girls?", "hen news?"),
        ),
        Thread(
            1,
            (
                _b("g_v1", 1, "bought a campervan off a man in dundee. she's called ruby and she leaks"),
                _b(
                    "g_v2",
                    1,
                    ("we're taking ruby to norway in june. ferry from newcastle to amsterdam then driving up"),
                ),
                _b("g_v3", 1, "ruby's gearbox has gone. the garage says 1800 quid. i'm crying"),
                _b("g_v4", 1, "[photo: ruby parked above geirangerfjord, mist on the water] we made it"),
                _b(
                    "g_v5",
                    1,
                    ("scariest bit of the trip was the trollstigen road, eleven hairpins and a coach coming down"),
                ),
                _b("g_v6", 1, "i can't stand crowds. if there's a queue i'm leaving"),
            ),
            (
                "spent the weekend in the van fixing things, she's a money pit with curtains",
                "van's making a new noise, like a cough",
                "norway planning: i've bought a book about fjords and a lot of thermals",
                "^i miss the van life already, the flat feels huge",
            ),
            ("how's the van?", "is norway still happening?", "^how was norway??", "how's ruby?"),
        ),
    ),
    life=(
        (
            "site visit in the rain today, hard hat, hi vis, full drowned rat",
            "my boss said 'circle back' nine times in one meeting, i counted",
            "i've started going to a dance class, i am the worst in the class and i love it",
            "my plant survived the week. growth",
        ),
        (
            "service was carnage, we ran out of forks",
            "burnt my arm on the oven again, i'm basically a tiger now",
            "edinburgh is full of tourists on scooters, i want to scream",
            "my knees hurt from standing all day, i'm a hundred",
        ),
    ),
    photos=(
        (
            "[photo: a hard hat on a desk next to a pastel de nata]",
            "[photo: a yellow tram going up a very steep hill]",
            "[photo: ify in a too-big hi vis vest pulling a face]",
        ),
        (
            "[photo: a tray of focaccia with rosemary on it]",
            "[photo: a hen standing on grant's head]",
            "[photo: arthur's seat in the snow]",
        ),
    ),
    voice=(
        (
            ("[voice note, 1:05: ify walking up a hill very out of breath describing a pigeon]"),
            "[voice note, 0:44: ify saying happy birthday in portuguese, badly]",
        ),
        (
            ("[voice note, 1:50: grant in the kitchen shouting over an extractor fan about butter]"),
            "[voice note, 0:30: grant yawning and saying he'll text tomorrow]",
        ),
    ),
    asks=(
        Ask("single_hop", "What is the Lisbon office dog called?", ("i_m5",), ("bolacha",), "Bolacha"),
        Ask("single_hop", "What is Grant's campervan called?", ("g_v1",), ("ruby",), "Ruby"),
        Ask("single_hop", "Who is Ify's Portuguese tutor?", ("i_p1",), ("rita",), "Rita"),
        Ask("paraphrased", "What board game did Ify lose to her sibling?", ("i_k5",), ("scrabble",), "Scrabble"),
        Ask("paraphrased", "What's the biggest daily haul from Grant's birds?", ("g_h4",), ("nine",), "nine eggs"),
        Ask(
            "paraphrased",
            "How did a newspaper critic rate Grant's dinners at home?",
            ("g_s5",),
            ("stars",),
            "four stars in the Scotsman",
        ),
        Ask("multi_hop", "Why is Ify having surgery in March?", ("i_k1", "i_k3"), ("dialysis", "match")),
        Ask(
            "multi_hop",
            "Where did Grant buy his campervan, and what broke on it?",
            ("g_v1", "g_v3"),
            ("dundee", "gearbox"),
        ),
        Ask(
            "multi_hop",
            ("What did a seat at Grant's supper club cost at first, and what does it cost now?"),
            ("g_s2", "g_s4"),
            ("45", "55"),
        ),
        Ask("temporal", "When was Grant's first supper club night?", ("g_s3",), ("cried",)),
        Ask("temporal", "When did Ify agree to move to Lisbon?", ("i_m1",), ("lisbon",)),
        Ask("temporal", "When did Ify order a whole meal in Portuguese?", ("i_p3",), ("waiter",)),
        Ask(
            "counting",
            "How many times did Ify fly back to Manchester?",
            ("i_k5", "i_k6", "i_k7"),
            ("manchester", "manchester", "manchester"),
            "three",
        ),
        Ask(
            "counting",
            "How many hens does Grant have now?",
            ("g_h1", "g_h2", "g_h3"),
            ("four", "fox", "two more"),
            "five",
        ),
        Ask("latest", "What is Ify's moving date?", ("i_m3b",), ("17th",), "the 17th"),
        Ask("latest", "How much is a seat at Grant's supper club?", ("g_s4",), ("55",), "55"),
        Ask("inference", "Would Ify enjoy spending a rainy afternoon in an art gallery?", ("i_p4",), ("cards",), "yes"),
        Ask("inference", "Would Grant enjoy the Edinburgh festival fringe in August?", ("g_v6",), ("crowds",), "no"),
        Ask("swapped", "Which of Ify's hens did the fox get?", ("g_h2",), ("morag",), "Grant's hen Morag"),
        Ask(
            "swapped",
            "What does Grant's Portuguese tutor say about his accent?",
            ("i_p2",),
            ("villain",),
            "Ify's tutor: 'telenovela villain'",
        ),
        Ask(
            "summary",
            "How has Grant's supper club gone since he left the bistro?",
            ("g_s1", "g_s3", "g_s5"),
            ("notice", "cried", "scotsman"),
        ),
        Ask("summary", "How is Ify's brother doing?", ("i_k1", "i_k3", "i_k4"), ("dialysis", "match", "crosswords")),
        Ask("unanswerable", "What car does Ify drive?", keys=("car", "toyota", "fiat")),
        Ask("unanswerable", "Does Grant have any children?", keys=("children", "kids", "son", "daughter")),
        Ask("missing_detail", "Which hospital will Chidi's transplant be at?", keys=("hospital", "infirmary")),
        Ask("missing_detail", "How much did Grant pay the Dundee man for the campervan?", keys=("paid", "bargain")),
    ),
)

PAIRS = (NELL_TOMASZ, BEX_SUNIL, IFY_GRANT)

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def fresh3_conversations(count: int = 3, seed: int = 0) -> list[Conversation]:
    """The first ``count`` chats, written from ``seed`` (the same seed writes the same chats)."""
    return [_Chat(pair, random.Random(f"fresh3:{seed}:{pair.name}")).write() for pair in PAIRS[:count]]


def said_on(text: str, day: dt.date) -> dt.date:
    """The day a message sent on ``day`` says its news happened: "yesterday" / "last night", "last <weekday>", "in a
    fortnight", else that day."""
    lowered = text.lower()
    if "yesterday" in lowered or "last night" in lowered:
        return day - dt.timedelta(days=1)
    if "in a fortnight" in lowered:
        return day + dt.timedelta(days=14)
    for number, weekday in enumerate(WEEKDAYS):
        if f"last {weekday}" in lowered:
            return day - dt.timedelta(days=(day.weekday() - number - 1) % 7 + 1)
    return day


_TYPO = re.compile(r"\b([a-z])([a-z])([a-z]{3,})\b")


class _Chat:
    def __init__(self, pair: Pair, rng: random.Random) -> None:
        self.pair, self.rng = pair, rng
        self.conversation = Conversation(pair.name, "friends")
        self.told: dict[str, tuple[int, dt.date]] = {}
        self.progress: dict[int, int] = {}
        """How many of each thread's beats are told."""
        self.dated = ""

    def write(self) -> Conversation:
        rng, pair = self.rng, self.pair
        sessions = rng.randint(27, 33)
        placed: dict[int, list[tuple[int, Beat]]] = {}
        started: list[int] = []
        for number, thread in enumerate(pair.threads):  # a thread's news in order, each in a session of its own
            at = sorted(rng.sample(range(1, sessions), len(thread.beats)))
            started.append(at[0])
            for session, beat in zip(at, thread.beats, strict=True):
                placed.setdefault(session, []).append((number, beat))
        day = pair.start
        for session in range(sessions):
            day += dt.timedelta(days=rng.randint(3, 10) if session else 0)
            live = [n for n, first in enumerate(started) if first < session]
            self.session(day, placed.get(session, []), live)
        self.conversation.questions = [self.question(ask) for ask in pair.asks]
        return self.conversation

    # -- one session: small talk, the news (often asked for), catching up on the threads, odds and ends, goodbye --

    def session(self, day: dt.date, news: list[tuple[int, Beat]], live: list[int]) -> None:
        rng = self.rng
        self.dated = self.pair.dated(day)
        target = rng.randint(18, 30)
        first = rng.randrange(2)
        start = len(self.conversation.messages)
        self.say(first, self.chatty(rng.choice(OPENERS).format(other=self.pair.names[1 - first])))
        self.say(1 - first, self.chatty(rng.choice(REPLIES)))
        for _ in range(rng.randint(1, 3)):
            self.drift()
        quiet = [n for n in live if n not in {t for t, _ in news}]
        parts: list[Callable[[], None]] = [lambda t=t, b=b: self.tell(t, b, day) for t, b in news]  # type: ignore[misc]
        parts += [lambda n=n: self.catch_up(n) for n in rng.sample(quiet, min(len(quiet), rng.randint(1, 3)))]  # type: ignore[misc]
        parts += [self.extra for _ in range(rng.randint(1, 3))]
        if quiet and rng.random() < 0.6:  # someone goes on at length
            ranter = rng.choice(quiet)
            parts.append(lambda: self.say(self.pair.threads[ranter].who, self.long(ranter)))
        rng.shuffle(parts)
        for part in parts:
            part()
        while len(self.conversation.messages) - start < target - 2:
            self.drift()
        who = rng.randrange(2)
        self.say(who, self.chatty(rng.choice(SIGNOFFS)))
        self.say(1 - who, rng.choice(SIGNOFF_BACK))

    def drift(self) -> None:
        """Small talk: one to four things in one message, answered with a word, a laugh or news of one's own."""
        rng = self.rng
        who = rng.randrange(2)
        self.say(who, self.rambling(who, rng.choices((1, 2, 3, 4, 5), (12, 28, 28, 18, 14))[0]))
        roll = rng.random()
        if roll < 0.35:
            self.say(1 - who, rng.choice(SHORT))
        elif roll < 0.6:
            self.say(1 - who, self.chatty(rng.choice(DRIFT_BACK)))
        else:
            self.say(1 - who, self.rambling(1 - who, rng.choices((1, 2, 3, 4), (30, 35, 25, 10))[0]))

    def rambling(self, who: int, things: int) -> str:
        pool = (*DRIFT, *DRIFT, *self.pair.life[who])
        return self.chatty(". ".join(self.rng.sample(pool, things)))

    def catch_up(self, number: int) -> None:
        """The other asks after a thread; its owner answers without news, sometimes at length."""
        rng, thread = self.rng, self.pair.threads[number]
        self.say(1 - thread.who, self.chatty(rng.choice(self.phase(number, thread.asks))))
        if rng.random() < 0.25:
            self.say(thread.who, self.long(number))
        else:
            said = rng.sample(self.phase(number, thread.chatter), rng.choice((1, 1, 2)))
            self.say(thread.who, self.chatty(". ".join(said)))
        if rng.random() < 0.6:
            self.say(1 - thread.who, rng.choice(SHORT))

    def phase(self, number: int, lines: tuple[str, ...]) -> list[str]:
        """A thread's lines that fit where it stands: "^" marks one said only once all its news is told."""
        done = self.progress.get(number, 0) >= len(self.pair.threads[number].beats)
        fitting = [line.lstrip("^") for line in lines if done or not line.startswith("^")]
        return fitting or [line.lstrip("^") for line in lines]

    def long(self, number: int) -> str:
        """A run-on message (150-250 tokens): the thread's chatter, the day's grumbles, all in one breath."""
        rng, who = self.rng, self.pair.threads[number].who
        pool = [*self.phase(number, self.pair.threads[number].chatter), *self.pair.life[who], *DRIFT]
        return ". ".join(rng.sample(pool, rng.randint(9, 13))) + ". anyway. that's my news"

    def extra(self) -> None:
        rng = self.rng
        who = rng.randrange(2)
        pick = rng.random()
        if pick < 0.4:
            self.say(who, rng.choice(self.pair.photos[who]))
            self.say(1 - who, rng.choice(("omg", "😂😂", "love this", "iconic", "stop", "aw", "the face!!")))
        elif pick < 0.65:
            self.say(who, rng.choice(LINKS))
            self.say(1 - who, rng.choice(("watching now", "😂", "i can't", "sent this to my mum", "ok this is great")))
        else:
            self.say(who, rng.choice(self.pair.voice[who]))
            self.say(1 - who, rng.choice(("i'm crying", "haha amazing", "this is why i love voice notes", "😂")))

    def tell(self, number: int, beat: Beat, day: dt.date) -> None:
        """The news: often asked for, then a question back, then the owner's follow-up."""
        rng, thread = self.rng, self.pair.threads[number]
        if rng.random() < 0.4:
            self.say(1 - beat.who, self.chatty(rng.choice(self.phase(number, thread.asks))))
        text = beat.text
        if not beat.alone and rng.random() < 0.45:  # the news tucked between other things
            aside = ". ".join(rng.sample((*self.pair.life[beat.who], *DRIFT), rng.randint(1, 3)))
            text = f"{aside}. also {text}" if rng.random() < 0.5 else f"{text}. {aside}"
        self.told[beat.key] = (self.say(beat.who, text), said_on(beat.text, day))
        self.progress[number] = self.progress.get(number, 0) + 1
        if rng.random() < 0.75:
            self.say(1 - beat.who, self.chatty(rng.choice(REACTIONS)))
            self.say(beat.who, self.chatty(rng.choice(self.phase(number, thread.chatter))))

    # -- writing a message ---------------------------------------------------------------------------------------

    def chatty(self, text: str) -> str:
        """Small talk as people type it: now and then a swapped letter, an emoji or a trailing "lol"."""
        rng = self.rng
        if rng.random() < 0.12:
            text = _TYPO.sub(lambda m: m.group(2) + m.group(1) + m.group(3), text, count=1)
        if rng.random() < 0.15:
            text += rng.choice((" 😂", " lol", " x", " 🙃", "!!", " haha", " 😭"))
        return text

    def say(self, who: int, text: str) -> int:
        name = self.pair.names[who]
        content = f"{name}: {text}"
        if self.dated:  # the session's first message carries its date, the chat's own way
            content = f"{self.dated}\n{content}" if self.pair.header else f"{name}: {self.dated} {text}"
            self.dated = ""
        self.conversation.messages.append({"role": "user" if who == 0 else "assistant", "content": content})
        return len(self.conversation.messages) - 1

    def question(self, ask: Ask) -> Asked:
        evidence = tuple(self.told[key][0] for key in ask.beats)
        answer = ask.answer
        if ask.kind == "temporal":
            answer = f"{self.told[ask.beats[-1]][1]:%-d %B %Y}"
        return Asked(ask.text, ask.kind, evidence, answer=answer, keys=ask.keys)


if __name__ == "__main__":  # a look at the data: sizes, message lengths and kinds
    import sys
    from collections import Counter
    from statistics import median

    from components.context_window.token_estimator import estimator_for

    tokens = estimator_for("gpt-4o")
    for c in fresh3_conversations(seed=int(sys.argv[1]) if len(sys.argv) > 1 else 0):
        lengths = [tokens.count(m["content"]) for m in c.messages]
        evidence = [lengths[i] for q in c.questions for i in q.evidence]
        print(
            c.name,
            len(c.messages),
            "messages,",
            sum(lengths),
            "tokens, median",
            median(lengths),
            "p90",
            sorted(lengths)[len(lengths) * 9 // 10],
            "max",
            max(lengths),
            "evidence median",
            median(evidence),
            dict(Counter(q.kind for q in c.questions)),
        )

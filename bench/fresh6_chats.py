"""A seventh long-conversation set (``BENCH_DATA=fresh6``): warm, talkative friends sharing their lives over months.

Written the way many public long-chat sets are (a model given two personas and a timeline of each one's life events,
then checked by people), without reading recall's code:

* **Life news told when it happens, talked over, referred back to.** Each person's events (a new job, a rescue dog,
  a niece born, a fractured wrist, a pottery class, a trip booked) are told in one session, dated relative to it
  ("yesterday", "last Saturday", "last weekend", "two weeks ago", "last month", "next month"), and talked over in the
  next few messages: the friend reacts, asks, the teller answers with the detail (plainly or in a photo shared as a
  line of text, "[shares a photo of a lopsided blue bowl on a drying rack]"), then about feelings. So several
  neighbouring messages share the event's words and only one holds what a question asks. Later sessions refer back
  to it ("how's the pottery thing going?") without its detail or its date.
* **Warm, short messages** (1-4 sentences, mostly about feelings: "Wow, that's amazing! I'm so proud of you."),
  composed per message from parts, none said twice in a chat.
* **Questions asked afterwards by a third person, in other words**: ``single_hop`` (the event's detail, one
  message); ``multi_hop`` (a person's activities, trips or good deeds told in 2-4 sessions and asked for together,
  "What does X do to unwind?", or a chain through a name the question lacks: "What does the friend who helped X
  with the house move do for a living?"); ``temporal`` (the day, weekend, week or month a message's relative phrase
  points at from its session's stamp); ``inference`` ("Would X enjoy a cruise?" from "I get horribly seasick");
  and two nothing answers (no evidence): ``unanswerable`` (a topic no one raises) and ``wrong_speaker`` (an event's
  detail asked of the one who did not live it, fresh4's convention).

Three pairs (Marisol and Kwame, friends since college; Odile and Rafferty, old neighbours; Sunniva and Dario,
cousins), 26-32 stamped sessions over 6-8 months, 16-27 messages a session, 520-700 messages (18-24K tokens) a chat,
34 questions a chat. A seed (``BENCH_FRESH_SEED``) picks each chat's events, who lives them, when and how they are
told, and writes the small talk anew.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass

from bench.conversation_data import Conversation
from bench.fresh4_chats import Asked
from bench.fresh5_chats import Pair

KINDS = ("single_hop", "multi_hop", "temporal", "inference", "unanswerable", "wrong_speaker")
NOTHING = ("unanswerable", "wrong_speaker")
"""The kinds no message answers (no evidence)."""
__all__ = ["KINDS", "NOTHING", "PAIRS", "Asked", "fresh6_conversations", "time_answer"]

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
PAST = ("yesterday", "last {weekday}", "last weekend", "last week", "two weeks ago", "last month")
PLAN = ("next month", "next weekend", "in two weeks")


# -- life events: told in one session, talked over, referred back to later -----------------------------------------


@dataclass(frozen=True)
class Event:
    """One person's news. ``news`` tells it ("{when}": a phrase dated from the session), ``detail`` (or ``photo``,
    a shared picture's caption) holds what ``question`` asks; ``ask`` is the friend asking for it. ``key`` is said
    only in the news, ``clue`` only in the detail; ``refs`` are how either of them refers back to it later."""

    news: str
    ask: str
    detail: str
    photo: str
    question: str
    answer: str
    clue: str
    when_question: str
    key: str
    refs: tuple[str, ...]
    plan: bool = False
    tags: tuple[str, ...] = ()
    """``hobby``, ``giving``, ``travel``: kept from the one whose list (``LISTS``) it would also answer; ``sad``: met
    with sympathy, not praise."""


EVENTS = (
    Event(
        "I finally went to my first pottery class {when}! I was so nervous walking in, but everyone was lovely.",
        "Ahh, what did you make??",
        "We did little bowls on the wheel and mine came out lopsided and bright blue, but I adore it.",
        "[shares a photo of a lopsided blue bowl on a drying rack] My very first creation! Wonky, but mine.",
        "What did {X} shape in the ceramics workshop?",
        "a lopsided blue bowl",
        "bowl",
        "When did {X} attend the first ceramics session?",
        "pottery class",
        ("the pottery thing", "your clay sessions"),
        tags=("hobby",),
    ),
    Event(
        "I ran a sponsored 10K {when} and I'm still buzzing! My legs are not speaking to me though.",
        "You absolute legend! What were you running for?",
        "It was for the children's hospice in town, so knowing where the money was going got me up every hill.",
        "[shares a photo at the finish line under a banner for the children's hospice] Sweaty but so happy.",
        "Which cause was {X}'s race supporting?",
        "the children's hospice",
        "hospice",
        "When did {X} do the fundraising run?",
        "sponsored 10k",
        ("the run", "your race"),
        tags=("giving",),
    ),
    Event(
        "I got the job offer {when}!! I literally screamed in the car park.",
        "STOP. Tell me everything, who's it with?",
        "It's a small architecture studio by the river, I'll be building their 3D models. Dream job, honestly.",
        "",
        "Which kind of firm is {X} going to work for?",
        "a small architecture studio",
        "architecture",
        "When did {X} hear they'd been hired?",
        "job offer",
        ("the new job", "your new role"),
    ),
    Event(
        "We adopted a rescue dog {when}! My heart is so full I can barely stand it.",
        "Omg!!! What's the pup called?",
        "His name is Pretzel and he's some kind of terrier mix with one floppy ear.",
        "[shares a photo of a scruffy terrier with one floppy ear asleep on the sofa] Meet Pretzel!!",
        "What name did {X} give the new four-legged family member?",
        "Pretzel",
        "pretzel",
        "When did {X}'s household gain a pet?",
        "rescue dog",
        ("the little guy", "your new pup"),
    ),
    Event(
        "My sister had her baby {when} and I'm still crying happy tears every time I look at the pictures.",
        "Oh my goodness, congratulations!! What did they name her?",
        "Her name is Wren, after our grandma's favourite bird. She has the tiniest fingers you've ever seen.",
        "",
        "What is {X}'s newborn niece called?",
        "Wren",
        "wren",
        "When was {X}'s sister's child born?",
        "had her baby",
        ("the baby", "the little one"),
    ),
    Event(
        "I got an allotment plot {when} after two years on the waiting list! I'm ridiculously excited.",
        "That's brilliant! What are you going to grow first?",
        "Tomatoes and far too many courgettes, plus a row of sunflowers for my mum because she loves them.",
        "[shares a photo of a muddy plot with a row of sunflower seedlings along the fence] It's a start!",
        "What flowers is {X} growing for a parent?",
        "sunflowers",
        "sunflower",
        "When did {X} finally get the patch of land to grow veg on?",
        "allotment",
        ("the plot", "your little garden patch"),
        tags=("hobby",),
    ),
    Event(
        "I came off my bike {when} and fractured my wrist, so I'm typing one-handed. Feeling very sorry for myself.",
        "Oh no, you poor thing!! How long are you stuck in plaster?",
        "Six weeks, and I went for a purple cast because if I'm suffering I'm doing it in style.",
        "",
        "What shade is the plaster on {X}'s arm?",
        "purple",
        "purple",
        "When did {X} get hurt cycling?",
        "fractured my wrist",
        ("the arm", "your poor wrist"),
        tags=("sad",),
    ),
    Event(
        "My boss pulled me aside {when} and told me I'm being promoted! I had to go sit in the stairwell for a bit.",
        "YES! You've worked so hard for this. What's the new position?",
        "I'll be heading up the customer research team, eight people. It's scary but I feel ready.",
        "",
        "Which group will {X} be in charge of?",
        "the customer research team",
        "customer research",
        "When did {X} learn about the step up at work?",
        "promoted",
        ("the new position", "all the extra responsibility"),
    ),
    Event(
        "We got the keys to the new flat {when}! Boxes everywhere, but it already feels like home.",
        "Eee, congratulations! Where is it?",
        "It's in the old mill building by the canal, top floor, and you can see the hills from the kitchen sink.",
        "[shares a photo of an empty room with tall arched windows over the water] Home, sweet (empty) home.",
        "Which converted building did {X} settle into?",
        "the old mill by the canal",
        "old mill",
        "When did {X} take possession of the new home?",
        "keys to the new flat",
        ("the new place", "your flat"),
    ),
    Event(
        "I saw Florence and the Machine live {when} and I haven't stopped singing since!",
        "Jealous!! Was it as magical as you hoped?",
        "She came down into the crowd during the encore and grabbed my hand, I nearly passed out.",
        "",
        "What happened at the end of the gig {X} went to?",
        "the singer came into the crowd and held her hand",
        "encore",
        "When did {X} see the band perform?",
        "florence",
        ("the show", "that night out"),
        tags=("hobby",),
    ),
    Event(
        "I entered the village bake-off {when} and came second!! I'm still in shock.",
        "Second?! That's incredible. What did you make?",
        "A lemon and lavender sponge. The judge said the crumb was perfect but my icing slid right off.",
        "[shares a photo of a lemon and lavender sponge with its icing sliding down one side] The runner-up!",
        "What flavour was {X}'s competition entry?",
        "lemon and lavender",
        "lavender",
        "When was the cake contest {X} took part in?",
        "bake-off",
        ("the competition", "your big bake"),
        tags=("hobby",),
    ),
    Event(
        "I passed my driving test {when}, third time lucky! I cried in front of the examiner.",
        "WOOHOO! Finally! Are you getting something to drive?",
        "My uncle is giving me his old green Mini. It's older than I am but it goes, mostly.",
        "[shares a photo of a little green Mini parked on a driveway] My new baby, rust and all.",
        "What vehicle is {X} getting from a relative?",
        "an old green Mini",
        "mini",
        "When did {X} get the licence?",
        "driving test",
        ("the test", "all those lessons"),
    ),
    Event(
        "A picture I took got picked for the library's photography exhibition {when}! I can't believe it.",
        "That's huge!! Which one did they choose?",
        "The heron on the frozen pond at dawn. I waited two hours in the cold for that shot, so it feels earned.",
        "[shares a photo of a heron standing on a frozen pond at dawn] This one! Worth the frostbite.",
        "What bird appears in {X}'s displayed image?",
        "a heron",
        "heron",
        "When did {X}'s snap get accepted for the show?",
        "photography exhibition",
        ("the exhibition thing", "your picture"),
        tags=("hobby",),
    ),
    Event(
        "I had my wisdom teeth out {when} and now I look like a hamster storing nuts.",
        "Oh you poor thing! Are you managing to eat anything?",
        "Mashed potato and ice cream, mostly. My mum turned up with a whole tub of pistachio, she's a saint.",
        "",
        "Which treat flavour did {X}'s mother bring during the recovery?",
        "pistachio",
        "pistachio",
        "When did {X} have the dental surgery?",
        "wisdom teeth",
        ("the teeth situation", "your sore face"),
        tags=("sad",),
    ),
    Event(
        "I finished my counselling certificate {when}! Two years of evenings and it's done.",
        "I'm so proud of you, seriously. What comes next?",
        "I'm going to volunteer at the youth helpline a couple of nights a week to build up my hours.",
        "",
        "Where will {X} put the new qualification to use?",
        "the youth helpline",
        "helpline",
        "When did {X} complete the course?",
        "counselling certificate",
        ("the course", "all that studying"),
        tags=("giving",),
    ),
    Event(
        "We had to rush the cat to the emergency vet {when}, I have never been so scared.",
        "Oh no!! Is she alright?? What happened?",
        "She'd swallowed a hair tie, can you believe it. The vet got it out and she's back to bossing us around.",
        "",
        "What did {X}'s pet eat that caused the scare?",
        "a hair tie",
        "hair tie",
        "When did {X} take the cat for urgent care?",
        "emergency vet",
        ("the cat drama", "your poor kitty"),
        tags=("sad",),
    ),
    Event(
        "I had my first therapy session {when}. It was hard, but I'm really glad I went.",
        "That takes so much courage. How did it go?",
        "She gave me a notebook and asked me to write down three good things every night. It's helping already.",
        "",
        "What nightly exercise did {X}'s counsellor suggest?",
        "writing down three good things in a notebook",
        "three good things",
        "When did {X} start seeing someone for their mental health?",
        "therapy session",
        ("the sessions", "all that inner work"),
    ),
    Event(
        "Our basement flooded {when} after that storm and I've been mopping ever since.",
        "Oh no, that's awful! Did you lose much?",
        "My vinyl collection got soaked, about forty records. Some of them were my dad's, so that one hurts.",
        "",
        "What did {X} lose in the water damage?",
        "about forty vinyl records",
        "vinyl",
        "When did {X}'s home take on water?",
        "basement flooded",
        ("the mess downstairs", "all the mopping"),
        tags=("sad",),
    ),
    Event(
        "I'm flying out to Japan {when} and I still can't believe it's real!",
        "No way!! Where are you staying?",
        "Mostly Kyoto, in a tiny guesthouse run by an old couple. My friend stayed there years ago and loved it.",
        "",
        "Which city will {X} mostly stay in on the Asia holiday?",
        "Kyoto",
        "kyoto",
        "When is {X} travelling to East Asia?",
        "japan",
        ("the big trip", "your adventure"),
        plan=True,
        tags=("travel",),
    ),
    Event(
        "My brother is getting married {when} and I've been asked to give a speech! Help.",
        "Eek, you'll be amazing! Where's the wedding?",
        "In a barn in the Cotswolds with fairy lights everywhere. Very them.",
        "",
        "Where is {X}'s sibling's ceremony being held?",
        "a barn in the Cotswolds",
        "cotswolds",
        "When is {X} giving the toast?",
        "getting married",
        ("the big day", "the speech"),
        plan=True,
    ),
    Event(
        "We're throwing a little housewarming {when} and you have to come!",
        "I wouldn't miss it! Can I bring anything?",
        "Just yourself! Leo's making his famous jerk chicken, so come hungry.",
        "",
        "What dish will be served at {X}'s party?",
        "jerk chicken",
        "jerk chicken",
        "When is {X} hosting the gathering at the new place?",
        "housewarming",
        ("the party", "the get-together"),
        plan=True,
    ),
    Event(
        "I'm taking the kids to see my parents in Galway {when}, it's been far too long.",
        "That's lovely! How long are you going for?",
        "Ten whole days, and my dad has already planned a fishing day with the kids.",
        "",
        "What has {X}'s father arranged for the grandchildren?",
        "a fishing day",
        "fishing",
        "When is {X} visiting family in Ireland?",
        "galway",
        ("the visit home", "the family trip"),
        plan=True,
        tags=("travel",),
    ),
)

# -- what a person does again and again: asked for together ("What does X do to unwind?") --------------------------

LISTS = {
    "hobby": (
        ("What does {X} do to unwind?", "How does {X} switch off after a long stretch?", "What helps {X} de-stress?"),
        (
            (
                "watercolour",
                "[shares a photo of a half-finished watercolour of a lighthouse] I've started painting in the evenings,"
                " it's the only time my brain goes quiet.",
            ),
            ("yoga", "I've been doing yoga before bed and honestly, I sleep like a baby now."),
            ("kayak", "Took the kayak out on the reservoir, just me and the ducks. Pure bliss."),
            ("crochet", "I've gotten really into crochet, I made a wonky little frog and I adore him."),
            ("jigsaw", "My new thing is thousand-piece jigsaws with a pot of tea and some jazz on."),
            ("kingfisher", "I've taken up birdwatching at the wetlands, spotted a kingfisher and nearly squealed."),
            ("piano", "I dug out the old keyboard and I'm learning piano from videos, it's so soothing."),
            ("ridge", "Walked up to the ridge with a flask of soup. Nothing resets me like being up high."),
            ("lido", "Early lengths at the lido are my new therapy, the cold water wipes my mind clean."),
        ),
    ),
    "travel": (
        ("Which places has {X} been to on holiday?", "Where has {X} travelled lately?", "What getaways has {X} had?"),
        (
            ("edinburgh", "Just got back from Edinburgh! We climbed Arthur's Seat in the wind and I felt so alive."),
            ("copenhagen", "Copenhagen was a dream, we cycled everywhere and ate our body weight in pastries."),
            ("lake como", "[shares a photo of a pastel village on the shore of Lake Como] I'm never leaving."),
            ("marrakech", "Marrakech was so much, the colours, the spices, the noise. I loved every second."),
            ("vienna", "Vienna was all cake and concerts and grand old cafes. My kind of city."),
            ("cornwall", "We rented a tiny cottage in Cornwall and I swam in the sea every single morning."),
            ("krakow", "Krakow surprised me, the old town at night is honestly one of the prettiest things I've seen."),
            ("highlands", "A week in the Highlands with no phone signal was exactly what my soul needed."),
        ),
    ),
    "giving": (
        ("How has {X} helped out in the community?", "What has {X} done for others lately?", "How does {X} pitch in?"),
        (
            ("food bank", "I spent the morning sorting tins at the food bank, the people there are the kindest."),
            (
                "reading stories",
                "I've started reading stories to little ones at the community centre, their faces when I do voices!",
            ),
            ("trees", "Helped the park rangers plant two hundred trees, my back hurts but it felt so good."),
            (
                "shelter",
                "I signed up to walk dogs at the animal shelter and one of them has completely stolen my heart.",
            ),
            (
                "video calls",
                "I've been teaching my elderly neighbour to make video calls so she can see her grandkids.",
            ),
            ("beach clean", "We did a beach clean and filled twelve bags of plastic. Shocking, but weirdly hopeful."),
        ),
    ),
}

# -- a chain through a name the question lacks (the first hop in one session, the second later) ---------------------

CHAINS = (
    (
        "My friend {N} spent the whole day helping me haul boxes into the new place, I don't know what I'd do"
        " without them.",
        "{N} has started nights on the ambulances, a fully qualified paramedic now. So proud!",
        "What does the friend who helped {X} with the house move do for a living?",
        "a paramedic",
        "paramedic",
    ),
    (
        "{N} from my book club lent me the novel that had me sobbing on the bus, I'm emotionally wrecked in the best"
        " way.",
        "{N} is moving to Vancouver at the end of the year, book club won't be the same.",
        "Where is the person who recommended the tearjerker read to {X} relocating?",
        "Vancouver",
        "vancouver",
    ),
    (
        "{N} showed me how to change a flat tyre in the pouring rain. Total lifesaver.",
        "{N} finally opened that little bakery on the high street, the cinnamon buns are unreal!",
        "What business did the person who taught {X} roadside repairs open?",
        "a bakery",
        "bakery",
    ),
    (
        "My neighbour {N} kept my plants alive the whole time I was away, even the fussy fern.",
        "{N} adopted a three-legged greyhound, the sweetest thing you've ever seen.",
        "What animal did the one who looked after {X}'s greenery take in?",
        "a three-legged greyhound",
        "greyhound",
    ),
    (
        "My old swim coach {N} talked me into the open-water swim, still not sure I've forgiven them.",
        "{N} proposed on a boat in Santorini! I'm so happy for them.",
        "Where did the one who persuaded {X} into the sea challenge pop the question?",
        "Santorini",
        "santorini",
    ),
    (
        "{N} from work covered all my shifts when Mum was in hospital, I owe them so much.",
        "{N} has been learning Portuguese every lunch break for the big move to Brazil.",
        "Which language is the colleague who stood in for {X} studying?",
        "Portuguese",
        "portuguese",
    ),
    (
        "My cousin {N} made the most incredible cake for my birthday, three layers and edible flowers.",
        "{N} works as a dental hygienist, so of course there was a lecture about sugar afterwards.",
        "What is the job of the relative who made {X}'s celebration dessert?",
        "a dental hygienist",
        "hygienist",
    ),
    (
        "My old mentor {N} wrote me the loveliest reference, I teared up reading it.",
        "{N} retired to a farm in Wales and keeps alpacas now, living the dream.",
        "What animals does the person who vouched for {X} look after these days?",
        "alpacas",
        "alpaca",
    ),
)
NAMES = ("Femi", "Greta", "Hollis", "Ilaria", "Jovan", "Keziah", "Lorcan", "Maribel", "Nikhil", "Ottilie", "Pascal")

# -- stated likes and dislikes, and a question they answer ------------------------------------------------------------

INFERENCE = (
    (
        ("I'm happiest sleeping under the stars, honestly the further from wifi the better.",),
        "Would {X} enjoy a camping holiday?",
        "yes",
        "under the stars",
    ),
    (
        ("Crowds make me so anxious, I left the arena after two songs last time.",),
        "Would {X} want tickets to a packed music festival?",
        "probably not",
        "crowds",
    ),
    (
        ("I'm obsessed with anything spicy, I put chilli oil on my eggs.", "The hotter the better, my mouth is numb."),
        "Would {X} like a Sichuan hotpot dinner?",
        "yes",
        "chilli oil|hotter the better",
    ),
    (
        ("I get horribly seasick, even the little ferry turns me green.",),
        "Would {X} enjoy a cruise?",
        "no",
        "seasick",
    ),
    (
        ("History documentaries are my comfort watch, I've seen every single one about the Romans.",),
        "Would {X} enjoy a guided tour of ancient ruins?",
        "yes",
        "romans",
    ),
    (
        ("I've never been a morning person, anything before ten should be illegal.",),
        "Would {X} sign up for a 6am bootcamp?",
        "no",
        "morning person",
    ),
    (
        ("My big dream is to see the northern lights one day.", "I keep a folder of aurora photos, it's a problem."),
        "Would {X} be thrilled by a winter trip to Iceland?",
        "yes",
        "northern lights|aurora",
    ),
    (
        ("Horses terrify me ever since one threw me off as a kid.",),
        "Would {X} book a riding lesson on holiday?",
        "no",
        "horses",
    ),
    (
        ("I've been eating plant-based for a while now and I feel so much better for it.",),
        "Would {X} order the steak at a barbecue?",
        "no",
        "plant-based",
    ),
)

UNRAISED = (  # topics no one in any chat raises
    ("Which football team does {X} support?", ("football", "soccer")),
    ("What's {X}'s favourite board game?", ("board game", "monopoly", "scrabble")),
    ("What tattoo did {X} get?", ("tattoo",)),
    ("What is {X}'s star sign?", ("star sign", "zodiac", "horoscope")),
    ("Which university did {X} study at?", ("university", "degree")),
    ("What did {X} dress up as for Halloween?", ("halloween", "costume")),
    ("What's the name of {X}'s landlord?", ("landlord",)),
    ("Which podcast does {X} listen to on the commute?", ("podcast",)),
    ("Which video game is {X} hooked on?", ("video game", "console")),
    ("What's {X}'s go-to karaoke song?", ("karaoke",)),
)

# -- small talk and reactions: composed per message ----------------------------------------------------------------

POOLS: dict[str, tuple[str, ...]] = {
    "w": (
        "pouring with rain",
        "ridiculously sunny",
        "grey and drizzly",
        "so windy",
        "bitterly cold",
        "weirdly warm",
        "foggy",
        "muggy and sticky",
        "bright but freezing",
    ),
    "show": (
        "that baking programme",
        "a true-crime documentary",
        "the new detective series",
        "an old sitcom from the nineties",
        "a nature documentary about octopuses",
        "a silly dating show",
        "a Korean drama",
        "a cooking competition",
        "a series about a haunted hotel",
    ),
    "food": (
        "a big pot of chilli",
        "pancakes",
        "homemade pizza",
        "a Thai green curry",
        "mushroom risotto",
        "lemon pasta",
        "a proper roast",
        "noodle soup",
        "fish tacos",
        "veggie lasagne",
        "shakshuka",
        "dumplings",
    ),
    "doing": (
        "rearranging the living room",
        "catching up on sleep",
        "clearing out the fridge",
        "sorting through old photos",
        "trying to drink more water",
        "going for evening walks",
        "calling my grandma more",
        "decluttering my wardrobe",
        "trying new recipes",
        "getting to bed at a sensible hour",
        "doing nothing at all, on purpose",
        "stretching every morning",
    ),
    "feel": (
        "calm",
        "grateful",
        "tired but happy",
        "a bit scattered",
        "hopeful",
        "content",
        "restless",
        "peaceful",
        "drained",
        "really lucky",
        "a bit wobbly",
        "lighter",
    ),
    "person": (
        "my mum",
        "my dad",
        "my neighbour",
        "someone at work",
        "my partner",
        "my best friend from school",
        "my grandma",
        "my brother",
        "my aunt",
        "my flatmate",
    ),
    "treat": (
        "a fancy candle",
        "new running shoes",
        "a massive bunch of tulips",
        "a good pair of headphones",
        "a cosy jumper",
        "a posh coffee",
        "a new plant for the windowsill",
        "fresh bedding",
    ),
    "book": (
        "a memoir by a chef",
        "a thick fantasy novel",
        "a book of short stories",
        "a gentle self-help book",
        "a sci-fi paperback",
        "a collection of poems",
        "a biography of a mountaineer",
    ),
    "verdict": (
        "I can't believe how much I loved it",
        "I'm a bit lost without it now",
        "I have thoughts about that ending",
        "I need to talk to someone about it",
        "I'm already rewatching bits",
        "honestly it was better than I expected",
    ),
    "leftover": ("days", "the whole week", "a small army", "lunch tomorrow", "the freezer"),
    "musing": (
        "what I actually want from life",
        "how fast this year is going",
        "old friends",
        "where I want to live one day",
        "slowing down a bit",
        "the little things",
        "being kinder to myself",
        "family stuff",
        "whether to move somewhere sunnier",
        "getting a cat one day",
        "our summer plans",
        "what we were like as kids",
        "money, boring but true",
    ),
    "change": ("a nice change", "new", "a relief", "something", "progress, I think"),
    "workish": (
        "a lot",
        "chaos",
        "non-stop",
        "so busy",
        "a bit much",
        "quiet for once",
        "all meetings",
        "a circus",
        "full on",
        "weirdly calm",
    ),
    "bliss": ("bliss", "perfect", "heaven", "exactly what I needed", "no complaints"),
    "animals": ("cats falling off things", "otters holding hands", "dogs in raincoats", "goats yelling", "ducklings"),
    "adv": ("honestly", "genuinely", "really", "truly", "properly", "ridiculously"),
    "emo": ("emotional", "giddy", "teary", "shaky", "overwhelmed", "starry-eyed"),
    "grin": ("an idiot", "a kid at Christmas", "a cat in the sun", "someone who won the lottery", "a fool"),
    "lift": ("something good", "a win", "a bit of joy", "a reason to smile", "that so badly", "some good news"),
    "rough": ("rough", "long", "strange", "heavy", "messy", "tiring"),
    "alot": ("a lot", "the world", "so much", "everything", "more than I can say"),
    "enjoy": ("enjoy", "make the most of", "savour", "be present for", "appreciate"),
    "something": ("something", "life", "one thing", "the universe", "everything"),
    "buzzing": ("buzzing", "floating", "smiling", "on cloud nine", "glowing", "walking on air"),
    "lovely": ("lovely", "so nice", "exactly what I needed", "the best part of my day", "such a treat"),
    "everything": ("everything", "every detail", "all of it", "how it goes"),
    "period": ("week", "month", "day", "year, honestly"),
    "ref_it": ("it all", "the rest of it", "everything", "the next bit"),
    "braver": ("braver", "bolder", "better", "more adventurous", "kinder to myself"),
    "anything": ("anything", "a chat", "a distraction", "someone to vent to", "soup delivered"),
    "noregret": ("no regrets whatsoever", "zero regrets", "worth every penny", "my bank account disagrees", "why not"),
    "givein": ("I might give in", "resistance is futile", "it's happening tonight", "someone stop me", "send help"),
    "steps": ("small steps", "baby steps", "one day at a time", "it's a work in progress", "wish me luck"),
    "transit": ("train", "bus", "tram", "ferry into town"),
    "blanket": ("a blanket", "two jumpers", "my dressing gown", "a duvet", "the cat"),
    "late": ("far too late", "way past midnight", "later than I should", "until my eyes close"),
    "errand": ("the laundry", "the supermarket", "a dentist appointment", "the school run", "a mountain of emails"),
    "verdict_food": ("incredible", "fine, just fine", "worth the queue", "a bit sad", "so good I want to go back"),
    "ages": ("ages", "a long time", "years", "months"),
    "Adv": ("Honestly", "Genuinely", "Really", "Truly"),
    "gem": ("a gem", "a keeper", "an absolute star", "a good egg", "a treasure", "such a sweetheart"),
    "woe": (
        "my hair has given up",
        "the washing will never dry",
        "the cat refuses to go out",
        "I've forgotten what the sun looks like",
        "my plants are confused",
        "I've given up on nice shoes",
    ),
    "follow": ("follow me home", "get to me", "take over my evenings", "eat my weekends", "ruin my sleep"),
    "lately": ("lately", "recently", "this month", "more than usual"),
    "scene": (
        "the sunset from the bus stop",
        "a stack of pancakes with far too much syrup",
        "a very fluffy cloud shaped like a rabbit",
        "the view from a hilltop bench",
        "a rainbow over the rooftops",
        "a cosy corner with a blanket and a mug",
        "frost on the car windscreen",
        "a street full of cherry blossom",
        "a fox sitting on the garden wall",
        "a tiny snail on a leaf",
        "my messy desk",
        "a bunch of wildflowers on the kitchen table",
    ),
}
STATEMENTS = (
    "It's been {w} here all week, so I've mostly been {doing}.",
    "I've been {doing} lately and it's left me feeling {feel}.",
    "Just finished {show}, and {verdict}.",
    "We made {food} for dinner and there's enough left over for {leftover}.",
    "I'm halfway through {book} and I keep staying up {late} with it.",
    "{Person} rang me this morning and we talked about {musing} for ages.",
    "Honestly, I've been feeling {feel} this week, which is {change}.",
    "Work has been {workish}, but I'm trying not to let it {follow}.",
    "I treated myself to {treat}, {noregret}.",
    "Had the slowest morning with a coffee and {show}, {bliss}.",
    "The weather's been {w}, but I've still been {doing}.",
    "I've been craving {food} all day, {givein}.",
    "{Person} keeps sending me videos of {animals}, it's the highlight of my day.",
    "I'm trying to be better about {doing}, {steps}.",
    "Spent the evening with {person} and {food}, my favourite kind of night.",
    "I started {book} on the {transit} and missed my stop, whoops.",
    "Not much news really, just {doing} and feeling {feel}.",
    "I've been thinking a lot about {musing} {lately}.",
    "It's {w} and I'm wrapped in {blanket} pretending it's not.",
    "{Person} got me hooked on {show}, I've lost whole evenings to it.",
    "Work has been {workish}, so {doing} has been keeping me sane.",
    "{Person} and I finally had that long walk we keep promising each other, and we talked about {musing}.",
    "I found {treat} on sale and I'm {adv} thrilled about it.",
    "{Person} came round with {food} and we ended up talking about {musing}.",
    "I've been {doing}, and {person} says I seem {feel}.",
    "Tried to watch {show} but fell asleep, {adv} embarrassing.",
    "My weekend plan is {doing} and maybe {food}, nothing more ambitious.",
    "The sky was {w} on my walk and I {adv} loved it.",
    "{Person} recommended {book}, so that's my evenings sorted.",
    "I'm {adv} proud of myself for {doing} this week.",
    "Can we talk about the weather? It has been {w} for days and {woe}.",
    "{Person} and I had {food} at that new place and it was {verdict_food}.",
    "I'm feeling {feel}, probably because I've been {doing}.",
)
FEELINGS = (
    "It's made me feel so {feel}.",
    "I feel {feel} just thinking about it.",
    "Honestly, I'm still a bit {emo} about it.",
    "I keep grinning like {grin}.",
    "I needed {lift}, you know?",
    "It's been a {rough} few months, so this means {alot}.",
    "I {adv} didn't think I had it in me.",
    "I'm trying to just {enjoy} it and not overthink.",
    "It feels like {something} is finally going right.",
    "I've been {buzzing} ever since.",
)
EXCLAIM = (
    "Wow",
    "Oh my gosh",
    "No way",
    "Aww",
    "Yay",
    "Oh {o}",
    "Whoa",
    "Ahh",
    "Oh wow",
    "Amazing",
    "Honestly",
    "Ooh",
    "Wait, what",
)
PRAISE = (
    "that's amazing!",
    "I'm so proud of you!",
    "you totally deserve it.",
    "that sounds so {feel}.",
    "I love that for you.",
    "that must have felt incredible.",
    "I'm so happy for you!",
    "what a lovely thing.",
    "you're braver than you think.",
    "that made my day.",
    "you should be really proud.",
    "that's so special.",
)
CARE = (
    "I'm so sorry, {o}, that's awful.",
    "Sending you the biggest hug.",
    "Please look after yourself, {adv}.",
    "That sounds so stressful, I'm here if you need {anything}.",
    "Ugh, that's rotten luck.",
    "You don't deserve that, {adv}.",
)
ASK_FEEL = (
    "How did it feel?",
    "What was the best part?",
    "What made you decide to go for it?",
    "Were you nervous?",
    "How are you feeling about it all now?",
    "Did it live up to what you imagined?",
    "What's been the hardest part?",
)
ASK_PLAN = (
    "Are you counting down the days?",
    "Are you nervous or just excited?",
    "What are you most looking forward to?",
    "How are you feeling about it?",
)
ASK_SAD = (
    "How are you holding up?",
    "Are you doing okay, really?",
    "How are you feeling now?",
    "Is there anything I can do?",
)
ANSWERS = {
    "good": (
        "Honestly, {ref} has me feeling {feel} in a way I didn't expect.",
        "It was a lot, but {ref} reminded me I can do hard things.",
        "I think {ref} is the best thing that's happened to me in {ages}.",
        "I keep thinking about {ref}, it's been such a bright spot.",
        "Mostly {feel}, to be honest. {Ref} was exactly what I needed.",
        "{Adv}? {Ref} has made me feel {feel}.",
    ),
    "plan": (
        "Nervous, excited, all of it! {Ref} is all I can think about.",
        "I'm trying to take {ref} one day at a time, but I feel {feel}.",
        "Mostly excited! I keep daydreaming about {ref}.",
        "{Adv}, I'm {emo} about {ref} already.",
    ),
    "sad": (
        "I'm getting there. {Ref} knocked me a bit, but people have been kind.",
        "Honestly, {ref} has been rough, but I'm feeling {feel} today.",
        "Better than I was. {Ref} is just one of those things, I suppose.",
        "{Adv}, I'm okay. {Ref} has made me slow down, which might not be bad.",
    ),
}
CLOSE_SAD = (
    "Take it easy, {o}, and shout if you need anything.",
    "I'm thinking of you. Rest up, {adv}.",
    "Be gentle with yourself, okay?",
    "Sending all the love. I'll check in soon.",
)
REACT_LIKE = (
    "Ha, that's so you!",
    "Noted for future reference, {o}!",
    "I never knew that about you!",
    "Honestly, same.",
    "Ha, I'll remember that.",
    "That explains so much, haha.",
    "Oh, I love learning these things about you.",
)
ASK_LIKE = ("Has it always been like that?", "Since when?", "Where did that come from?", "Was it always that way?")
ANSWER_LIKE = (
    "Pretty much forever, {adv}.",
    "As long as I can remember, haha.",
    "{Adv}, it's a whole personality at this point.",
    "Since I was little, I think.",
    "Blame {person}, honestly.",
)
REACT_HOP = (
    "Aww, they sound like {gem}!",
    "Oh, good for them!",
    "Hold on to that one, {o}.",
    "What {gem}!",
    "Ha, I love that. Tell them I said hi!",
    "That's lovely to hear, {adv}.",
)
SUPPORT = (
    "You deserve all the good things, {o}.",
    "I'm always cheering for you, you know that, {adv}.",
    "Keep me posted, I want to hear {everything}!",
    "This is the best news I've had all {period}.",
    "I'm {adv} happy you shared that with me.",
    "You've earned this, {adv}.",
    "Can't wait to hear how {ref_it} goes.",
    "That's made me smile so much, {o}.",
    "I hope you're taking a moment to {enjoy} it.",
    "You make me want to be {braver}, you know?",
)
CALLBACK_ASK = (
    "How's {ref} going, by the way?",
    "Any update on {ref}?",
    "I keep meaning to ask, how's {ref}?",
    "Oh! What's the latest with {ref}?",
)
CALLBACK_TELL = (
    "Remember {ref} I told you about? Still on my mind, and I feel {feel} about it.",
    "Just thinking about {ref} again, it's still making me {feel}.",
    "Quick update on {ref}: all fine, and I feel {feel} about it.",
    "Oh, {ref}! I keep meaning to give you an update. I feel {feel} about it, {adv}.",
)
ASK_BACK = (
    "How have you been sleeping?",
    "Are you doing anything fun soon?",
    "Have you watched anything good lately?",
    "How's your family doing?",
    "What's been making you smile lately?",
    "Have you managed to rest at all?",
    "What about you?",
    "How's your week been?",
    "Tell me something good!",
)
REACT_SMALL = (
    "Ooh, that sounds perfect right now.",
    "Ha, that's so you.",
    "I love that!",
    "That sounds so cosy.",
    "Oh, I've heard good things about that.",
    "Same here, {adv}.",
    "That made me laugh.",
    "You deserve a slow week.",
    "Aw, that's sweet.",
    "Good for you, {o}!",
    "Oh no, haha.",
    "I'm jealous, {adv}.",
    "Ha! Love it.",
    "That's so lovely, {o}.",
    "You always make me smile.",
)
GREETINGS = (
    "Hey {o}!",
    "Hi {o}!",
    "{o}! Hi!",
    "Hello hello!",
    "Good morning, {o}!",
    "Evening, {o}!",
    "Hiya!",
    "Hey you!",
)
GREETING_MORE = (
    "It's been too long.",
    "Hope your week's been kind to you.",
    "I was just thinking about you.",
    "How are things?",
    "What's new with you?",
    "I've missed our chats.",
    "How are you doing?",
)
GOODBYES = (
    "I should get going, but this was {lovely}.",
    "Right, I'd better head off. Talk soon!",
    "Okay, bedtime for me. Night night!",
    "Gotta run! Thanks for listening, as always.",
    "I'll let you go, speak soon!",
    "Time to make {food} for dinner, catch you later!",
    "Gotta run, {o}, {errand} calls!",
    "I need to go and be productive, {adv}. This was {lovely}!",
)
GOODBYE_BACK = (
    "Bye {o}! Take care of yourself.",
    "Talk soon! Sending love.",
    "Night! Sleep well.",
    "Always a pleasure, speak soon!",
    "Take care, {o}!",
    "Bye! Give everyone my love.",
)
PROMPT = (
    "So what's new with you?",
    "Anything exciting happening your end?",
    "Okay, your turn, what's been going on?",
    "Any news?",
)
LEAD_NEWS = ("", "", "Guess what!", "Okay, I have news.", "I've been dying to tell you:", "So, big news!", "Eek!")


# -- the pairs and their stamps ------------------------------------------------------------------------------------


def _ampm(t: dt.datetime) -> str:
    return f"{t:%-I:%M} {'am' if t.hour < 12 else 'pm'} on {t:%-d %B, %Y}"


PAIRS = (
    Pair("marisol_kwame", ("Marisol", "Kwame"), _ampm, dt.date(2023, 3, 12)),
    Pair("odile_rafferty", ("Odile", "Rafferty"), lambda t: f"~ {t:%A, %-d %B %Y, %H:%M} ~", dt.date(2023, 6, 5)),
    Pair("sunniva_dario", ("Sunniva", "Dario"), lambda t: f"[{t:%d.%m.%Y %H:%M}]", dt.date(2024, 1, 20)),
)


def fresh6_conversations(count: int = 3, seed: int = 0) -> list[Conversation]:
    """The first ``count`` chats, written from ``seed`` (the same seed writes the same chats)."""
    return [_Writer(pair, random.Random(f"fresh6:{seed}:{pair.name}")).write() for pair in PAIRS[:count]]


def time_phrase(rng: random.Random, day: dt.date, plan: bool) -> str:
    """A phrase placing a past event (or a plan) relative to ``day``."""
    phrase = rng.choice(PLAN if plan else PAST)
    return phrase.format(weekday=WEEKDAYS[rng.randrange(7)])


def time_answer(phrase: str, day: dt.date) -> str:
    """What a reader works out from ``phrase`` said on ``day``: a date, a weekend, a week or a month."""
    if phrase == "yesterday":
        return f"{day - dt.timedelta(days=1):%-d %B %Y}"
    if phrase.startswith("last ") and phrase[5:].title() in WEEKDAYS:
        back = (day.weekday() - WEEKDAYS.index(phrase[5:].title())) % 7 or 7
        return f"{day - dt.timedelta(days=back):%-d %B %Y}"
    if phrase in ("last weekend", "next weekend"):
        saturday = day - dt.timedelta(days=(day.weekday() - 5) % 7 or 7)
        if saturday + dt.timedelta(days=1) >= day:  # this weekend is not over: last weekend is the one before
            saturday -= dt.timedelta(days=7)
        if phrase == "next weekend":  # the coming one, or the one after when it starts tomorrow
            saturday = day + dt.timedelta(days=(5 - day.weekday()) % 7 or 7)
            saturday += dt.timedelta(days=7 if (saturday - day).days < 2 else 0)
        return f"the weekend of {saturday:%-d %B} to {saturday + dt.timedelta(days=1):%-d %B %Y}"
    if phrase == "last week":
        return f"the week before {day:%-d %B %Y}"
    if phrase == "two weeks ago":
        return f"two weeks before {day:%-d %B %Y}"
    if phrase == "in two weeks":
        return f"two weeks after {day:%-d %B %Y}"
    first = day.replace(day=1)
    month = first - dt.timedelta(days=1) if phrase == "last month" else first + dt.timedelta(days=32)
    return f"{month:%B %Y}"


def _mood(event: Event) -> str:
    """How the friend meets it: ``sad`` news with sympathy, a ``plan`` with excitement, the rest with praise."""
    return "sad" if "sad" in event.tags else "plan" if event.plan else "good"


def _mine(ref: str) -> str:
    """A reference back in the teller's own words ("your flat" -> "my flat")."""
    return ref.replace("your ", "my ")


@dataclass
class _Item:
    """Something scheduled for a session: an event's telling or a later callback, a list item, a chain hop, a like."""

    kind: str
    who: int
    label: str
    text: str = ""
    event: Event | None = None


class _Writer:
    """Writes one pair's chat: stamped sessions of warm small talk with each person's news told and talked over."""

    def __init__(self, pair: Pair, rng: random.Random) -> None:
        self.pair, self.rng = pair, rng
        self.chat = Conversation(pair.name, "friends")
        self.evidence: dict[str, list[int]] = {}
        self.answers: dict[str, str] = {}
        self.said: set[str] = set()
        self.heading = ""

    def write(self) -> Conversation:
        rng, names = self.rng, self.pair.names
        sessions = rng.randint(26, 32)
        plan: dict[int, list[_Item]] = {n: [] for n in range(sessions)}

        def place(item: _Item, lo: int, hi: int) -> int:
            """Into the least busy session in [lo, hi)."""
            fewest = min(len(plan[n]) for n in range(lo, hi))
            at = rng.choice([n for n in range(lo, hi) if len(plan[n]) == fewest])
            plan[at].append(item)
            return at

        def spread(items: list[_Item]) -> None:
            """Into distinct sessions, in order."""
            for item, at in zip(items, sorted(rng.sample(range(sessions), len(items))), strict=True):
                plan[at].append(item)

        questions: list[tuple[str, str, tuple[str, ...], str, tuple[str, ...]]] = []
        lists = list(LISTS)
        owners = {kind: rng.randrange(2) for kind in lists}
        for n, kind in enumerate(lists):
            who = owners[kind]
            asked, items = LISTS[kind]
            chosen = rng.sample(items, rng.randint(2, 4))
            spread([_Item("list", who, f"l{n}.{i}", text) for i, (_, text) in enumerate(chosen)])
            labels = tuple(f"l{n}.{i}" for i in range(len(chosen)))
            keys = tuple(key for key, _ in chosen)
            questions.append(("multi_hop", rng.choice(asked).format(X=names[who]), labels, ", ".join(keys), keys))

        events = list(EVENTS)
        rng.shuffle(events)
        told: list[tuple[Event, int]] = []
        for event in events:
            if len(told) == 14:
                break
            who = rng.randrange(2)
            if any(owners.get(tag) == who for tag in event.tags):  # it would answer that list too
                who = 1 - who
                if any(owners.get(tag) == who for tag in event.tags):
                    continue
            told.append((event, who))
        for n, (event, who) in enumerate(told):
            at = place(_Item("event", who, f"e{n}", event=event), 0, sessions - 2)
            for later in sorted(rng.sample(range(at + 1, sessions), min(rng.randint(0, 2), sessions - at - 1))):
                plan[later].append(_Item("callback", who, "", rng.choice(event.refs), event))
            if n < 7:
                questions.append(
                    ("single_hop", event.question.format(X=names[who]), (f"e{n}.d",), event.answer, (event.clue,))
                )
            elif n < 12:  # asked of the other one, who never lived it
                questions.append(("wrong_speaker", event.question.format(X=names[1 - who]), (), "", (event.clue,)))
        for n in sorted(rng.sample(range(14), 6)):
            event, who = told[n]
            questions.append(("temporal", event.when_question.format(X=names[who]), (f"e{n}.w",), "", (event.key,)))

        guests = rng.sample(NAMES, 3)
        for n, (first, second, asked, answer, key) in enumerate(rng.sample(CHAINS, 3)):
            who = rng.randrange(2)
            spread(
                [
                    _Item("hop", who, f"h{n}{part}", hop.format(N=guests[n]))
                    for part, hop in (("a", first), ("b", second))
                ]
            )
            questions.append(("multi_hop", asked.format(X=names[who]), (f"h{n}a", f"h{n}b"), answer, (key,)))
        for n, (lines, asked, answer, keys) in enumerate(rng.sample(INFERENCE, 5)):
            who = rng.randrange(2)
            spread([_Item("like", who, f"i{n}.{i}", line) for i, line in enumerate(lines)])
            labels = tuple(f"i{n}.{i}" for i in range(len(lines)))
            questions.append(("inference", asked.format(X=names[who]), labels, answer, tuple(keys.split("|"))))
        for asked, keys in rng.sample(UNRAISED, 5):
            questions.append(("unanswerable", asked.format(X=rng.choice(names)), (), "", keys))

        when = dt.datetime.combine(self.pair.start, dt.time(rng.randint(8, 22), rng.randrange(60)))
        for number in range(sessions):
            if number:
                days = rng.randint(3, 12)
                when = dt.datetime.combine(
                    when.date() + dt.timedelta(days=days), dt.time(rng.randint(8, 22), rng.randrange(60))
                )
            self.session(when, plan[number])
        self.chat.questions = [
            Asked(
                text,
                kind,
                tuple(i for label in labels for i in self.evidence[label]),
                self.answers[labels[0]] if kind == "temporal" else answer,
                keys,
            )
            for kind, text, labels, answer, keys in questions
        ]
        rng.shuffle(self.chat.questions)
        return self.chat

    # -- a session -------------------------------------------------------------------------------------------

    def session(self, when: dt.datetime, items: list[_Item]) -> None:
        rng = self.rng
        self.heading = self.pair.stamp(when)
        start, target = len(self.chat.messages), rng.randint(16, 25)
        first = rng.randrange(2)
        self.say(first, self.compose(lambda: f"{self.greet(first)} {rng.choice(GREETING_MORE)}"))
        self.say(1 - first, self.compose(lambda: f"{self.greet(1 - first)} {self.small_line()}"))
        rng.shuffle(items)
        for item in items:
            self.small(rng.randint(0, 2))
            self.tell(item, when.date())
        while len(self.chat.messages) - start < target - 2:
            self.small(1)
        who = rng.randrange(2)
        self.say(who, self.compose(lambda: self.fill(rng.choice(GOODBYES), who)))
        self.say(1 - who, self.compose(lambda: self.fill(rng.choice(GOODBYE_BACK), 1 - who)))

    def tell(self, item: _Item, day: dt.date) -> None:
        rng, who = self.rng, item.who
        if item.event and item.kind == "event":
            self.event(item, item.event, day)
        elif item.event:
            self.callback(item, item.event)
        elif item.kind == "like":  # a like or dislike, and whether it was always so
            self.evidence[item.label] = [self.say(who, self.compose(lambda: item.text, once=True))]
            if rng.random() < 0.5:
                self.say(1 - who, self.compose(lambda: self.fill(rng.choice(REACT_LIKE), 1 - who)))
            else:
                self.say(
                    1 - who,
                    self.compose(lambda: f"{self.fill(rng.choice(REACT_LIKE), 1 - who)} {rng.choice(ASK_LIKE)}"),
                )
                self.say(who, self.compose(lambda: self.fill(rng.choice(ANSWER_LIKE), who)))
        elif item.kind == "hop":  # someone in the teller's life, and what they did
            text = item.text if rng.random() < 0.6 else f"{item.text} {self.feeling()}"
            self.evidence[item.label] = [self.say(who, self.compose(lambda: text, once=True))]
            self.say(1 - who, self.compose(lambda: self.fill(rng.choice(REACT_HOP), 1 - who)))
        else:  # a list item: something the teller did, with a feeling, talked over
            text = item.text if rng.random() < 0.5 else f"{item.text} {self.feeling()}"
            self.evidence[item.label] = [self.say(who, self.compose(lambda: text, once=True))]
            self.say(1 - who, self.compose(lambda: f"{self.react(1 - who)} {rng.choice(ASK_FEEL)}"))
            self.say(who, self.compose(lambda: self.feeling()))

    def event(self, item: _Item, event: Event, day: dt.date) -> None:
        """News, the friend's reaction and question, the detail (said or shown), then feelings."""
        rng, who = self.rng, item.who
        phrase = time_phrase(rng, day, event.plan)
        self.answers[f"{item.label}.w"] = time_answer(phrase, day)
        news = event.news.format(when=phrase)
        lead = rng.choice(LEAD_NEWS)
        mood = _mood(event)
        if rng.random() < 0.25:  # drawn out by the friend first
            self.say(1 - who, self.compose(lambda: rng.choice(PROMPT)))
            lead = rng.choice(("Well...", "Funny you should ask!", "Actually, yes!"))
        if mood == "sad":
            lead = rng.choice(("", "Ugh, so.", "Bit of a rubbish week, to be honest."))
        detail = event.photo if event.photo and rng.random() < 0.5 else event.detail
        how = rng.choice(("asked", "asked", "asked", "next", "together"))
        if how == "together":
            told = self.say(who, self.compose(lambda: f"{lead} {news} {detail}".strip(), once=True))
            self.evidence[f"{item.label}.w"] = self.evidence[f"{item.label}.d"] = [told]
        else:
            said = f"{lead} {news}".strip()
            self.evidence[f"{item.label}.w"] = [self.say(who, self.compose(lambda: said, once=True))]
            if how == "asked":
                self.say(1 - who, self.compose(lambda: f"{self.react(1 - who, mood)} {event.ask}"))
            if rng.random() < 0.4 and mood != "sad":
                detail = f"{detail} {self.feeling()}"
            self.evidence[f"{item.label}.d"] = [self.say(who, self.compose(lambda: detail, once=True))]
        asks = {"good": ASK_FEEL, "plan": ASK_PLAN, "sad": ASK_SAD}[mood]
        self.say(1 - who, self.compose(lambda: f"{self.react(1 - who, mood)} {rng.choice(asks)}"))
        ref = _mine(rng.choice(event.refs))
        self.say(who, self.compose(lambda: self.fill(rng.choice(ANSWERS[mood]), who, ref=ref)))
        if rng.random() < 0.6:
            close = CLOSE_SAD if mood == "sad" else SUPPORT
            self.say(1 - who, self.compose(lambda: self.fill(rng.choice(close), 1 - who)))

    def callback(self, item: _Item, event: Event) -> None:
        """A later session refers back to the event, without its detail or its date."""
        rng, who, mood = self.rng, item.who, _mood(event)
        if rng.random() < 0.5:
            self.say(1 - who, self.compose(lambda: self.fill(rng.choice(CALLBACK_ASK), 1 - who, ref=item.text)))
            self.say(who, self.compose(lambda: self.fill(rng.choice(ANSWERS[mood]), who, ref=_mine(item.text))))
        else:
            self.say(who, self.compose(lambda: self.fill(rng.choice(CALLBACK_TELL), who, ref=_mine(item.text))))
            close = CLOSE_SAD if mood == "sad" else SUPPORT
            self.say(1 - who, self.compose(lambda: self.fill(rng.choice(close), 1 - who)))

    # -- composed lines ------------------------------------------------------------------------------------------

    def fill(self, template: str, who: int, ref: str = "") -> str:
        rng = self.rng
        slots = {k: rng.choice(v) for k, v in POOLS.items()}
        slots["Person"] = slots["person"][0].upper() + slots["person"][1:]
        text = template.format(o=self.pair.names[1 - who], ref=ref, Ref=ref[:1].upper() + ref[1:], **slots)
        return text

    def greet(self, who: int) -> str:
        return self.fill(self.rng.choice(GREETINGS), who)

    def small_line(self, count: int = 1) -> str:
        """``count`` pieces of one's own life, each from its own template."""
        return " ".join(self.fill(template, 0) for template in self.rng.sample(STATEMENTS, count))

    def feeling(self) -> str:
        return self.fill(self.rng.choice(FEELINGS), 0)

    def react(self, who: int, mood: str = "good") -> str:
        rng = self.rng
        if mood == "sad":
            return self.fill(rng.choice(CARE), who)
        said = f"{rng.choice(EXCLAIM)}, {rng.choice(PRAISE)}"
        if rng.random() < 0.4:
            said = f"{said} {rng.choice(SUPPORT)}"
        return self.fill(said, who)

    def small(self, exchanges: int) -> None:
        for _ in range(exchanges):
            self.exchange(self.rng.randrange(2))

    def exchange(self, who: int) -> None:
        """Small talk: a line or two of one's own life (now and then a photo), an answer, sometimes a question back."""
        rng = self.rng
        lines = rng.choice((0, 1, 2, 2, 3, 3, 4))  # 0: a photo
        if lines:
            self.say(who, self.compose(lambda: self.small_line(lines)))
        else:
            self.say(who, self.compose(lambda: f"[shares a photo of {rng.choice(POOLS['scene'])}] {self.feeling()}"))
        roll = rng.random()
        if roll < 0.2:
            more = lambda: rng.choice(ASK_BACK)  # noqa: E731
        elif roll < 0.4:
            more = lambda: f"{self.small_line()} {rng.choice(ASK_BACK)}"  # noqa: E731
        elif roll < 0.7:
            more = self.small_line
        else:
            more = lambda: self.small_line(2)  # noqa: E731
        self.say(1 - who, self.compose(lambda: f"{self.fill(rng.choice(REACT_SMALL), 1 - who)} {more()}"))

    def compose(self, write: Callable[[], str], once: bool = False) -> str:
        """A message not said before in this chat: written again (or given a feeling more) until it is new."""
        for _ in range(30):
            text = write()
            if text not in self.said:
                return text
        assert not once, text
        while text in self.said:
            text = f"{text} {self.feeling()}"
        return text

    def say(self, who: int, text: str) -> int:
        self.said.add(text)
        content = f"{self.pair.names[who]}: {text}"
        if self.heading:  # a session's first message carries its stamp
            content, self.heading = f"{self.heading}\n{content}", ""
        self.chat.messages.append({"role": "user" if who == 0 else "assistant", "content": content})
        return len(self.chat.messages) - 1

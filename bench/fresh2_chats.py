"""A second held-out set of long conversations (``BENCH_DATA=fresh2``), written apart from recall and the other sets.

What it models, and why: long public conversations are harder than the first held-out set (bench/fresh_chats.py)
in three ways this set copies on purpose.

* **People write paragraphs.** Most messages run two to four sentences (median ~45 tokens), some are one word
  ("ha", "omg") and some run on for 150-300 tokens, and the sentence a question needs sits inside such a paragraph
  beside the weather, work and the other person's news.
* **Topics recur.** Each person has one or two threads that come back in most sessions (a painting hobby, a kitchen
  renovation, a son's school, rheumatoid arthritis, an orchestra, an allotment, a narrowboat, a toddler's nursery):
  the topic's words match a dozen sessions of chatter, and a question names one instance by its circumstances ("the
  painting after the camping trip", "the concert in the cathedral"), so only that instance's details single out its
  evidence.
* **One chat is with an AI assistant**: the person tells life facts in passing inside requests (an email to a
  teacher, dinners for a newly diagnosed husband) and the assistant answers at length, hundreds of tokens of
  general advice that share every topic word. She never gives her name, so her questions say "I" and "my", as she
  would ask her assistant.

Five chats (three between friends, a father and his daughter, one with an assistant), 30-36 sessions over most of a
year, each writing its session dates its own way. Questions come in nine kinds: ``single_hop``, ``paraphrased`` (no
content word shared with the evidence, the fact alone in its message), ``multi_hop`` (across sessions), ``temporal``
(the answer is the evidence session's date, or the day "yesterday" / "last Tuesday" names relative to it), ``counting``
(every message telling one instance), ``latest`` (a value that changed: the message with its last value), ``inference``
("Would X likely enjoy ...?": X's stated likes and dislikes), ``swapped`` (asked of the wrong person: the evidence is
the message telling it of the other one) and ``unanswerable`` (never raised: no evidence, its words nowhere in the
chat). A seed places the same stories anew: which sessions hold the news, the dates, the chatter around it and its
length.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

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
    "unanswerable",
)


@dataclass(frozen=True)
class Asked(Question):
    answer: str = ""
    keys: tuple[str, ...] = ()
    """One word each evidence message holds, in the evidence's order (unanswerable: words the chat never uses)."""


@dataclass(frozen=True)
class Fact:
    who: int
    text: str
    alone: bool = False
    """Told in a message of its own (paraphrased questions are checked against the whole message)."""
    topic: str = ""
    """Assistant chat: which advice the answer draws on."""


@dataclass(frozen=True)
class Ask:
    kind: str
    text: str
    facts: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    answer: str = ""


@dataclass(frozen=True)
class Pair:
    name: str
    names: tuple[str, str]
    dated: Callable[[dt.date], str]
    talk: tuple[tuple[str, ...], tuple[str, ...]]
    """Each speaker's own sentences: their days, and their recurring topics without any one instance's details."""
    short: tuple[str, ...]
    facts: tuple[tuple[str, Fact], ...]
    asks: tuple[Ask, ...]
    start: dt.date
    advice: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Assistant chat only: the assistant's sentences per topic (``talk[0]`` is then "topic|request")."""

    @property
    def assistant(self) -> bool:
        return bool(self.advice)


def _f(key: str, who: int, text: str, *, alone: bool = False, topic: str = "") -> tuple[str, Fact]:
    return key, Fact(who, text, alone, topic)


# -- Maya (paints; a pharmacist) and Dan (renovating a kitchen), friends since school ------------------------------

MAYA_DAN = Pair(
    name="maya_dan",
    names=("Maya", "Dan"),
    dated=lambda d: f"{d:%a %-d %b %Y} ·",
    start=dt.date(2023, 2, 27),
    short=("ha", "omg", "yes!!", "ok", "same", "oh no", "lol", "❤️", "wow", "true", "eek", "nice one", "ugh"),
    talk=(
        (
            "The pharmacy was chaos today, half the town wanted their flu jab at once.",
            "I've been painting most evenings this week, mostly badly.",
            "Thursday class was good, we did skies, which are harder than they look.",
            "I keep buying paper I can't afford and then being too scared to use it.",
            "Jo's been working late so I've had the flat to myself, which means painting on the kitchen table.",
            "My hands smell permanently of turps at the moment.",
            "I started a new painting and then scraped it off. Artistic temperament, apparently.",
            "Did you see the sunset on Sunday? I tried to paint it from memory and it came out brown.",
            "Work rota for next month is out and I've got three Saturdays, so that's the markets off.",
            "I'm trying to be better at sending you messages that aren't just complaints.",
            "My mum rang to ask if I'm still 'doing the painting thing', which I am, Mum.",
            "The bus was forty minutes late again, I read half a book at the stop.",
            "I've been sketching people on the train, very sneakily.",
            "Honestly I need a holiday that isn't a weekend in a field.",
            "Jo made a curry that nearly took the roof of my mouth off, so that was Tuesday.",
            "I've put a few paintings up on the wall in the hall so I have to look at them.",
            "Everyone in the class is retired except me and a very quiet lad called Sunny.",
            "The landlord's finally fixed the boiler in the flat, it only took him five weeks.",
            "Jo and I are trying to save for a deposit, so it's beans on toast and library books for a while.",
            "I had a customer today who wanted to argue about the price of plasters for twenty minutes.",
            "I've joined a sketching group online, everyone's painting their breakfast.",
            "Got caught in the rain on the way home and my sketchbook is now papier-mâché.",
            "I tried painting outside at lunch but the wind kept flipping the paper over.",
            "Jo bought me a proper easel for no reason, I think to stop me using the ironing board.",
            "Half my colleagues are off with the same cold, so I've been doing doubles.",
            "I'm reading a book about Turner and feeling very inadequate.",
            "There's a fox that sits on the wall behind our flat every night, I've drawn it about ten times.",
            "Couldn't sleep so I sorted all my paints by colour at 2am, which was weirdly calming.",
            "My back is killing me from hunching over the table, I need a proper chair.",
            "Went to a gallery in Leeds and stood in front of one painting for twenty minutes.",
            "Jo's parents are visiting so the flat has to look like adults live here.",
            "I'm thinking of doing a painting a day for a month, tell me I'm mad.",
        ),
        (
            "The kitchen is still a building site, we're washing up in the bath.",
            "Gary says next week for the plastering, but Gary says a lot of things.",
            "Ellie has decided she wants to be a vet, last week it was a pilot.",
            "Work is fine, lots of spreadsheets, nobody is on fire.",
            "We've been living on microwave meals and toast for a fortnight.",
            "Sarah and I had a proper row about cupboard handles. Cupboard handles!",
            "The dust gets everywhere, I found plaster in my sock drawer.",
            "Spent Saturday at the builders' merchant, which is my idea of a good day out now apparently.",
            "The kitchen's going to look great eventually, I keep telling myself.",
            "I went for a run for the first time in months and now I can't walk downstairs.",
            "Ellie's got a school trip to the Deep next week, she's beside herself.",
            "We ate a takeaway on the stairs again because there's nowhere else to sit.",
            "My dad came round to 'help' with the kitchen and mostly told me I was doing it wrong.",
            "Tried to put up a shelf, now there's a shelf-shaped hole in the wall instead.",
            "The car needs a new clutch, because of course it does.",
            "Sarah's started a spreadsheet of every kitchen receipt and it's terrifying.",
            "I think the builders have been using our toilet as a storage cupboard.",
            "It's so quiet at work this week that I tidied my desk, that's how quiet.",
            "Ellie lost a tooth and the tooth fairy was very late because the tooth fairy forgot.",
            "We've been washing pans in a bowl on the patio, very glamorous.",
            "Sarah's booked us a weekend away once the kitchen's done, as a carrot.",
            "Someone dumped a mattress in our skip overnight, so that's ours now.",
            "I've learnt more about extractor fans this month than anyone should.",
            "Work sent me on a course about spreadsheets, which I could have taught.",
            "I keep watching kitchen videos at midnight instead of sleeping.",
            "Ellie's made a sign for the kitchen door that says danger zone, which is fair.",
            "My brother keeps asking when the kitchen will be done so he can come round for a barbecue.",
            "We found out the hard way that the fridge doesn't fit through the back door.",
            "The dust sheets have become part of the furniture at this point.",
            "I had a dream about grout, I think I need a holiday.",
            "Five-a-side was called off so I went round the park with Ellie instead.",
            "Sarah wants open shelves, I want cupboards, we are at an impasse.",
        ),
    ),
    facts=(
        _f(
            "crowds",
            0,
            "I've realised I can't do busy places any more, big crowds and loud music just drain me for days, "
            "I'd rather have a quiet room and a sketchbook.",
        ),
        _f(
            "plans",
            1,
            "We finally signed off the kitchen plans! Knocking through into the dining room, an island in the "
            "middle, and the builder, a bloke called Gary Price, reckons eight weeks. Sarah says multiply by two.",
        ),
        _f(
            "camping",
            0,
            "We're back from the camping weekend in Borrowdale. It rained two nights out of three and the tent "
            "leaked onto Jo's sleeping bag, but on the last morning the mist lifted off Derwentwater and I just sat "
            "there with my coffee.",
        ),
        _f(
            "heron",
            0,
            "Since we got back from the Lakes I've been obsessed with the heron that stood in the shallows the whole "
            "time we were packing up, so I did him in watercolour on Sunday, grey on grey with ochre in the reeds.",
        ),
        _f(
            "noshow1",
            1,
            "Gary didn't turn up today. Or yesterday. His van's been outside a house on Moorland Road all week.",
        ),
        _f(
            "oak",
            1,
            "We've gone for oak worktops, Sarah wanted the warm look and I like that you can sand out the scratches.",
        ),
        _f(
            "irene",
            0,
            "Irene, the new tutor at the Thursday class, has banned brushes for a month. Palette knives only. I made "
            "a glorious mess of a pear tonight.",
        ),
        _f(
            "newspaper",
            1,
            "Lifting the old lino in the dining room we found a newspaper from March 1936 under the floorboards, the "
            "Yorkshire Evening Post, with an advert for a wireless set at four guineas.",
            alone=True,
        ),
        _f(
            "history",
            1,
            "I could happily spend a whole day in a museum about old houses, how people cooked and washed and slept, "
            "Sarah finds it baffling.",
        ),
        _f(
            "sale1",
            0,
            "I SOLD A PAINTING. The little Whitby harbour one, at the Saltaire makers' market on Saturday, to a "
            "retired vet who said it looked like where she grew up. £85!",
            alone=True,
        ),
        _f(
            "quartz",
            1,
            "Change of plan on the worktops, the oak quote came back double and Gary says it'll stain round the "
            "sink anyway, so we're doing quartz. White with grey flecks. I'm in mourning.",
        ),
        _f(
            "noshow2",
            1,
            "Gary's gone missing again, three days this time, says his van broke down. The dining room has no ceiling.",
        ),
        _f(
            "gran90",
            0,
            "Gran turns ninety next month and Mum's asked me to paint the cottage in Portstewart where she grew up, "
            "from an old photo with a corner missing. No pressure.",
            alone=True,
        ),
        _f(
            "tiles",
            1,
            "Tiles are in! Green zellige behind the hob, every one slightly different, and the electrician, Bev, "
            "moved the sockets so the kettle can live somewhere sensible.",
        ),
        _f(
            "granparty",
            0,
            "Gave Gran the cottage painting yesterday at her party. She said nothing for ages and then asked who "
            "had done the roses by the door, because she planted them in 1956.",
        ),
        _f(
            "plaster",
            1,
            "The plasterer came last Tuesday and did the whole ceiling in a day, whistling the entire time, smooth "
            "as an egg.",
        ),
        _f(
            "mercer",
            0,
            "The Mercer open exhibition turned down the heron. Two hundred and forty entries for thirty spaces, so "
            "it was a long shot, but it stings.",
        ),
        _f(
            "sale2",
            0,
            "Second sale! The palette-knife pears went to a café in Ilkley that wants them by the counter, £140, "
            "which is more than I'd ever dare ask.",
        ),
        _f(
            "noshow3",
            1,
            "No Gary this morning, third time he's not shown up. I made tea for an empty kitchen out of habit.",
        ),
        _f(
            "iroko",
            1,
            "Final answer on worktops, I promise: the quartz firm went bust with our deposit, so it's reclaimed "
            "iroko from the salvage yard in Dewsbury.",
        ),
        _f(
            "oils",
            0,
            "I've gone over to oils for good, the watercolours are in a box under the bed and I don't miss them.",
            alone=True,
        ),
        _f(
            "manor",
            0,
            "Got into the autumn show at the Manor House with the Borrowdale mist picture, they hang it next Friday.",
        ),
        _f(
            "dinner",
            1,
            "We cooked our first dinner in the new kitchen last night! Eleven weeks, not eight, about four grand "
            "over, but Ellie did her homework at the island and I got ridiculously emotional.",
        ),
        _f(
            "sale3",
            0,
            "Someone bought the Borrowdale mist one on the last day of the Manor House show, £210. Irene says I "
            "have to stop undercharging now.",
        ),
    ),
    asks=(
        Ask("single_hop", "What did Maya paint after the camping trip?", ("heron",), ("heron",), "a heron"),
        Ask("single_hop", "Who is the builder doing Dan's kitchen?", ("plans",), ("Gary",), "Gary Price"),
        Ask("single_hop", "What colour are the tiles behind Dan's hob?", ("tiles",), ("green",), "green zellige"),
        Ask("single_hop", "Which tutor banned brushes at Maya's class?", ("irene",), ("Irene",), "Irene"),
        Ask(
            "paraphrased",
            "What did Dan's household uncover beneath their feet?",
            ("newspaper",),
            ("1936",),
            "a 1936 paper",
        ),
        Ask("paraphrased", "Who was the first buyer of Maya's artwork?", ("sale1",), ("vet",), "a retired vet"),
        Ask("paraphrased", "Which medium has Maya switched to permanently?", ("oils",), ("oils",), "oils"),
        Ask(
            "multi_hop",
            "Which painting of Maya's was turned down by an exhibition and where had she seen its subject?",
            ("heron", "mercer"),
            ("heron", "heron"),
            "the heron, at Derwentwater while packing up from camping",
        ),
        Ask(
            "multi_hop",
            "Which picture did Maya sell at the Manor House show, and where was she when she saw that scene?",
            ("camping", "sale3"),
            ("Derwentwater", "Borrowdale"),
            "the Borrowdale mist, seen on the camping weekend",
        ),
        Ask("temporal", "When did Maya give her gran the cottage painting?", ("granparty",), ("Gran",)),
        Ask("temporal", "When did the plasterer do Dan's ceiling?", ("plaster",), ("plasterer",)),
        Ask(
            "counting",
            "How many paintings has Maya sold?",
            ("sale1", "sale2", "sale3"),
            ("SOLD", "sale", "bought"),
            "three",
        ),
        Ask(
            "counting",
            "How many times did Gary fail to turn up?",
            ("noshow1", "noshow2", "noshow3"),
            ("Gary", "Gary", "Gary"),
            "three",
        ),
        Ask("latest", "What are Dan's worktops made of in the end?", ("iroko",), ("iroko",), "reclaimed iroko"),
        Ask("latest", "What was the most recent price Maya got for a painting?", ("sale3",), ("210",), "£210"),
        Ask(
            "inference",
            "Would Maya likely enjoy a weekend at a big music festival?",
            ("crowds",),
            ("crowds",),
            "no: crowds and loud music drain her",
        ),
        Ask(
            "inference",
            "Would Dan likely enjoy a guided tour of a restored Victorian workers' cottage?",
            ("history",),
            ("museum",),
            "yes: he loves how people lived in old houses",
        ),
        Ask("swapped", "What did Maya find under her dining room floor?", ("newspaper",), ("newspaper",), "Dan did"),
        Ask("swapped", "Who bought Dan's painting of Whitby harbour?", ("sale1",), ("Whitby",), "Maya's, a vet"),
        Ask("single_hop", "Who moved the sockets in Dan's kitchen?", ("tiles",), ("Bev",), "Bev, the electrician"),
        Ask("single_hop", "Where did Maya go camping?", ("camping",), ("Borrowdale",), "Borrowdale"),
        Ask(
            "paraphrased",
            "Which building was Maya commissioned to depict for an elderly relative's milestone?",
            ("gran90",),
            ("cottage",),
            "her gran's childhood cottage in Portstewart",
        ),
        Ask("temporal", "When did Dan first cook dinner in the new kitchen?", ("dinner",), ("dinner",)),
        Ask(
            "counting",
            "How many exhibitions has Maya entered a painting in?",
            ("mercer", "manor"),
            ("Mercer", "Manor"),
            "two",
        ),
        Ask(
            "multi_hop",
            "What was the heron painted in, and does Maya still use that?",
            ("heron", "oils"),
            ("watercolour", "watercolours"),
            "watercolour; no, she has gone over to oils",
        ),
        Ask("swapped", "Which worktops did Maya choose in the end?", ("iroko",), ("iroko",), "Dan did: iroko"),
        Ask("unanswerable", "What is the name of Dan's dog?", keys=("dog",)),
        Ask("unanswerable", "Which football team does Maya support?", keys=("football",)),
        Ask("unanswerable", "How much did Dan's plumber charge for the radiator?", keys=("plumber", "radiator")),
    ),
)

# -- Priya (her son Arjun's school) and Lou (rheumatoid arthritis), mums who met at antenatal class --------------

PRIYA_LOU = Pair(
    name="priya_lou",
    names=("Priya", "Lou"),
    dated=lambda d: f"{d:%d/%m/%Y}:",
    start=dt.date(2023, 1, 9),
    short=("haha", "oh lou", "noooo", "yes", "ok x", "😂", "brilliant", "hmm", "fair", "same tbh", "xx", "oof"),
    talk=(
        (
            "School run was a disaster this morning, one shoe, no book bag, and it was raining sideways.",
            "Arjun has decided he is too old for a goodnight story, which broke my heart a bit.",
            "Work has been relentless, I've had three audits in a fortnight.",
            "The school WhatsApp group is out of control again, forty messages about a lost jumper.",
            "Dev's away with work till Friday so it's just me and the small tyrant.",
            "Homework this week is a model of a Roman villa, which means it's my homework.",
            "We've had the in-laws staying, so I'm tired in a very specific way.",
            "Arjun's reading under the covers with a torch again, I pretend I don't know.",
            "I signed up to help at the school fair, which I will regret.",
            "Had a proper lie-in on Sunday, till half eight, felt like a spa day.",
            "I've started swimming before work, twice so far, so it's a habit now.",
            "The head sent another letter home about nits, so I've been checking heads all evening.",
            "Arjun wants a phone because 'everyone' has one. Everyone is two boys.",
            "Made a vat of dal on Sunday, we'll be eating it till Thursday.",
            "Got stuck in a meeting that could have been an email, twice, on the same day.",
            "He came home from school with a worm in his pocket and wanted to keep it.",
            "Dev's mum has started sending Arjun chess puzzles by post, which he adores.",
            "The washing machine flooded the utility room, so that was my evening.",
            "I took a day off and spent it doing admin, which was a terrible use of a day off.",
            "Arjun and his friends have invented a playground game with rules nobody can explain.",
            "We went to the coast on Sunday, freezing, chips on the sea wall, perfect.",
            "Work's restructuring again, everyone is pretending not to be worried.",
            "I've been trying to read a book a month, I'm on page twelve of this month's.",
            "Arjun asked me what a mortgage is and then looked very sorry for me.",
            "Forgot it was non-uniform day, Arjun was the only one in a jumper, he'll never forgive me.",
            "The garden's a jungle, I keep meaning to get the mower out.",
            "Dev and I watched a whole film without falling asleep, a first this year.",
            "The school has a new lollipop lady and Arjun is now her biggest fan.",
            "I've been on hold with the council for forty minutes listening to Vivaldi.",
            "Birthday party season has started, three in one weekend, I'm broke and deaf.",
        ),
        (
            "Hands are stiff this morning, took me ages to do up my coat.",
            "Not a bad week joint-wise, touch wood.",
            "The library's doing a Lego club now and it's the loudest hour of my week.",
            "I'm so tired of being tired, if that makes sense.",
            "Ben has taken over the cooking while my wrists are bad, we've had pasta six days running.",
            "Rheumatology rang to move my appointment again, third time.",
            "Finished another hat, this one has a bobble.",
            "I did the hydrotherapy pool this week, lots of old ladies and me, it was glorious.",
            "My knees are predicting rain better than the Met Office at the moment.",
            "Molly got picked for the netball team and is insufferable about it.",
            "Blood tests again tomorrow, my arms look like a pin cushion.",
            "Had a good day on Monday so obviously overdid it and paid for it today.",
            "Work is the usual, returns, fines, somebody's sandwich in a book.",
            "I've been reading a lot since I can't do much else, three books this week.",
            "Joints are behaving, mostly, which I say quietly in case they hear.",
            "Molly's doing a sponsored silence on Friday, I've sponsored her a tenner an hour.",
            "The new bus driver waits for me to sit down before pulling off, I could kiss him.",
            "Ben's mum has knitted me a pair of wrist warmers, they're hideous and I love them.",
            "Someone returned a library book that had been out since 2009, very sheepish.",
            "I've been doing the crossword every morning, it's the only exercise my hands enjoy.",
            "Molly has a new boyfriend, apparently, and I'm not allowed to ask about him.",
            "I've had to buy one of those gadgets for opening tins, I feel about ninety.",
            "The weather's turned and my joints know before the forecast does.",
            "Ben took me out for dinner and had to cut up my steak, very romantic.",
            "I've started a podcast about pain management and I'm not sure it's helping.",
            "The hot water bottle has become my closest friend.",
            "We had a staff meeting about noise in the library, ironic given the Lego club.",
            "I'm trying to go to bed at ten every night, it's a strict regime.",
            "Molly's report came and it's mostly 'chatty', which she gets from me.",
        ),
    ),
    facts=(
        _f(
            "hale",
            0,
            "Arjun's been moved to Mr Hale's class for the rest of Year 4, and Mr Hale has a tortoise called Brian "
            "in the classroom, so that's the year sorted apparently.",
        ),
        _f(
            "diagnosis",
            1,
            "Dr Bose finally said the words: rheumatoid arthritis. Weirdly a relief. They're starting me on "
            "methotrexate, once a week, and no drinking, so that's the hen do ruined.",
        ),
        _f(
            "walks",
            0,
            "My perfect Saturday is a long walk with no phone signal and a pub at the end. Theatre bores me rigid, "
            "sorry, I know you love it.",
        ),
        _f(
            "baker",
            0,
            "The school play is Joseph this year and Arjun's been cast as the baker. One line. He practises it in the "
            "bath.",
        ),
        _f(
            "fridays",
            1,
            "Methotrexate makes me feel like a wet towel the day after, so I've moved it to Friday nights and I "
            "write off Saturdays.",
        ),
        _f(
            "parents",
            0,
            "Parents' evening tonight. Mr Hale says Arjun's reading is two years ahead but he hides under the "
            "table for times tables, which, same.",
        ),
        _f(
            "flare1",
            1,
            "First real flare since diagnosis, after dancing all night at my sister's wedding. Couldn't open a jar "
            "for a week, knuckles like walnuts.",
        ),
        _f(
            "playnight",
            0,
            "The play was tonight. He said his line perfectly, then said it again a minute later when it wasn't "
            "his turn. Biggest laugh of the night.",
        ),
        _f(
            "callum",
            0,
            "There's a boy in his class, Callum, who keeps taking Arjun's lunchbox and eating the crisps. I've "
            "emailed the school and Arjun's furious with me.",
        ),
        _f(
            "marek",
            1,
            "New physio is called Marek and he has me squeezing putty in front of the telly, grip's the thing to "
            "work on.",
            alone=True,
        ),
        _f(
            "gala",
            0,
            "The swimming gala was last Thursday, Arjun came third in backstroke and the ribbon is now pinned to "
            "his headboard.",
        ),
        _f(
            "injection",
            1,
            "Dr Bose has added an injection, adalimumab, every other week, I do it myself in the thigh. First one "
            "tonight.",
        ),
        _f(
            "lunches",
            0,
            "The lunchbox business is sorted, the head had both boys in and it turns out that child wasn't getting "
            "lunch at home. He's on free meals now and Arjun shares on purpose.",
            alone=True,
        ),
        _f(
            "hours",
            1,
            "I've asked to go down to three days at the library, HR were surprisingly nice about it.",
            alone=True,
        ),
        _f(
            "mould",
            0,
            "Arjun's science fair project is why bread goes mouldy, so there are eleven jars of rotting bread on "
            "my windowsill.",
        ),
        _f("flare2", 1, "Another flare, wrists this time, back on the sofa with the hot water bottle."),
        _f(
            "hats",
            1,
            "Knitting has saved me this year, it's good for the hands, Marek says, and I've made four hats for the "
            "neonatal unit.",
        ),
        _f(
            "lesmis",
            1,
            "We've got tickets for Les Mis at the Grand, I've wanted to see it since I was twelve, I could watch "
            "musicals every night of the week.",
        ),
        _f(
            "fair",
            0,
            "He came joint second at the science fair, with a girl who built a working periscope. The bread is "
            "finally in the bin.",
        ),
        _f("oakbank", 0, "We've put Oakbank as first choice for secondary, it's the one with the robotics club."),
        _f(
            "tablet",
            1,
            "The adalimumab stopped working so they've switched me to a tablet, tofacitinib, twice a day, no more "
            "needles.",
        ),
        _f(
            "kirkstall",
            0,
            "Change of heart, Kirkstall Academy is first choice now, his best friend Tomasz is going there and that "
            "matters more to him than robots.",
        ),
        _f("flare3", 1, "Flare number three of the year, my left knee, right before the bank holiday, typical."),
        _f(
            "canal",
            1,
            "Walked the whole canal path to Rodley yesterday with no stick. First time in a year.",
        ),
        _f("offer", 0, "We got Kirkstall! The letter came this morning and he ran round the garden twice."),
    ),
    asks=(
        Ask("single_hop", "What is the tortoise in Arjun's classroom called?", ("hale",), ("Brian",), "Brian"),
        Ask("single_hop", "Which part did Arjun get in the school play?", ("baker",), ("baker",), "the baker"),
        Ask("single_hop", "What was Arjun's science fair project about?", ("mould",), ("mouldy",), "mouldy bread"),
        Ask("single_hop", "What is Lou's physio called?", ("marek",), ("Marek",), "Marek"),
        Ask(
            "paraphrased",
            "Why was the lad nicking a classmate's food?",
            ("lunches",),
            ("lunch",),
            "he wasn't fed at home",
        ),
        Ask(
            "paraphrased",
            "How much of her working week did Lou give up?",
            ("hours",),
            ("three",),
            "she went down to three days",
        ),
        Ask(
            "multi_hop",
            "What did Arjun do on the night of the play that got a laugh, and what was the part?",
            ("baker", "playnight"),
            ("baker", "line"),
            "said his one line twice, as the baker",
        ),
        Ask(
            "multi_hop",
            "Which school did Priya first pick for secondary and why did she change her mind?",
            ("oakbank", "kirkstall"),
            ("Oakbank", "Tomasz"),
            "Oakbank; his best friend Tomasz is going to Kirkstall",
        ),
        Ask("temporal", "When was Arjun's swimming gala?", ("gala",), ("gala",)),
        Ask("temporal", "When did Lou walk to Rodley without a stick?", ("canal",), ("Rodley",)),
        Ask(
            "counting",
            "How many flares has Lou had since her diagnosis?",
            ("flare1", "flare2", "flare3"),
            ("flare", "flare", "flare"),
            "three",
        ),
        Ask("latest", "What medication is Lou on now for her arthritis?", ("tablet",), ("tofacitinib",), "tofacitinib"),
        Ask("latest", "Which secondary school is Arjun going to?", ("offer",), ("Kirkstall",), "Kirkstall"),
        Ask("inference", "Would Priya likely enjoy an evening at a West End musical?", ("walks",), ("Theatre",), "no"),
        Ask("inference", "Would Lou likely enjoy a night at a musical?", ("lesmis",), ("musicals",), "yes"),
        Ask(
            "swapped", "Which drug did Priya's rheumatologist start her on?", ("diagnosis",), ("methotrexate",), "Lou's"
        ),
        Ask(
            "swapped", "How did Lou's son do at the science fair?", ("fair",), ("second",), "Priya's son: joint second"
        ),
        Ask(
            "single_hop",
            "What did the girl who tied with Arjun at the science fair build?",
            ("fair",),
            ("periscope",),
            "a periscope",
        ),
        Ask("single_hop", "Which night does Lou take her methotrexate?", ("fridays",), ("Friday",), "Friday"),
        Ask(
            "paraphrased",
            "Which physical therapy exercise involves a soft modelling substance?",
            ("marek",),
            ("putty",),
            "squeezing putty",
        ),
        Ask("temporal", "When was Arjun's school play performed?", ("playnight",), ("play",)),
        Ask("temporal", "When did Priya hear Arjun got into Kirkstall?", ("offer",), ("letter",)),
        Ask(
            "counting",
            "How many different medicines has Lou been given for her arthritis?",
            ("diagnosis", "injection", "tablet"),
            ("methotrexate", "adalimumab", "tofacitinib"),
            "three",
        ),
        Ask(
            "multi_hop",
            "Who kept taking Arjun's crisps, and how was it resolved?",
            ("callum", "lunches"),
            ("Callum", "meals"),
            "Callum; he wasn't fed at home and is on free meals now",
        ),
        Ask("swapped", "How many hats has Priya knitted for the neonatal unit?", ("hats",), ("hats",), "Lou: four"),
        Ask("unanswerable", "What instrument is Arjun learning?", keys=("instrument", "violin", "piano")),
        Ask("unanswerable", "Where did Lou go skiing?", keys=("skiing", "ski")),
        Ask("unanswerable", "What is Priya's cat called?", keys=("cat",)),
    ),
)

# -- Ines (cello, an amateur orchestra) and Kofi (an allotment), old flatmates ----------------------------------

INES_KOFI = Pair(
    name="ines_kofi",
    names=("Ines", "Kofi"),
    dated=lambda d: f"{d:%B %-d, %Y}:",
    start=dt.date(2023, 3, 20),
    short=("hahaha", "no!", "yesss", "k", "mad", "classic kofi", "classic ines", "👏", "amazing", "gutted", "true"),
    talk=(
        (
            "Rehearsal ran late again, we did the same eight bars for forty minutes.",
            "My fingertips have gone hard from practising, I can't feel my phone screen.",
            "The orchestra's second oboe and the principal horn are definitely having an affair.",
            "Work at the surgery is busy, everyone has a cough.",
            "I practised scales for an hour and the neighbours banged on the ceiling.",
            "Carrying a cello on the bus is a form of cardio, I've decided.",
            "We got new music today and the cello part is mostly counting rests.",
            "My sister's visiting next weekend, so I've got to hide the laundry mountain.",
            "I've been listening to the same recording on repeat to learn my part.",
            "Orchestra tea break is the most competitive biscuit situation I've ever seen.",
            "I need new strings, which costs about the same as a weekend away.",
            "The conductor glared at the cellos for a whole page tonight, which was fair.",
            "I slept eleven hours on Saturday, I think I was owed.",
            "Had a dentist appointment, which was as fun as it sounds.",
            "Ordered a new music stand because the old one folds itself mid-piece.",
            "The radiators in the rehearsal hall are either off or molten.",
            "We played the same page of Shostakovich for a whole evening, I hear it in my sleep.",
            "The surgery's new booking system crashed twice, patients queuing out the door.",
            "My flatmate's started learning the trumpet, we're at war.",
            "Went to a friend's string quartet concert and got terribly jealous.",
            "Rosin dust all over my black trousers again.",
            "I've been making sourdough, it's going about as well as my vibrato.",
            "Went to a ceilidh for someone's birthday, danced badly, loved it.",
            "The principal cellist lent me her fingering for the hard passage, she's lovely.",
            "I've got a cold, and playing while sniffing is not a good look.",
            "Rehearsal was cancelled because the hall double-booked us with a yoga class.",
            "Had my bow rehaired and now everything sounds brighter.",
            "Mum came to visit and tidied my whole kitchen, passive-aggressively.",
            "Took the train to York for a masterclass and played air cello the whole way.",
        ),
        (
            "Spent all Sunday at the allotment, my back is not thanking me.",
            "The shed smells of creosote and old tomatoes, I love it.",
            "Work's dull, council meetings about bins mostly.",
            "It's rained so much the plot is basically a paddy field.",
            "I've been reading seed catalogues in bed like they're thrillers.",
            "The allotment committee has sent another letter about hedges.",
            "Watered everything at six this morning before work, felt very virtuous.",
            "My brother thinks the allotment is a midlife crisis, I'm thirty-four.",
            "Pigeons had the brassicas again, I've put netting up like a crime scene.",
            "Cycled to the plot and got a puncture on the way back, standard.",
            "I've got compost under my nails permanently now.",
            "There's a robin that follows me around the plot waiting for worms.",
            "Football was cancelled so I went and dug instead.",
            "Made soup from stuff I grew, tasted of smugness.",
            "My mum keeps sending me clippings about growing chillies.",
            "The water butt's empty again, I'm carrying cans from the tap like a Victorian.",
            "An old boy on the next row taught me how to earth up potatoes.",
            "The allotment group chat is all photos of marrows, it's glorious.",
            "I've been eating so many beans I'm turning into a bean.",
            "Council work is all about the new recycling bins, I dream in wheelie bins.",
            "Spent the evening building a cold frame out of old windows.",
            "There's a fox on the site that digs up everything I plant.",
            "I've started saving seeds in envelopes, my kitchen drawer is a seed bank.",
            "My brother came to help and spent two hours in a deckchair.",
            "I've been reading about companion planting, marigolds next to everything now.",
            "Had a barbecue at the plot with some of the other growers, very civilised.",
            "The hosepipe ban has started, so it's watering cans all the way.",
            "The committee's planning a seed swap in the church hall, I'm absurdly excited.",
            "My hands are so blistered from digging I can't hold a pen.",
        ),
    ),
    facts=(
        _f(
            "audition",
            0,
            "Auditioned for the Harrogate Symphony's cellos on Wednesday, played the Elgar opening, and my bow arm "
            "shook so much it sounded like vibrato on purpose.",
        ),
        _f(
            "plot14",
            1,
            "Got the allotment! Plot 14 at the Meanwood site, mostly brambles and a shed with no roof, but it's mine.",
        ),
        _f(
            "in",
            0,
            "I got in! Back desk, but in. The conductor is a tiny woman called Agnieszka who apparently terrifies "
            "everyone.",
        ),
        _f(
            "bath",
            1,
            "Cleared the brambles at last and found an old cast-iron bath under them, which I'm turning into a pond.",
        ),
        _f(
            "indoors",
            0,
            "I'll be honest, I'm not an outdoors person. Give me a warm room, a string quartet and a cheese board "
            "over a hike any day.",
        ),
        _f("radishes", 1, "First crop: radishes. Eleven of them. Ate them all standing up in the shed."),
        _f(
            "newworld",
            0,
            "First concert done, the New World symphony in the Royal Hall, and I came in a bar early in the slow "
            "movement. Nobody noticed except Agnieszka.",
        ),
        _f(
            "mud",
            1,
            "I've realised I'm happiest with mud on my hands and nobody about. Concerts just aren't me, I fidget "
            "after ten minutes.",
        ),
        _f(
            "cello",
            0,
            "Bought a proper instrument at last, an old German one from 1920 from a dealer in York, £2,300, it "
            "sounds like melted chocolate.",
        ),
        _f("slugs", 1, "Slugs have eaten every single lettuce. Every one. It's war now."),
        _f(
            "edna",
            1,
            "My neighbour on plot 15, Edna, is eighty-one and has been there since 1974, she's given me her rhubarb "
            "crowns.",
        ),
        _f(
            "nutcracker",
            0,
            "The Christmas concert was the Nutcracker suite at the Methodist church, standing room only, and I've "
            "been moved up to the second desk.",
        ),
        _f(
            "leeks",
            1,
            "Entered my leeks in the Meanwood show and came second. Behind Edna, obviously.",
        ),
        _f(
            "flat",
            0,
            "Signed for the flat on Valley Drive! Top floor, so the cello and I will get very fit on the stairs.",
            alone=True,
        ),
        _f(
            "shed",
            1,
            "Put a roof on the shed last Sunday with my brother, it's finally dry inside.",
        ),
        _f(
            "brahms",
            0,
            "Played Brahms two last Saturday in Ripon Cathedral and the echo meant we heard ourselves a full second "
            "late, surreal.",
        ),
        _f(
            "notice",
            1,
            "I've handed in my notice at the council. Starting at the Woodland Trust in June as a volunteer "
            "coordinator, less money, far more trees.",
            alone=True,
        ),
        _f("squash4", 1, "Biggest squash so far is 4 kilos, the Crown Prince by the shed."),
        _f(
            "tendon",
            0,
            "Tendinitis in my left wrist, the doctor says no playing for three weeks and I'm climbing the walls.",
            alone=True,
        ),
        _f("squash7", 1, "New record, the squash by the pond came in at 7 kilos, I wheeled it home in a barrow."),
        _f(
            "firstdesk",
            0,
            "Agnieszka has put me on first desk next to the principal for the summer season. I think she's testing me.",
        ),
        _f(
            "plot15",
            1,
            "Edna's giving up her plot, her hip's bad, and she's asked me to take it on, so it's two plots now, 14 "
            "and 15.",
        ),
    ),
    asks=(
        Ask("single_hop", "What did Kofi find under the brambles on his plot?", ("bath",), ("bath",), "an old bath"),
        Ask("single_hop", "What did Ines play at her audition?", ("audition",), ("Elgar",), "the Elgar"),
        Ask("single_hop", "What is the conductor of Ines's orchestra called?", ("in",), ("Agnieszka",), "Agnieszka"),
        Ask("single_hop", "What was Kofi's first crop?", ("radishes",), ("radishes",), "radishes"),
        Ask(
            "paraphrased",
            "What road is Ines's new home on?",
            ("flat",),
            ("Valley",),
            "Valley Drive",
        ),
        Ask(
            "paraphrased",
            "Which employer is Kofi leaving for a charity?",
            ("notice",),
            ("council",),
            "the council, for the Woodland Trust",
        ),
        Ask(
            "multi_hop",
            "Who beat Kofi's leeks at the show, and how long has she had her plot?",
            ("leeks", "edna"),
            ("Edna", "1974"),
            "Edna, since 1974",
        ),
        Ask(
            "multi_hop",
            "Which concert did Ines play right after her audition, and what went wrong?",
            ("audition", "newworld"),
            ("Elgar", "early"),
            "the New World symphony; she came in a bar early",
        ),
        Ask("temporal", "When did Ines play in Ripon Cathedral?", ("brahms",), ("Ripon",)),
        Ask("temporal", "When did Kofi put a roof on his shed?", ("shed",), ("roof",)),
        Ask(
            "counting",
            "How many concerts has Ines played with the orchestra?",
            ("newworld", "nutcracker", "brahms"),
            ("concert", "concert", "Brahms"),
            "three",
        ),
        Ask("latest", "Which desk does Ines sit at in the cellos now?", ("firstdesk",), ("first",), "first desk"),
        Ask("latest", "How heavy is Kofi's biggest squash?", ("squash7",), ("7",), "7 kilos"),
        Ask("latest", "How many allotment plots does Kofi have now?", ("plot15",), ("two",), "two"),
        Ask("inference", "Would Ines likely enjoy a week's camping and hill walking?", ("indoors",), ("hike",), "no"),
        Ask("inference", "Would Kofi likely enjoy an evening at a symphony concert?", ("mud",), ("Concerts",), "no"),
        Ask("swapped", "What did Ines turn into a pond?", ("bath",), ("pond",), "Kofi did: an old bath"),
        Ask("swapped", "What instrument did Kofi buy from a dealer in York?", ("cello",), ("York",), "Ines did"),
        Ask("single_hop", "How much did Ines pay for her cello?", ("cello",), ("2,300",), "£2,300"),
        Ask("single_hop", "Who gave Kofi rhubarb crowns?", ("edna",), ("Edna",), "Edna"),
        Ask("paraphrased", "What injury stopped Ines practising?", ("tendon",), ("Tendinitis",), "tendinitis"),
        Ask("temporal", "When did Kofi get his allotment?", ("plot14",), ("Plot",)),
        Ask("swapped", "Whose shed did Ines put a roof on?", ("shed",), ("roof",), "Kofi did, his own"),
        Ask("unanswerable", "What breed is Kofi's dog?", keys=("dog", "breed")),
        Ask("unanswerable", "Which university did Ines study at?", keys=("university",)),
        Ask("unanswerable", "What car does Kofi drive?", keys=("car",)),
    ),
)

# -- Ray (a new hip, a share in a narrowboat) and his daughter Nadia (a toddler at nursery, a school to run) ----------


def _ordinal(day: dt.date) -> str:
    suffix = "th" if 10 <= day.day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day.day % 10, "th")
    return f"({day.day}{suffix} {day:%B %Y})"


RAY_NADIA = Pair(
    name="ray_nadia",
    names=("Ray", "Nadia"),
    dated=_ordinal,
    start=dt.date(2023, 3, 2),
    short=("ok love", "ha!", "xx", "aw", "righto", "👍", "yes dad", "lol", "good", "blimey", "night x", "🙈"),
    talk=(
        (
            "Bowls was rained off again, so Geoff and I sat in the clubhouse putting the world to rights.",
            "The hip's been grumbling today, I think it's the damp.",
            "I've been watching the snooker all afternoon, don't tell your auntie.",
            "The allotment people next door have given me more courgettes than a man can eat.",
            "I had a go at that video calling but all you could see was my ear.",
            "Took the bus into town, it's two pounds now wherever you go, which is a bargain.",
            "The boat needs blacking before winter, Geoff reckons it's a two-man job and a four-pint one.",
            "I've been reading about the canal's history, they dug the whole thing by hand.",
            "Had my dinner at the café by the lock, they do a proper gravy.",
            "My knees are fine, it's just the hip that's decided to retire before me.",
            "The man at the chandlery has started calling me captain, which I don't mind.",
            "Geoff's grandson fixed my phone so it doesn't shout at me any more.",
            "I walked to the paper shop and back, slowly, it counts.",
            "Did the crossword in pen today, feeling very clever.",
            "The garden's gone wild but the birds seem to like it.",
            "Went to the boat to check the ropes and ended up staying for three hours.",
            "Doctor's surgery kept me waiting forty minutes to tell me I'm fine.",
            "There's a heron that stands on the roof of the boat next to ours like he owns it.",
            "I've been sorting the loft, found your old school reports, very chatty apparently.",
            "Watched a programme about lighthouses, I could live in one I think.",
            "Cooked myself a proper stew, enough for the week, freezer's full.",
            "The neighbours have a new baby, it cries at four in the morning, reminds me of you.",
            "I've taken up those puzzle books, the ones with the numbers, can't put them down.",
            "Fixed the leak under the sink myself, only took three goes.",
            "The bowls club dinner is next month, I've got to find a tie that fits.",
            "Went for a pint with Geoff, we talked about engines for two hours, bliss.",
            "It's been so quiet round here, I've started talking to the radio.",
            "The boat's bilge pump is making a noise I don't like.",
        ),
        (
            "Isla was up four times in the night, I am running on toast and spite.",
            "Marking mountain this weekend, year 10 essays on Macbeth, send wine.",
            "Sam's doing bath time now, which he thinks is a favour.",
            "Isla has discovered the word no and uses it for everything.",
            "Parents' evening at school till eight, my voice has gone.",
            "Nursery drop-off was a wrestling match this morning.",
            "I've been trying to do yoga in the evenings but Isla thinks it's a climbing frame.",
            "We had a fire drill at school in the pouring rain, everyone soaked.",
            "Isla's obsessed with ducks, we went to feed them three times this weekend.",
            "Sam's mum is coming to stay, so I'm cleaning skirting boards like a madwoman.",
            "Made it to the gym once this week, a personal best.",
            "Isla ate a crayon. The blue one. Nursery were very calm about it.",
            "Staff meeting about behaviour ran an hour over, I could have screamed.",
            "We've got a new head teacher starting and everyone is on edge.",
            "Isla fell asleep in her dinner, face first into the mash.",
            "I've bought a slow cooker and I'm a changed woman.",
            "Half term can't come soon enough.",
            "Isla's started saying 'dada' for everything including the cat next door.",
            "Sam and I managed a whole film on Friday, no interruptions, a miracle.",
            "I've got the Year 9 trip to organise, forty teenagers and a museum, pray for me.",
            "Isla's learnt to open the fridge, so that's the end of that.",
            "The car's making a funny noise, I'm ignoring it.",
            "Pushed the buggy round the park for an hour to get her to nap.",
            "My classroom's heating is broken so we're teaching in coats.",
            "Isla waved at a dog for ten minutes and the dog ignored her completely.",
            "We're trying to cut down on screens, it lasted until Tuesday.",
            "I've been asleep by nine every night this week, rock and roll.",
            "Sam's taught Isla to do a high five and now she high-fives strangers.",
        ),
    ),
    facts=(
        _f(
            "date",
            0,
            "The hospital's finally given me a date for the hip, at St James's, and Mr Okonjo is doing it, "
            "apparently he does six a week.",
        ),
        _f(
            "acorns",
            1,
            "Isla started at Little Acorns nursery on Monday, cried for ten minutes and then forgot I existed.",
        ),
        _f(
            "marigold",
            0,
            "I've gone and bought a half share in a narrowboat with Geoff from bowls, she's called Marigold and she "
            "needs everything doing, which is the point.",
        ),
        _f("duck", 1, "Isla's first word was duck. Not mama. Duck."),
        _f(
            "towpath",
            0,
            "I can't be doing with big cities any more, love. Noise, crowds, prices. Give me a towpath and a pint and "
            "I'm happy.",
        ),
        _f(
            "skipton",
            0,
            "Took Marigold up to Skipton and back over the weekend, two days, one sunburn, Geoff fell in at Gargrave.",
        ),
        _f("bug1", 1, "Isla's got hand, foot and mouth from nursery, the poor thing, she's covered in spots."),
        _f(
            "green",
            0,
            "After the Skipton run I've painted her cabin top racing green, took me four days and I've got green "
            "eyebrows.",
        ),
        _f("year9", 1, "I've been made head of Year 9, more money and a lot more detentions."),
        _f("jab", 1, "Isla had her MMR jab last Wednesday, she was grumpy for two days."),
        _f(
            "london",
            1,
            "Sam's booked us a weekend in London and I can't wait, I love the noise and the museums and the night "
            "buses, I'd live there if we could.",
        ),
        _f("bug2", 1, "Conjunctivitis now, second bug from nursery, she looks like she's been in a fight."),
        _f("frame", 0, "Hip done yesterday! They had me walking with a frame by teatime."),
        _f(
            "titanium",
            0,
            "The consultant says the new joint is titanium and ceramic, so I'm basically a robot now.",
            alone=True,
        ),
        _f("rory", 1, "Isla bit a boy called Rory at nursery. Mortifying. Apparently he took her raisins."),
        _f("crutches", 0, "Down to crutches now, and the physio says I'm ahead of schedule for a man my age."),
        _f("squirrels", 1, "Isla's moved up to the Squirrels room now she's walking properly."),
        _f(
            "bingley",
            0,
            "Marigold's engine seized at Bingley Five Rise and we got towed through by a hire boat full of a hen "
            "party. Geoff's never been happier.",
        ),
        _f("brewery", 1, "Sam's got the brewery job in Ilkley, he starts in September.", alone=True),
        _f("stick", 0, "Swapped the crutches for a stick, I feel like a proper old man now."),
        _f("bug3", 1, "Another cold, that's bug number three since nursery started, we're all snotty."),
        _f("leeds", 0, "Took Marigold into Leeds for the first time, moored up by the Royal Armouries like a tourist."),
        _f("nostick", 0, "Ditched the stick today. Walked to the lock and back without it."),
        _f("owls", 1, "Isla's going up to the Owls room in September, the pre-school one. Where did my baby go?"),
    ),
    asks=(
        Ask("single_hop", "Who is doing Ray's hip operation?", ("date",), ("Okonjo",), "Mr Okonjo"),
        Ask("single_hop", "What was Isla's first word?", ("duck",), ("duck",), "duck"),
        Ask("single_hop", "Why did Isla bite a boy at nursery?", ("rory",), ("raisins",), "he took her raisins"),
        Ask(
            "single_hop",
            "What colour did Ray paint the boat after the trip to Skipton?",
            ("green",),
            ("green",),
            "green",
        ),
        Ask(
            "paraphrased",
            "What materials went into the replacement part in Ray's leg?",
            ("titanium",),
            ("titanium",),
            "titanium and ceramic",
        ),
        Ask(
            "paraphrased", "Which employer has Nadia's other half signed with?", ("brewery",), ("brewery",), "a brewery"
        ),
        Ask(
            "multi_hop",
            "Which boat did Ray buy a share in, and where did its engine seize?",
            ("marigold", "bingley"),
            ("Marigold", "Bingley"),
            "Marigold; at Bingley Five Rise",
        ),
        Ask(
            "multi_hop",
            "Which nursery does Isla go to, and which room is she going into for pre-school?",
            ("acorns", "owls"),
            ("Acorns", "Owls"),
            "Little Acorns; the Owls room",
        ),
        Ask("temporal", "When was Ray's hip operation?", ("frame",), ("Hip",)),
        Ask("temporal", "When did Isla have her MMR jab?", ("jab",), ("MMR",)),
        Ask(
            "counting",
            "How many bugs has Isla caught from nursery?",
            ("bug1", "bug2", "bug3"),
            ("mouth", "bug", "bug"),
            "three",
        ),
        Ask(
            "counting",
            "How many trips has Ray taken the boat on?",
            ("skipton", "bingley", "leeds"),
            ("Skipton", "Bingley", "Leeds"),
            "three",
        ),
        Ask("latest", "What does Ray walk with now?", ("nostick",), ("stick",), "nothing, he ditched the stick"),
        Ask("latest", "Which room at nursery is Isla going into next?", ("owls",), ("Owls",), "the Owls room"),
        Ask("inference", "Would Ray likely enjoy a city break in London?", ("towpath",), ("cities",), "no"),
        Ask("inference", "Would Nadia likely enjoy a weekend in a big city?", ("london",), ("London",), "yes"),
        Ask("swapped", "What colour did Nadia paint the boat's cabin top?", ("green",), ("green",), "Ray did: green"),
        Ask("swapped", "Who did Ray bite at nursery?", ("rory",), ("Rory",), "Isla bit Rory"),
        Ask("unanswerable", "What is Ray's wife called?", keys=("wife",)),
        Ask("unanswerable", "Which football team does Sam support?", keys=("football",)),
        Ask("unanswerable", "What instrument is Nadia learning?", keys=("instrument",)),
    ),
)

# -- Rosa and an AI assistant: requests with her life in them, long answers; she never gives her name, so she asks
# about herself as "I" and "my" ------------------------------------------------------------------------------------

ROSA_AI = Pair(
    name="rosa_assistant",
    names=("Rosa", "Assistant"),
    dated=lambda d: f"[{d:%Y-%m-%d}]",
    start=dt.date(2023, 4, 3),
    short=("thanks!", "perfect, thank you", "ok", "great", "that helps", "got it", "brilliant, ta"),
    talk=(
        (
            "school|Can you give me three quick ideas for practising spellings that aren't boring?",
            "school|How long should a nine-year-old spend on homework each night, realistically?",
            "school|What's a polite way to tell the class WhatsApp group I'm muting it?",
            "school|Maisie wants to learn to type, is there a good way to start at her age?",
            "food|What can I make with a tin of chickpeas, half a butternut squash and some spinach?",
            "food|Is there a gluten-free flour that works for Yorkshire puddings?",
            "food|Give me a packed lunch idea that isn't a sandwich.",
            "food|How do I stop gluten-free bread going hard by the next day?",
            "home|How do I get limescale off a shower screen without buying anything new?",
            "home|What's the difference between a combi boiler and a system boiler, in plain English?",
            "home|How do I check if a wall is load-bearing before anyone goes near it?",
            "home|We need to keep a bedroom usable while the bathroom is out, any tips for living through it?",
            "life|Can you suggest a polite reply to turn down an extra shift without sounding lazy?",
            "life|I can't sleep after a run of nights, any tips that actually work?",
            "life|Summarise the main points of a good complaint letter for me.",
            "life|What's a good stretching routine for ten minutes before bed?",
            "school|Can you explain what a phonics screening check is?",
            "school|How do I help Maisie with times tables without it ending in tears?",
            "school|Maisie's class is doing the Vikings, any fun facts she can take in?",
            "food|What's a quick gluten-free breakfast that isn't just toast?",
            "food|Can you convert this to grams: 2 cups flour, 1 cup sugar, half a cup of butter?",
            "food|Is it safe to freeze cooked rice?",
            "home|How do I bleed a radiator?",
            "home|What's the best way to paint over a damp patch once it's dry?",
            "home|How can I keep the dust down while the builders are in?",
            "life|Help me write a message to my sister apologising for missing her call.",
            "life|What are some cheap days out in Leeds with a nine-year-old?",
            "life|How do I politely ask a neighbour to move their bins off our path?",
        ),
        (),
    ),
    advice={
        "school": (
            "Children with a reading difficulty often do much better when practice is short, frequent and fun rather "
            "than long and serious.",
            "It helps to keep the school informed with brief, friendly updates so everyone is working from the same "
            "picture.",
            "Praise the effort rather than the result, it builds the kind of persistence that carries over to other "
            "subjects.",
            "Multi-sensory methods, like tracing letters in sand or saying sounds aloud while writing, are widely "
            "used for dyslexic learners.",
            "Audiobooks are not cheating: listening to stories builds vocabulary and comprehension while decoding "
            "catches up.",
            "A regular, predictable homework slot, ideally after a snack and before screens, reduces the nightly "
            "negotiation.",
            "If you're writing to the school, open with what is going well before raising the concern, and end with "
            "a specific request.",
            "Teachers generally appreciate being asked what they are seeing in class, as it turns a complaint into "
            "a shared problem.",
            "Keep a small notebook of what works and what doesn't, it is invaluable at review meetings.",
            "Games that involve rhyming, sorting words by sound, or spotting patterns are good for phonological "
            "awareness.",
            "At nine, children are very aware of being different, so framing support as a tool rather than a fix "
            "matters a lot.",
            "A reading buddy, even a younger sibling or a pet, can take the pressure off reading aloud.",
        ),
        "food": (
            "Coeliac disease means even small amounts of gluten can cause symptoms, so the key is avoiding "
            "cross-contamination as much as avoiding obvious wheat.",
            "A separate toaster, or toaster bags, and a separate butter and jam pot are the usual first steps in "
            "a shared kitchen.",
            "Oats are often contaminated with wheat, so look for oats labelled gluten-free.",
            "Soy sauce usually contains wheat; tamari is a common gluten-free alternative.",
            "Rice, potatoes, corn, and buckwheat are naturally gluten-free and make easy bases for family dinners.",
            "Batch cooking sauces at the weekend keeps weeknight dinners quick and safe.",
            "Children often accept new meals more readily when they help choose or cook them.",
            "Gluten-free baking usually needs a binder such as xanthan gum or psyllium to stop it crumbling.",
            "Reading labels becomes second nature quickly, and many supermarkets mark gluten-free products clearly.",
            "Eating out is easier if you call ahead and ask how they handle gluten-free orders in the kitchen.",
            "A simple weekly plan with two or three favourites repeated is more sustainable than a new recipe every "
            "night.",
            "Roasted vegetables, a protein and a gluten-free grain make a reliable template for a quick dinner.",
        ),
        "home": (
            "Before any work starts, agree in writing what is included in the quote and how extras will be priced.",
            "Older houses often hide surprises behind tiles and under floors, so a contingency of ten to twenty "
            "percent is sensible.",
            "Ask the builder who is responsible for waste removal and whether a skip permit is needed.",
            "Ventilation matters in a bathroom: an extractor fan sized for the room prevents damp and mould.",
            "Check whether the electrical work will be certified, as bathrooms have specific zones and rules.",
            "Natural materials like terracotta and stone usually need sealing, and resealing every year or two in "
            "wet areas.",
            "A walk-in shower needs a properly laid fall and tanking underneath to stay watertight.",
            "Keep a running list of decisions and dates, it saves arguments later about what was agreed.",
            "Photograph the walls and floor before they are closed up, so you know where pipes and cables run.",
            "If you're living in the house during the work, set up a temporary washing area and keep dust sheets "
            "over doorways.",
            "Freestanding baths are heavy when full, so it is worth checking the floor structure can take the load.",
            "Staged payments tied to finished work protect you better than a large payment up front.",
        ),
        "life": (
            "It is completely reasonable to protect your rest, especially when you work nights.",
            "A short, clear message is usually better received than a long explanation.",
            "Blackout blinds, a consistent wind-down routine, and keeping caffeine to the first half of a shift all "
            "help sleep after nights.",
            "For a small celebration, a private room or a quiet corner booked in advance takes the pressure off.",
            "A good complaint is specific about what happened, what you want done, and by when.",
            "Gentle stretches for the hips, hamstrings and upper back are a good ten-minute routine.",
            "It is worth saying no to something now if it means you can say yes properly later.",
            "Small rituals, like a walk or a bath after the last shift, help mark the switch back to days.",
            "If you're unsure how someone will react, offering a choice between two options often helps.",
            "Writing down what you want from the day beforehand makes it easier to ask for it.",
            "Try not to use your phone in bed, the light and the scrolling both keep you awake.",
            "Planning something to look forward to after a hard stretch is good for morale.",
        ),
    },
    facts=(
        _f(
            "okoro",
            0,
            "Can you help me write an email to Maisie's teacher, Miss Okoro? Maisie's nine and she's been coming "
            "home in tears because she can't copy from the board fast enough. I want to ask about a dyslexia "
            "assessment without sounding like I'm blaming anyone.",
            topic="school",
        ),
        _f(
            "nights",
            0,
            "I work nights on the cardiac ward, four on four off, so apologies if my questions come at 3am. Anyway, "
            "what's a realistic way to keep a bedtime routine for a child when one parent is never home at bedtime?",
            topic="life",
        ),
        _f(
            "coeliac",
            0,
            "My husband Joel was diagnosed coeliac last week, so I need a week of dinners with no gluten that a "
            "nine-year-old will also eat. She hates mushrooms, for the record.",
            topic="food",
        ),
        _f(
            "kasim",
            0,
            "We're redoing the bathroom, the builder is called Kasim and he starts on the 3rd. The house is 1920s "
            "so I'm worried about what's behind the tiles. What should I ask him first?",
            topic="home",
        ),
        _f(
            "result",
            0,
            "The assessment came back: Maisie is dyslexic, moderate, with a very strong verbal score. The "
            "educational psychologist, Dr Lin, recommended coloured overlays and extra time. How do I explain it "
            "to her so she doesn't feel broken?",
            topic="school",
        ),
        _f(
            "joists",
            0,
            "Kasim found the joists under the bath are rotten, so the bath has to come out anyway. We're thinking a "
            "walk-in shower instead. Pros and cons?",
            topic="home",
        ),
        _f(
            "croissant",
            0,
            "Joel ate a normal croissant at work yesterday by mistake and he's been ill all day. How careful do we "
            "need to be about the toaster and the butter?",
            topic="food",
        ),
        _f(
            "dale",
            0,
            "School has agreed to an extra reading session with the SENCO, Mrs Dale, three mornings a week. What "
            "games can we play at home on the other days?",
            topic="school",
        ),
        _f(
            "quiet",
            0,
            "I want to plan my birthday. I hate surprises and I really don't like being the centre of attention, "
            "ideal is a long lunch with three or four people somewhere quiet. Ideas in Leeds?",
            topic="life",
        ),
        _f(
            "hexagons",
            0,
            "We've picked terracotta hexagons for the bathroom floor and plain white on the walls. Does terracotta "
            "need sealing if it gets splashed a lot?",
            topic="home",
        ),
        _f(
            "witch",
            0,
            "Maisie read a whole chapter book on her own last Sunday, The Worst Witch, and came running in to tell "
            "me. What could she read next?",
            topic="school",
        ),
        _f(
            "freestanding",
            0,
            "We've changed our minds on the shower, we're keeping a bath after all, a freestanding one, because "
            "Maisie was heartbroken about no more bubble baths. Anything to check before we order?",
            topic="home",
        ),
        _f(
            "soy",
            0,
            "Joel got glutened again, soy sauce at a takeaway this time, he's wiped out. Is there any way to spot "
            "it on a menu?",
            topic="food",
        ),
        _f(
            "lemon",
            0,
            "Joel has taken up gluten-free baking and made a lemon drizzle that actually worked! What should he try "
            "next?",
            topic="food",
        ),
        _f(
            "second",
            0,
            "She's finished the second Worst Witch book too, on her own again, and wants the whole series for "
            "Christmas.",
            topic="school",
        ),
    ),
    asks=(
        Ask("single_hop", "What is Maisie's teacher called?", ("okoro",), ("Okoro",), "Miss Okoro"),
        Ask("single_hop", "Who recommended coloured overlays for Maisie?", ("result",), ("Lin",), "Dr Lin"),
        Ask("single_hop", "What did Joel bake successfully?", ("lemon",), ("lemon",), "a lemon drizzle"),
        Ask("paraphrased", "Which hospital department do I staff?", ("nights",), ("cardiac",), "cardiac ward"),
        Ask(
            "paraphrased",
            "What shape and material were chosen underfoot?",
            ("hexagons",),
            ("terracotta",),
            "terracotta hexagons",
        ),
        Ask(
            "multi_hop",
            "Why did the old bath have to come out, and what replaced it in the end?",
            ("joists", "freestanding"),
            ("rotten", "freestanding"),
            "rotten joists; a freestanding bath",
        ),
        Ask(
            "multi_hop",
            "What did Maisie's assessment find, and what extra help did the school then give?",
            ("result", "dale"),
            ("dyslexic", "Dale"),
            "moderate dyslexia; reading sessions with Mrs Dale",
        ),
        Ask("temporal", "When did Maisie read The Worst Witch on her own?", ("witch",), ("Witch",)),
        Ask("temporal", "When did Joel eat the croissant that made him ill?", ("croissant",), ("croissant",)),
        Ask(
            "counting",
            "How many times has Joel been made ill by gluten since his diagnosis?",
            ("croissant", "soy"),
            ("croissant", "glutened"),
            "twice",
        ),
        Ask(
            "counting",
            "How many books has Maisie finished on her own?",
            ("witch", "second"),
            ("Witch", "Witch"),
            "two",
        ),
        Ask(
            "latest",
            "Is my new bathroom getting a walk-in shower or a bath?",
            ("freestanding",),
            ("freestanding",),
            "a freestanding bath",
        ),
        Ask(
            "inference",
            "Would I likely enjoy a surprise party thrown in my honour?",
            ("quiet",),
            ("surprises",),
            "no",
        ),
        Ask("swapped", "What did I eat at work by mistake that made me ill?", ("croissant",), ("croissant",), "Joel"),
        Ask("single_hop", "What is the SENCO at Maisie's school called?", ("dale",), ("Dale",), "Mrs Dale"),
        Ask("single_hop", "Who is doing my bathroom?", ("kasim",), ("Kasim",), "Kasim"),
        Ask(
            "paraphrased",
            "What profession's verdict confirmed the child's reading difficulty?",
            ("result",),
            ("psychologist",),
            "an educational psychologist",
        ),
        Ask("temporal", "When did Joel get ill from soy sauce?", ("soy",), ("soy",)),
        Ask("swapped", "What was I diagnosed with?", ("coeliac",), ("coeliac",), "Joel was: coeliac disease"),
        Ask("unanswerable", "What is Maisie's favourite sport?", keys=("sport", "football", "netball")),
        Ask("unanswerable", "Where did Joel and I go on honeymoon?", keys=("honeymoon",)),
    ),
)

PAIRS = (MAYA_DAN, PRIYA_LOU, INES_KOFI, RAY_NADIA, ROSA_AI)

OPENERS = ("Of course.", "Happy to help.", "Good question.", "That sounds like a lot to juggle.", "Sure, here goes.")
SIZES = (1, 2, 3, 4, 5, 8, 12)
SIZE_WEIGHTS = (10, 20, 25, 18, 12, 10, 5)
"""Sentences in a chatter message: mostly two to four (~50 tokens), some run on for a paragraph (150-250)."""


def fresh2_conversations(count: int = 5, seed: int = 0) -> list[Conversation]:
    """The first ``count`` chats, written from ``seed`` (the same seed writes the same chats)."""
    return [_Chat(pair, random.Random(f"{seed}:{pair.name}")).write() for pair in PAIRS[:count]]


def said_on(text: str, day: dt.date) -> dt.date:
    """The day a message sent on ``day`` says something happened: "yesterday" / "last night", "last <weekday>", else
    that day."""
    lowered = text.lower()
    if "yesterday" in lowered or "last night" in lowered:
        return day - dt.timedelta(days=1)
    for number, weekday in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")):
        if f"last {weekday}" in lowered:
            return day - dt.timedelta(days=(day.weekday() - number - 1) % 7 + 1)
    return day


class _Chat:
    def __init__(self, pair: Pair, rng: random.Random) -> None:
        self.pair, self.rng = pair, rng
        self.conversation = Conversation(pair.name, "assistant" if pair.assistant else "friends")
        self.told: dict[str, tuple[int, dt.date]] = {}

    def say(self, who: int, text: str) -> int:
        if not self.pair.assistant:
            text = f"{self.pair.names[who]}: {text}"
        self.conversation.messages.append({"role": "user" if who == 0 else "assistant", "content": text})
        return len(self.conversation.messages) - 1

    def write(self) -> Conversation:
        rng, pair = self.rng, self.pair
        sessions = rng.randint(30, 36)
        placed = sorted(rng.choices(range(1, sessions), k=len(pair.facts)))
        day = pair.start
        for session in range(sessions):
            day += dt.timedelta(days=rng.randint(2, 9) if session else 0)
            facts = [f for f, at in zip(pair.facts, placed, strict=True) if at == session]
            self.session(day, facts)
        self.conversation.questions = [self.question(ask) for ask in pair.asks]
        return self.conversation

    def session(self, day: dt.date, facts: list[tuple[str, Fact]]) -> None:
        beats: list[tuple[str, Fact] | None] = [None] * self.rng.randint(4, 8)
        slots = sorted(self.rng.sample(range(len(beats) + len(facts)), len(facts)))
        for fact, slot in zip(facts, slots, strict=True):  # in their order, among the chatter
            beats.insert(slot, fact)
        self.dated = self.pair.dated(day)
        for beat in beats:
            if beat is None:
                self.chatter()
            else:
                self.tell(*beat, day)

    def opening(self, text: str) -> str:
        """The session's first message carries its date, the chat's own way."""
        dated, self.dated = self.dated, ""
        if not dated:
            return text
        return f"{dated}\n{text}" if self.pair.assistant else f"{dated} {text}"

    def paragraph(self, who: int, sentences: int) -> str:
        pool = self.pair.talk[who]
        return " ".join(self.rng.sample(pool, min(sentences, len(pool))))

    def chatter(self) -> None:
        rng = self.rng
        if self.pair.assistant:
            topic, request = rng.choice(self.pair.talk[0]).split("|", 1)
            self.say(0, self.opening(request))
            self.answer(topic)
            if rng.random() < 0.3:
                self.say(0, rng.choice(self.pair.short))
            return
        who = rng.randrange(2)
        self.say(who, self.opening(self.paragraph(who, rng.choices(SIZES, SIZE_WEIGHTS)[0])))
        if rng.random() < 0.15:  # a second message before the other answers
            self.say(who, self.paragraph(who, rng.choice((1, 1, 2))))
        if rng.random() < 0.25:
            self.say(1 - who, rng.choice(self.pair.short))
        else:
            self.say(1 - who, self.paragraph(1 - who, rng.choices(SIZES, SIZE_WEIGHTS)[0]))

    def answer(self, topic: str) -> None:
        """The assistant: a few hundred tokens of advice on the request's topic."""
        body = self.rng.sample(self.pair.advice[topic], self.rng.randint(6, 11))
        cut = self.rng.randint(2, len(body) - 2)  # two paragraphs
        self.say(1, f"{self.rng.choice(OPENERS)} {' '.join(body[:cut])}\n\n{' '.join(body[cut:])}")

    def tell(self, key: str, fact: Fact, day: dt.date) -> None:
        rng, who = self.rng, fact.who
        if fact.alone or self.pair.assistant:
            text = fact.text
        else:
            before, after = rng.choice((0, 0, 1, 1, 2)), rng.choice((0, 1, 1, 2))
            if rng.random() < 0.25:  # the news inside a long message
                before, after = before + rng.randint(2, 6), after + rng.randint(2, 5)
            around = rng.sample(self.pair.talk[who], before + after)
            text = " ".join([*around[:before], fact.text, *around[before:]])
        self.told[key] = (self.say(who, self.opening(text)), said_on(fact.text, day))
        if self.pair.assistant:
            self.answer(fact.topic)
        elif rng.random() < 0.5:
            self.say(1 - who, rng.choice(self.pair.short))
        else:
            self.say(1 - who, self.paragraph(1 - who, rng.choice((1, 2, 3))))

    def question(self, ask: Ask) -> Asked:
        evidence = tuple(self.told[key][0] for key in ask.facts)
        answer = ask.answer or (f"{self.told[ask.facts[-1]][1]:%-d %B %Y}" if ask.facts else "")
        return Asked(ask.text, ask.kind, evidence, answer=answer, keys=ask.keys)


if __name__ == "__main__":  # a look at the data: sizes, message lengths and kinds
    from collections import Counter
    from statistics import median

    from components.context_window.token_estimator import estimator_for

    tokens = estimator_for("gpt-4o")
    for c in fresh2_conversations():
        lengths = [tokens.count(m["content"]) for m in c.messages]
        print(
            c.name,
            len(c.messages),
            "messages,",
            sum(lengths),
            "tokens, median",
            median(lengths),
            "max",
            max(lengths),
            dict(Counter(q.kind for q in c.questions)),
        )

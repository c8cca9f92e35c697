"""A third held-out set (``BENCH_DATA=assistant``): one person and an AI assistant over months of separate sessions.

Written apart from recall and the other sets, by a helper who read only the data API, the bench's loader and report,
README and architecture.md. Neither earlier held-out set has this shape, and it is the commonest one a deployed
context service meets: a user who comes back to the same assistant every few days with an unrelated task.

What it models, and why:

* **Most sessions are work the questions never ask about**: debugging code, a recipe, a trip itinerary, an email
  draft, a maths explanation, a product comparison, a training or study plan. The user's requests are 20-150 tokens;
  the assistant answers at length (150-600 tokens, headings, lists, code blocks, tables), so most of the history's
  tokens are long answers that share generic words with any question ("plan", "week", "suggest").
* **Personal facts told in passing**: one clause inside a request ("I'm redoing the invite list for my sister's
  wedding in Porto, can you ..."), never as news on its own. Some facts are only in the assistant's answer (the hotel
  it suggested, the laptop it recommended), so the evidence is a long message where the fact is one line.
* **Facts that change** (a job, an address, a pet, a goal weight, an hourly rate), told again months later; the
  question wants the latest value, and the old one is a distractor sharing its words.
* **Preferences shown, not stated** ("lots of chilli, I don't eat meat"), asked as "What kind of ... would I like?".
* **Dates**: every session opens with a dated line, written differently per user; some facts say "today",
  "yesterday", "last week" or "last Tuesday" relative to it.
* **Several sessions of the same kind of task** (three trips, several recipes), so a question's topic words match
  many sessions and only its particulars single one out.

Each of the four users has their own life, date style and story beats; the filler tasks come from one pool of task
writers, each chat drawing its own mix and topics, so no template is shared by every conversation. Questions are
asked in the first person, as the user would ask them, in nine kinds: ``user_fact``, ``assistant_fact`` (what the
assistant said or recommended), ``paraphrased`` (no content word shared with the evidence), ``multi_session`` (two
sessions combined), ``temporal`` (a session's date or an order), ``counting`` (every instance labelled), ``latest``
(only the newest value labelled), ``preference`` (the messages that show the taste), ``unanswerable`` (never
raised: no evidence) and ``missing_detail`` (the thing is raised, an amount or a colour of it never given: "How much
did I pay for Wingspan?"; a dev set for recall's abstention, session 50). Messages carry no speaker names; roles are
``user`` and ``assistant``.

Deterministic per seed: the seed draws the sessions' count, dates, the filler tasks and where each beat falls.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.conversation_data import Conversation, Question

KINDS = (
    "user_fact",
    "assistant_fact",
    "paraphrased",
    "multi_session",
    "temporal",
    "counting",
    "latest",
    "preference",
    "unanswerable",
    "missing_detail",
)


@dataclass(frozen=True)
class Asked(Question):
    answer: str = ""
    keys: tuple[str, ...] = ()
    """One word or phrase per evidence message that the message holds (for ``unanswerable``: words never said; for
    ``missing_detail``: the thing's words, said, never with the detail)."""


Writer = Callable[[random.Random, dict[str, str]], tuple[str, str]]
"""A task writer: (rng, topic) -> (the user's request, the assistant's answer). ``topic`` names what a story beat
needs the answer to hold (a city, the hotel it recommends, ...); empty for filler."""

# -- task writers: what most sessions are about -----------------------------------------------------------------

BUGS = [
    (
        "Python",
        "My script that totals {thing} per customer gives the wrong numbers, it looks like the totals leak between "
        "calls. Here's the function, what's wrong?",
        "def add_{thing}(customer, amount, totals={{}}):\n    totals[customer] = totals.get(customer, 0) + amount\n"
        "    return totals",
        "The default argument `totals={{}}` is created once, when the function is defined, not on every call. Every "
        "call that leaves it out shares the same dictionary, so the totals from one run carry into the next.",
        "def add_{thing}(customer, amount, totals=None):\n    if totals is None:\n        totals = {{}}\n"
        "    totals[customer] = totals.get(customer, 0) + amount\n    return totals",
    ),
    (
        "JavaScript",
        "This loop is supposed to log 0 to {n} after a short delay but it prints {n1} every time. Why?",
        "for (var i = 0; i <= {n}; i++) {{\n  setTimeout(() => console.log(i), 100);\n}}",
        "`var` is scoped to the function, not the loop, so all the callbacks close over the same `i`. By the time the "
        "timers fire, the loop has finished and `i` is {n1}.",
        "for (let i = 0; i <= {n}; i++) {{\n  setTimeout(() => console.log(i), 100);\n}}",
    ),
    (
        "SQL",
        "My query for {thing} per region returns far too many rows since I added the join to orders. What am I "
        "missing?",
        "SELECT r.name, COUNT(*)\nFROM regions r\nJOIN orders o ON o.region_id = r.id\nJOIN {thing} t ON "
        "t.region_id = r.id\nGROUP BY r.name;",
        "Joining two one-to-many tables to the same parent multiplies the rows: every order is paired with every "
        "row of `{thing}` in its region, so the count is orders x {thing}, not either one.",
        "SELECT r.name,\n       (SELECT COUNT(*) FROM {thing} t WHERE t.region_id = r.id) AS {thing}_count\n"
        "FROM regions r;",
    ),
    (
        "Bash",
        "My backup script breaks on folders with spaces in the name. It's only a few lines, can you see why?",
        'for dir in $(ls {folder}); do\n  tar czf "$dir.tgz" $dir\ndone',
        "`$(ls ...)` splits its output on whitespace, so a folder called `Tax Returns` becomes two words, and the "
        "unquoted `$dir` splits again when it is passed to `tar`.",
        'for dir in {folder}/*/; do\n  tar czf "${{dir%/}}.tgz" "$dir"\ndone',
    ),
    (
        "Python",
        "I'm reading a {n}-line CSV of {thing} and the memory goes through the roof. Is pandas the problem?",
        "import csv\nrows = list(csv.DictReader(open('{thing}.csv')))\nfor row in rows:\n    process(row)",
        "Not pandas here: `list(...)` reads every row into memory before the loop starts, and the file is never "
        "closed. Iterating over the reader directly keeps one row in memory at a time.",
        "import csv\nwith open('{thing}.csv', newline='') as f:\n    for row in csv.DictReader(f):\n"
        "        process(row)",
    ),
    (
        "JavaScript",
        "I fetch a list of {thing} and then call .map on it, but I get 'data.map is not a function'. Help?",
        "const data = fetch('/api/{thing}').then(r => r.json());\nconst names = data.map(x => x.name);",
        "`fetch` returns a promise, and so does `.then`, so `data` is a promise of the list, not the list. You have "
        "to wait for it before mapping.",
        "const response = await fetch('/api/{thing}');\nconst data = await response.json();\n"
        "const names = data.map(x => x.name);",
    ),
    (
        "Python",
        "Why does my check for duplicate {thing} say two identical entries are different? They print the same.",
        "a = {{'id': {n}, 'tags': ['x', 'y']}}\nb = {{'id': {n}, 'tags': ['y', 'x']}}\nprint(a == b)",
        "Lists compare in order, so `['x', 'y']` and `['y', 'x']` differ even though they hold the same tags. The "
        "printout hides it when the order only differs deep inside.",
        "def same(a, b):\n    return a['id'] == b['id'] and set(a['tags']) == set(b['tags'])",
    ),
    (
        "Python",
        "My retry loop for calling the {thing} API never stops when the service is down. What did I do wrong?",
        "attempt = 0\nwhile True:\n    try:\n        return call_api()\n    except TimeoutError:\n"
        "        attempt + 1\n        time.sleep(2 ** attempt)",
        "`attempt + 1` computes a value and throws it away; `attempt` stays 0, the sleep stays one second, and "
        "nothing ever ends the loop.",
        "for attempt in range({small}):\n    try:\n        return call_api()\n    except TimeoutError:\n"
        "        time.sleep(2 ** attempt)\nraise RuntimeError('gave up after {small} attempts')",
    ),
]
THINGS = "invoices refunds shipments bookings tickets readings subscriptions payments".split()
FOLDERS = ["~/Documents", "/srv/shares", "~/Projects", "/mnt/photos"]
DEBUG_TIPS = [
    "Add a test that calls the function twice in a row; that is the case that caught this.",
    "A linter would have flagged this: it is a common enough mistake to have its own rule.",
    "Print the type of the value just before the failing line; it usually tells you more than the value.",
    "Reproduce it with the smallest input you can, then change one thing at a time.",
    "Check the same pattern elsewhere in the codebase; this kind of bug travels in groups.",
    "If it runs in production, log the inputs that trigger it before you deploy the fix.",
]


def debug(rng: random.Random, topic: dict[str, str]) -> tuple[str, str]:
    lang, ask, code, why, fixed = rng.choice(BUGS)
    n = rng.randint(4, 12)
    fill = {"thing": rng.choice(THINGS), "n": n, "n1": n + 1, "folder": rng.choice(FOLDERS), "small": rng.randint(3, 6)}
    ask, code, why, fixed = (s.format(**fill) for s in (ask, code, why, fixed))
    fence = {"Python": "python", "JavaScript": "javascript", "SQL": "sql", "Bash": "bash"}[lang]
    request = f"{ask}\n\n```{fence}\n{code}\n```"
    tips = "\n".join(f"- {t}" for t in rng.sample(DEBUG_TIPS, 3))
    answer = (
        f"## What's going on\n\n{why}\n\n## The fix\n\n```{fence}\n{fixed}\n```\n\n## Why this works\n\n"
        f"{_because(rng, lang)}\n\n## To avoid it next time\n\n{tips}"
    )
    return request, answer


def _because(rng: random.Random, lang: str) -> str:
    return rng.choice(
        [
            f"The fixed version makes the state explicit: each call gets its own value, so nothing depends on what "
            f"an earlier call did. That is the general rule in {lang}: shared mutable state is where surprises live.",
            f"Now the code says what it means. {lang} did exactly what the original asked for; the original just "
            f"asked for something slightly different from what you intended.",
            f"It removes the hidden step. In {lang} the quickest way to find this class of bug is to ask what the "
            f"value is at the moment it is used, not the moment it was written.",
        ]
    )


DISHES = {
    "chickpea curry": (
        [
            "2 tins chickpeas",
            "1 tin coconut milk",
            "2 onions",
            "4 cloves garlic",
            "thumb of ginger",
            "2 tsp garam masala",
            "1 tsp turmeric",
            "handful of spinach",
        ],
        [
            "Soften the onions in oil for 10 minutes",
            "Add garlic, ginger and spices, cook for a minute",
            "Tip in chickpeas and coconut milk, simmer 20 minutes",
            "Stir through spinach until wilted",
        ],
    ),
    "lemon chicken traybake": (
        ["6 chicken thighs", "2 lemons", "800 g new potatoes", "1 red onion", "3 sprigs rosemary", "olive oil"],
        [
            "Heat the oven to 200°C",
            "Halve the potatoes and toss everything in oil, lemon juice and salt",
            "Roast 45 minutes, turning once",
            "Rest 5 minutes and squeeze over the roasted lemon",
        ],
    ),
    "mushroom risotto": (
        [
            "300 g arborio rice",
            "250 g chestnut mushrooms",
            "1 litre stock",
            "1 shallot",
            "glass of white wine",
            "40 g parmesan",
            "knob of butter",
        ],
        [
            "Fry the mushrooms hard and set aside",
            "Soften the shallot, add the rice and toast it",
            "Add wine, then stock a ladle at a time for 18 minutes",
            "Stir in mushrooms, butter and parmesan",
        ],
    ),
    "black bean tacos": (
        [
            "2 tins black beans",
            "8 small tortillas",
            "1 avocado",
            "1 lime",
            "small red cabbage",
            "1 tsp cumin",
            "1 tsp smoked paprika",
            "hot sauce",
        ],
        [
            "Warm the beans with cumin and paprika, mash a third of them",
            "Shred the cabbage and dress with lime",
            "Char the tortillas in a dry pan",
            "Fill with beans, cabbage, avocado and hot sauce",
        ],
    ),
    "lemon drizzle traybake": (
        [
            "225 g softened butter",
            "225 g caster sugar",
            "275 g self-raising flour",
            "4 eggs",
            "2 lemons",
            "175 g granulated sugar for the drizzle",
        ],
        [
            "Heat the oven to 180°C and line a 30 x 23 cm tin",
            "Beat butter, sugar, flour, eggs and lemon zest until smooth",
            "Bake 30-35 minutes until springy",
            "Mix lemon juice and sugar, spoon over while warm",
        ],
    ),
    "apple and almond cake": (
        [
            "3 apples",
            "150 g ground almonds",
            "100 g self-raising flour",
            "150 g butter",
            "150 g light brown sugar",
            "3 eggs",
            "handful of flaked almonds",
        ],
        [
            "Heat the oven to 170°C and line a 23 cm tin",
            "Cream butter and sugar, beat in eggs, fold in almonds and flour",
            "Fold in two chopped apples, slice the third over the top",
            "Scatter flaked almonds, bake 50 minutes, cool in the tin",
        ],
    ),
    "salmon with miso glaze": (
        ["4 salmon fillets", "2 tbsp white miso", "1 tbsp honey", "1 tbsp soy sauce", "pak choi", "jasmine rice"],
        [
            "Mix miso, honey and soy",
            "Brush over the salmon and leave 15 minutes",
            "Grill 8 minutes until caramelised at the edges",
            "Serve on rice with steamed pak choi",
        ],
    ),
    "lentil shepherd's pie": (
        [
            "250 g green lentils",
            "2 carrots",
            "1 onion",
            "2 tbsp tomato purée",
            "1 kg potatoes",
            "splash of milk",
            "thyme",
        ],
        [
            "Cook lentils with carrot, onion, purée and thyme for 25 minutes",
            "Boil and mash the potatoes",
            "Spread the mash over the lentils",
            "Bake 25 minutes at 190°C until golden",
        ],
    ),
    "pasta with sausage and fennel": (
        ["400 g rigatoni", "6 pork sausages", "1 fennel bulb", "1 tin tomatoes", "pinch of chilli flakes", "parmesan"],
        [
            "Squeeze the sausage meat out and brown it in pieces",
            "Add sliced fennel and cook until soft",
            "Add tomatoes and chilli, simmer 15 minutes",
            "Toss with pasta and a splash of its water",
        ],
    ),
    "halloumi and roasted vegetable couscous": (
        ["250 g halloumi", "2 courgettes", "1 red pepper", "1 aubergine", "200 g couscous", "mint", "lemon"],
        [
            "Roast the chopped vegetables 30 minutes at 200°C",
            "Pour boiling stock over the couscous, cover 5 minutes",
            "Fry halloumi slices until golden",
            "Fluff couscous with lemon and mint, top with everything",
        ],
    ),
}
COOK_TIPS = [
    "It keeps three days in the fridge and tastes better on the second.",
    "Double the quantities and freeze half in portions.",
    "If you are short of time, prepare the vegetables the night before.",
    "Taste for salt at the end, not the start: stock and cheese add plenty.",
    "A squeeze of lemon or a spoon of yoghurt at the table lifts it.",
    "Swap the carbohydrate for whatever is in the cupboard; the method does not change.",
]


def recipe(rng: random.Random, topic: dict[str, str]) -> tuple[str, str]:
    dish = topic.get("dish") or rng.choice(sorted(DISHES))
    ingredients, steps = DISHES.get(dish, DISHES[rng.choice(sorted(DISHES))])
    people = rng.choice([2, 3, 4, 6])
    minutes = rng.choice([25, 30, 40, 45, 60])
    request = rng.choice(
        [
            f"Can you give me a recipe for {dish} for {people} people?",
            f"I have about {minutes} minutes tonight. How would I make {dish}?",
            f"What's a good, not too fussy way to cook {dish}? It's for {people}.",
        ]
    )
    intro = topic.get("intro") or rng.choice(
        [
            f"Here is a reliable {dish} for {people}, about {minutes} minutes start to finish.",
            f"Good choice: {dish} is forgiving and mostly hands-off. This serves {people}.",
            f"This version of {dish} keeps the washing-up down to two pans and feeds {people}.",
        ]
    )
    method = "\n".join(f"{i}. {s}." for i, s in enumerate(steps, 1))
    answer = (
        f"{intro}\n\n### Ingredients\n\n" + "\n".join(f"- {x}" for x in ingredients) + f"\n\n### Method\n\n{method}"
        f"\n\n### Tips\n\n" + "\n".join(f"- {t}" for t in rng.sample(COOK_TIPS, 3))
    )
    return request, answer


CITY_SIGHTS = {
    "Lisbon": [
        "the Alfama's lanes up to the castle",
        "tram 28 early, before the crowds",
        "the tiles at the Azulejo museum",
        "sunset at the Senhora do Monte viewpoint",
        "a day trip to Sintra",
        "pastéis in Belém",
    ],
    "Valencia": [
        "the Turia gardens by bike",
        "the Central Market in the morning",
        "the City of Arts and Sciences",
        "the old town and the cathedral tower",
        "a boat on the Albufera lagoon",
        "the beach at Malvarrosa",
    ],
    "Edinburgh": [
        "Arthur's Seat at sunrise",
        "the Old Town closes",
        "Dean Village and the Water of Leith walk",
        "the National Museum",
        "Calton Hill at dusk",
        "a day trip to North Berwick",
    ],
    "Kraków": [
        "the Main Square and the Cloth Hall",
        "Kazimierz's cafés",
        "Wawel Castle",
        "the salt mine at Wieliczka",
        "the Vistula boulevards",
        "Podgórze and the Schindler factory museum",
    ],
    "Copenhagen": [
        "Nyhavn early in the morning",
        "a harbour bus to Refshaleøen",
        "the Design Museum",
        "cycling to Amager Strandpark",
        "Tivoli in the evening",
        "the Botanical Garden glasshouse",
    ],
    "Ghent": [
        "the Graslei and Korenlei quays",
        "Gravensteen castle",
        "the Ghent Altarpiece at St Bavo's",
        "a canal boat tour",
        "the Patershol lanes for dinner",
        "a day trip to Bruges",
    ],
    "Lyon": [
        "the traboules of Vieux Lyon",
        "Fourvière hill and basilica",
        "Les Halles Paul Bocuse",
        "the Parc de la Tête d'Or",
        "the Croix-Rousse market",
        "the Musée des Confluences",
    ],
}
STAYS = ["a small guesthouse in the old town", "an apartment near the station", "a hotel by the river"]


def trip(rng: random.Random, topic: dict[str, str]) -> tuple[str, str]:
    city = topic.get("city") or rng.choice(sorted(CITY_SIGHTS))
    days = int(topic.get("days") or rng.randint(2, 4))
    request = rng.choice(
        [
            f"Can you plan {days} days in {city} for me? First time there.",
            f"I have a long weekend in {city}, {days} days. What should I not miss?",
            f"Put together a rough {days}-day itinerary for {city}, please, nothing too rushed.",
        ]
    )
    free = rng.sample(FREE_TIME, max(0, 2 * days - len(CITY_SIGHTS[city])))
    sights = rng.sample(CITY_SIGHTS[city], min(len(CITY_SIGHTS[city]), 2 * days)) + free
    plan = "\n\n".join(
        f"### Day {d + 1}\n\n- Morning: {sights[2 * d % len(sights)]}\n- Afternoon: "
        f"{sights[(2 * d + 1) % len(sights)]}\n- Evening: {rng.choice(EVENINGS)}"
        for d in range(days)
    )
    stay = topic.get("stay") or rng.choice(STAYS)
    answer = (
        f"Here is a relaxed {days}-day plan for {city}, with one anchor each half-day and room to wander.\n\n{plan}\n\n"
        f"### Where to stay\n\nI'd suggest {stay}: {rng.choice(STAY_WHY)}\n\n### Getting around\n\n"
        f"{rng.choice(GETTING_AROUND)} Budget roughly {rng.randint(60, 140)} euros a day each for food, transport "
        "and entry fees, more if you eat out twice a day."
    )
    return request, answer


FREE_TIME = [
    "nothing planned: wander, sit in a café, go back to whatever you liked best",
    "a slow morning and a long lunch",
    "the neighbourhood around where you stay, on foot",
    "a park or the waterfront, with a book",
]
EVENINGS = [
    "dinner somewhere small off the main square; book ahead at weekends",
    "a slow walk by the water, then an early night",
    "a local wine bar, then dinner late as the locals do",
    "a food market for a picnic supper",
    "a concert or whatever is on at the old theatre",
]
STAY_WHY = [
    "it is central enough to walk everywhere, and quiet at night.",
    "good value, breakfast included, and close to a tram stop.",
    "the rooms are small but the location saves an hour a day.",
]
GETTING_AROUND = [
    "Walk the centre and use a day pass for anything further.",
    "Buy a rechargeable transport card at the airport; it covers buses and trams.",
    "Most of it is walkable; hire bikes for the longer stretches.",
]

EMAIL_KINDS = [
    ("my landlord", "asking when the broken boiler will be fixed"),
    ("a client", "saying the project will be a week late"),
    ("my manager", "asking to work from home on Fridays"),
    ("a neighbour", "about their car blocking our drive"),
    ("the council", "reporting a pothole on our street"),
    ("a recruiter", "turning down an offer politely"),
    ("my team", "announcing the new on-call rota"),
    ("a supplier", "chasing an order that is three weeks late"),
]


def email(rng: random.Random, topic: dict[str, str]) -> tuple[str, str]:
    to, about = (topic["to"], topic["about"]) if "about" in topic else rng.choice(EMAIL_KINDS)
    request = rng.choice(
        [f"Can you draft an email to {to} {about}? Keep it polite but firm.", f"Help me write to {to} {about}."]
    )
    subject = topic.get("subject") or about[0].upper() + about[1:]
    answer = (
        f"Here's a draft you can adapt.\n\n**Subject:** {subject}\n\nHello,\n\n"
        f"{rng.choice(EMAIL_OPENERS)} {about}. {rng.choice(EMAIL_MIDDLES)}\n\n{rng.choice(EMAIL_ASKS)}\n\n"
        f"{rng.choice(EMAIL_CLOSES)}\n\nBest wishes,\n[Your name]\n\n### Notes\n\n"
        + "\n".join(f"- {n}" for n in rng.sample(EMAIL_NOTES, 3))
    )
    return request, answer


EMAIL_OPENERS = [
    "I hope you're well. I'm writing",
    "Thank you for your message last week. I'm getting in touch",
    "I wanted to drop you a quick note",
]
EMAIL_MIDDLES = [
    "I'd like to keep this simple and sort it out in a way that works for both of us.",
    "I appreciate that things are busy, so I've kept the details below to the essentials.",
    "To give some context, this has come up a couple of times now and I'd rather address it directly.",
]
EMAIL_ASKS = [
    "Could you let me know by the end of the week how you'd like to proceed?",
    "Would a short call on Thursday or Friday work to agree the next step?",
    "If it helps, I'm happy to send over anything else you need.",
]
EMAIL_CLOSES = [
    "Thanks in advance for your help.",
    "Many thanks for understanding.",
    "I look forward to hearing from you.",
]
EMAIL_NOTES = [
    "The subject line says what it is about, so it is easy to find later.",
    "One clear request and a date: emails with a deadline get answered sooner.",
    "If you want it warmer, add a line about something personal at the start.",
    "Keep a copy; if this escalates, a polite written record helps.",
    "Read it aloud once before sending; awkward phrasing shows up immediately.",
]


def maths(rng: random.Random, topic: dict[str, str]) -> tuple[str, str]:
    kind = int(topic.get("kind", rng.randrange(5)))
    if kind == 0:
        p, r, n = rng.choice([1000, 2500, 5000]), rng.choice([3, 4, 5, 6]), rng.choice([5, 10, 15])
        total = p * (1 + r / 100) ** n
        return (
            f"Can you explain compound interest with an example? Say {p} at {r}% for {n} years.",
            f"## Compound interest\n\nInterest is added to the balance, and next year's interest is paid on the new "
            f"balance too. The formula is\n\n`A = P × (1 + r)^n`\n\nwhere P is the starting amount, r the yearly rate "
            f"as a decimal and n the number of years.\n\n### Your example\n\n- P = {p}\n- r = {r / 100}\n- n = {n}\n\n"
            f"A = {p} × {1 + r / 100}^{n} ≈ **{total:,.2f}**\n\nWith simple interest you would have "
            f"{p * (1 + r * n / 100):,.2f}; the difference, {total - p * (1 + r * n / 100):,.2f}, is interest "
            f"earned on interest.\n\n### Rule of 72\n\nDivide 72 by the rate to estimate the doubling time: at {r}% "
            f"that is about {72 / r:.0f} years.",
        )
    if kind == 1:
        prior, sens, fp = rng.choice([1, 2, 5]), rng.choice([90, 95, 99]), rng.choice([5, 8, 10])
        hit = prior * sens / 100
        false = (100 - prior) * fp / 100
        return (
            f"I never understood Bayes' theorem. Can you use a test that's {sens}% accurate as an example?",
            f"## Bayes with counts, not formulas\n\nImagine 100 people, {prior} of whom have the condition.\n\n"
            f"- The test catches {sens}% of real cases: {hit:.2f} true positives.\n- It wrongly flags {fp}% of the "
            f"other {100 - prior}: {false:.1f} false positives.\n\nSo of everyone who tests positive, only "
            f"{hit:.2f} / ({hit:.2f} + {false:.1f}) ≈ **{100 * hit / (hit + false):.0f}%** actually have it.\n\n"
            "### The formula\n\n`P(A|B) = P(B|A) × P(A) / P(B)`\n\nThe surprise comes from the base rate: when the "
            "condition is rare, false positives from the large healthy group outnumber true ones. That is why "
            "screening programmes confirm a positive with a second, different test.",
        )
    if kind == 2:
        xs = sorted(rng.sample(range(2, 30), 6))
        mean = sum(xs) / 6
        var = sum((x - mean) ** 2 for x in xs) / 6
        return (
            f"What does standard deviation actually mean? Can you work it out for {', '.join(map(str, xs))}?",
            f"## Standard deviation\n\nIt is the typical distance of a value from the average.\n\n1. Mean: "
            f"{sum(xs)} / 6 = {mean:.2f}\n2. Squared distances: "
            + ", ".join(f"{(x - mean) ** 2:.1f}" for x in xs)
            + f"\n3. Their average (variance): {var:.2f}\n4. Square root: **{var**0.5:.2f}**\n\nSo the values sit "
            f"about {var**0.5:.1f} from {mean:.1f} on average. For a sample rather than a whole population, divide by "
            f"5 instead of 6 in step 3, which gives {(var * 6 / 5) ** 0.5:.2f}.\n\n### Why square?\n\nSquaring stops "
            "distances above and below the mean from cancelling out, and it weights big deviations more, which is "
            "usually what you want to notice.",
        )
    if kind == 3:
        a, b = rng.randint(2, 9), rng.randint(2, 5)
        return (
            f"How do I differentiate {a}x^{b} + 3x? My kid asked and I've forgotten everything.",
            f"## The power rule\n\nFor `x^n` the derivative is `n·x^(n-1)`: bring the power down, reduce it by one.\n\n"
            f"### Step by step\n\n1. `{a}x^{b}` → {a} × {b} · x^{b - 1} = `{a * b}x^{b - 1}`\n2. `3x` → `3`\n\n"
            f"So the derivative is **{a * b}x^{b - 1} + 3**.\n\n### What it means\n\nThe derivative is the slope of "
            f"the curve at each point. At x = 1 the curve rises by {a * b + 3} for every step to the right; at x = 0 "
            "only by 3.\n\n### A check\n\nPick x = 1 and x = 1.001, compute the original both times, and divide the "
            "difference by 0.001: you get very nearly the same number.",
        )
    price, off, again = rng.choice([80, 120, 250]), rng.choice([20, 25, 30]), rng.choice([10, 20])
    after = price * (1 - off / 100) * (1 - again / 100)
    return (
        f"A shop takes {off}% off and then another {again}% at the till. Is that {off + again}% off?",
        f"## Percentages stack by multiplying\n\nNo: the second discount applies to the already reduced price.\n\n"
        f"- After {off}%: {price} × {1 - off / 100:.2f} = {price * (1 - off / 100):.2f}\n- After another {again}%: "
        f"× {1 - again / 100:.2f} = **{after:.2f}**\n\nThat is {100 * (1 - after / price):.0f}% off in total, not "
        f"{off + again}%.\n\n### The general rule\n\nMultiply the remaining fractions: (1 - a)(1 - b). The order "
        "does not matter, and the total is always a little less than the sum.",
    )


PRODUCTS = {
    "robot vacuum": ["Dustwise S7", "Nimbus Clean 4", "Orla V2"],
    "espresso machine": ["Caldera One", "Breva Duo", "Fioro Classic"],
    "e-reader": ["Pagefold 7", "Lumen Reader Plus", "Inkstone Go"],
    "running shoes": ["Strider 9", "Cloudpace Trail", "Tempo Glide"],
    "air fryer": ["Crispa XL", "Heatwave 5L", "Vortexa Duo"],
    "noise-cancelling headphones": ["Quietude 3", "Sonaris 700", "Halo ANC"],
    "electric toothbrush": ["Brightline Pro", "Orasonic 5", "Dentra Flex"],
}
TRAITS = ["battery life", "build quality", "price", "noise", "app", "warranty", "weight", "ease of cleaning"]


def compare(rng: random.Random, topic: dict[str, str]) -> tuple[str, str]:
    if "items" in topic:
        category, items = topic["category"], topic["items"].split("|")
    else:
        category = rng.choice(sorted(PRODUCTS))
        items = PRODUCTS[category]
    pick = topic.get("pick") or rng.choice(items)
    request = f"Can you compare the {', '.join(items[:-1])} and {items[-1]}? I need a {category}."
    traits = rng.sample(TRAITS, 4)
    rows = "\n".join(
        f"| {item} | "
        + " | ".join(rng.choice(["good", "very good", "average", "excellent", "weak"]) for _ in traits)
        + f" | {rng.randint(8, 60) * 10} |"
        for item in items
    )
    others = [i for i in items if i != pick]
    answer = (
        f"## {category[0].upper() + category[1:]}: how they compare\n\n| model | "
        + " | ".join(traits)
        + " | price (€) |\n|---|"
        + "---|" * (len(traits) + 1)
        + f"\n{rows}\n\n### In short\n\n- **{others[0]}**: {rng.choice(VERDICTS)}\n- **{others[1]}**: "
        f"{rng.choice(VERDICTS)}\n- **{pick}**: {rng.choice(WINNING)}\n\n### My recommendation\n\nFor what you "
        f"describe I'd go with the **{pick}**. {topic.get('because') or rng.choice(BECAUSE)} Check the return policy "
        "before you buy, and wait for a sale if you are not in a hurry: prices on these move by 10-20% every few weeks."
    )
    return request, answer


VERDICTS = [
    "strong on paper, but reviews mention it fails after a year or two.",
    "the cheapest, and it shows in the finish.",
    "excellent, but you pay a lot for features you may never use.",
    "fine for occasional use, frustrating every day.",
]
WINNING = [
    "the best balance of what you asked for, without the premium price.",
    "slightly dearer, but it does the one thing you care about best.",
    "reliable, well supported, and easy to live with.",
]
BECAUSE = [
    "It matches your budget and the reviews are consistent over years, not weeks.",
    "It wins on the things you use daily, and loses only on extras.",
    "The warranty alone makes up for the small price difference.",
]

PLANS = [
    (
        "a 5K in eight weeks",
        ["run/walk 1 min/1 min x 10", "rest", "run/walk 2/1 x 8", "rest", "easy 20 min walk", "run 5 min x 4", "rest"],
    ),
    (
        "a month of studying for a certification exam",
        [
            "read one chapter, make flashcards",
            "practice questions, 45 min",
            "review wrong answers",
            "rest",
            "one timed mock section",
            "read the next chapter",
            "light review",
        ],
    ),
    (
        "saving for a holiday by summer",
        [
            "track every spend for a week",
            "cancel one unused subscription",
            "move a fixed sum on payday",
            "cook at home four nights",
            "sell two things you do not use",
            "check the total",
            "rest",
        ],
    ),
    (
        "getting stronger with home workouts",
        [
            "squats and push-ups, 3 sets",
            "20 min walk",
            "lunges and rows with a backpack, 3 sets",
            "rest",
            "full body circuit, 25 min",
            "long walk",
            "stretching",
        ],
    ),
    (
        "learning to touch-type",
        [
            "home row drills, 15 min",
            "top row, 15 min",
            "bottom row, 15 min",
            "rest",
            "typing a page of a book",
            "speed test and note the score",
            "rest",
        ],
    ),
]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def plan(rng: random.Random, topic: dict[str, str]) -> tuple[str, str]:
    goal, week = (topic["goal"], topic["week"].split("|")) if "goal" in topic else rng.choice(PLANS)
    weeks = rng.randint(3, 8)
    request = rng.choice(
        [f"Can you make me a weekly plan for {goal}?", f"I'd like to work on {goal}. Where do I start?"]
    )
    table = "\n".join(f"| {d} | {w} |" for d, w in zip(DAYS, week, strict=False))
    answer = (
        f"## A plan for {goal}\n\nHere is a week you can repeat for {weeks} weeks, adding a little each week.\n\n"
        f"| day | what |\n|---|---|\n{table}\n\n### How to progress\n\n"
        + "\n".join(f"- {p}" for p in rng.sample(PROGRESS, 3))
        + f"\n\n### If you miss a day\n\n{rng.choice(MISSED)}"
    )
    return request, answer


PROGRESS = [
    "Increase only one thing at a time: length, or intensity, never both in the same week.",
    "Write down what you did; after two weeks the record is motivating on its own.",
    "Every fourth week, do a little less and let your body or brain catch up.",
    "If something hurts or bores you, swap it for something similar rather than skipping it.",
    "Keep the start time fixed; habits stick to a time of day better than to a plan.",
]
MISSED = [
    "Do not double up the next day. Carry on with the plan as written; one missed day changes nothing.",
    "Move the session to the next rest day, and if that is taken, let it go.",
]

CONCEPTS = {
    "what an index fund is": "An index fund buys every company in a market index in proportion to its size, so it "
    "tracks the market instead of trying to beat it. Fees are low because nobody is paid to pick shares, and over "
    "long periods most actively managed funds fail to beat the index after their fees.",
    "how DNS works": "When you type an address, your computer asks a resolver (usually your provider's) for its IP "
    "address. The resolver asks a root server which servers handle the top-level domain, then asks those which "
    "servers handle the domain, then asks those for the address, and caches each answer for as long as its TTL.",
    "how vaccines train the immune system": "A vaccine shows the immune system a harmless piece or copy of a "
    "pathogen, so it builds antibodies and memory cells without the illness. When the real thing arrives, memory "
    "cells recognise it and the response starts in days rather than weeks.",
    "why the sky is blue": "Sunlight holds every colour. Air molecules scatter short wavelengths far more than long "
    "ones (Rayleigh scattering goes with the fourth power of frequency), so blue light is bounced across the whole "
    "sky while red and yellow mostly pass straight through.",
    "how a heat pump works": "A heat pump moves heat rather than making it: a refrigerant evaporates outside, "
    "absorbing heat even from cold air, is compressed so its temperature rises, and condenses inside, releasing the "
    "heat. One unit of electricity can move three or four units of heat.",
    "what inflation does to savings": "Inflation raises prices, so money in an account that pays less than the "
    "inflation rate buys less each year even though the number grows. The real return is roughly the interest "
    "rate minus inflation.",
    "how git rebase differs from merge": "A merge joins two branches with a new commit that has both as parents, "
    "keeping history as it happened. A rebase replays your commits on top of the other branch, rewriting them, so "
    "history reads as a straight line but the commits get new identities.",
    "how end-of-round goals score in a board game": "At the end of each round you compare how many of the goal's "
    "item each player has: most scores the top value, second place the next, and ties share the points of the "
    "places they cover, rounded down. Goals get more valuable as rounds go on, so an early lead matters less than "
    "setting up for the last two rounds.",
    "settling a kitten into a new home": "Start with one quiet room holding a litter tray, water, food and a hiding "
    "place, away from the tray. Let the kitten come to you, keep meals on the breeder's or shelter's food for the "
    "first week, and book a vet check for vaccinations and worming within a few days.",
    "the difference between ser and estar": "Both mean 'to be'. Ser is for what something is: identity, origin, "
    "time, what it is made of (soy profesora, es de Valencia, son las tres). Estar is for states and location: how "
    "or where something is right now (estoy cansada, está en casa). Es aburrido means he is boring; está aburrido "
    "means he is bored.",
    "how sourdough starter works": "A starter is a culture of wild yeasts and lactic acid bacteria living on flour "
    "and water. The yeasts make the gas that raises the bread; the bacteria make the acids that give the sour taste "
    "and help the loaf keep.",
}


def explain(rng: random.Random, topic: dict[str, str]) -> tuple[str, str]:
    concept = topic.get("concept") or rng.choice(sorted(CONCEPTS))
    body = CONCEPTS.get(concept) or CONCEPTS[rng.choice(sorted(CONCEPTS))]
    request = rng.choice([f"Can you explain {concept} in plain words?", f"Quick one: {concept}? Keep it simple."])
    answer = (
        f"## {concept[0].upper() + concept[1:]}\n\n{body}\n\n### An analogy\n\n{rng.choice(ANALOGIES)}\n\n"
        "### Common misunderstandings\n\n" + "\n".join(f"- {m}" for m in rng.sample(MISREAD, 2)) + "\n\n"
        f"### If you want to go further\n\n{rng.choice(FURTHER)}"
    )
    return request, answer


ANALOGIES = [
    "Think of it like a library catalogue: you never search the shelves directly, you ask something that knows "
    "where to look, and it remembers the answer for next time.",
    "It is a bit like a relay race: each stage only has to do one simple thing well, and the result comes from the "
    "hand-offs.",
    "Picture a thermostat: the interesting part is not any single reading but the loop that keeps correcting itself.",
]
MISREAD = [
    "That it happens all at once; in practice it is several small steps, each of which can fail on its own.",
    "That more is always better; past a point the returns fall off quickly.",
    "That it is new; the idea is decades old, only the tools are recent.",
    "That experts agree on the details; the broad picture is settled, the specifics less so.",
]
FURTHER = [
    "A good next step is to try it on a small example of your own and see where your intuition breaks.",
    "The Wikipedia article is decent, but an introductory textbook chapter will be clearer.",
    "Ask me for a worked example with your own numbers and we can go through it line by line.",
]

MORE = {
    "debug": [
        "A word on testing: the bug survived because nothing exercised the function twice, or with the awkward "
        "input. A test that reproduces the failure first, then passes with the fix, stops it coming back when "
        "someone refactors this code in six months.",
        "It is also worth reading the error, or the wrong output, literally. Most of the time the message names the "
        "exact line and the exact type that surprised it; the hard part is believing it rather than the code you "
        "think you wrote.",
        "If the code runs in several places (a cron job, a worker, a web request), check that each one picked up "
        "the fix: a restart is easy to forget, and an old process will keep producing the old behaviour.",
        "Finally, consider logging the inputs around this spot for a week. If anything like this happens again you "
        "will have the data to reproduce it, instead of guessing from a user's description.",
        "Performance-wise, the fixed version costs nothing extra: the work it does is the same, only the place where "
        "the state lives has changed.",
    ],
    "recipe": [
        "On timing: get everything chopped and measured before you turn the heat on. It feels slower, but the cooking "
        "itself then takes half the attention and nothing burns while you hunt for an ingredient.",
        "For a side, a sharp green salad with a mustard dressing works with almost anything here, or some "
        "steamed greens with lemon and olive oil if you want something warm.",
        "If anyone eating has allergies or dislikes, most of the ingredients can be swapped one for one; tell me "
        "what needs to go and I can suggest a replacement that keeps the balance of the dish.",
        "Leftovers make a good lunch: pack them in a shallow container so they cool quickly, refrigerate within an "
        "hour, and reheat until piping hot all the way through.",
        "Seasoning is where home cooking most often falls short. Add salt in small amounts at several stages and "
        "taste as you go; a final pinch and a squeeze of acid at the end usually makes the difference.",
    ],
    "trip": [
        "Book the one or two things that sell out (a popular restaurant, a timed entry) before you go, and leave the "
        "rest flexible. The best moments on short trips are usually the unplanned ones in between.",
        "Check opening days before you fix the order: many museums and some markets close on Mondays, and a few "
        "sights shut early out of season.",
        "Comfortable shoes matter more than anything else on this plan; old towns mean cobbles and hills, and you "
        "will walk fifteen to twenty thousand steps a day without noticing.",
        "If the weather turns, swap an outdoor day with an indoor one; the days are built so they can be reordered "
        "without losing anything.",
        "Travel insurance and a photo of your passport on your phone cost little and save a great deal of stress if "
        "something goes wrong.",
    ],
    "email": [
        "On tone: this version is polite without being apologetic. If the relationship is warmer, add a line at the "
        "start; if this is the second time you are asking, you can be a little more direct and give a date.",
        "Keep the request and the deadline in the same paragraph, so the reader cannot miss what you need and by "
        "when. Everything else in the email is there to make that request easy to say yes to.",
        "If you do not hear back within the time you gave, a short follow-up that quotes this message is enough; "
        "there is no need to restate everything.",
        "Avoid sending it late at night or on a Friday afternoon if you can; messages sent early in the working day "
        "tend to be read and answered sooner.",
    ],
    "maths": [
        "The best way to make this stick is to try it with numbers of your own: change one value at a time and "
        "predict the result before you calculate it. Where your guess is wrong is exactly where the idea is still "
        "fuzzy.",
        "A spreadsheet is perfect for this kind of thing: put each step in its own column and you can see how the "
        "result moves when you change the inputs.",
        "If you are explaining this to someone else, start from the concrete example and only show the formula at "
        "the end; the formula is a summary of the example, not the other way round.",
        "Rounding at each step can shift the final digit or two, so keep full precision until the end and round "
        "only the answer.",
    ],
    "compare": [
        "Reviews are most useful when they are old: a product that still gets good reports after two years is a "
        "safer bet than one with a burst of enthusiastic launch reviews.",
        "Think about what you will actually use every day, and weigh that far more than the features that look good "
        "on a spec sheet. Most regret comes from paying for extras, not from missing them.",
        "Check what consumables or accessories cost over a few years; a cheaper device with expensive parts can "
        "cost more in the end.",
        "Whichever you choose, register the warranty when it arrives and keep the receipt somewhere you will find "
        "it; claims are much easier with both.",
    ],
    "plan": [
        "The plan is deliberately modest. The most common reason plans fail is that the first week is too ambitious, "
        "so you miss a day, feel behind, and stop. It is better to finish an easy week than abandon a hard one.",
        "Pair each session with something you already do every day, such as after your morning coffee or before "
        "dinner. Tying a new habit to an old one is more reliable than willpower.",
        "Review it at the end of each week: what was easy, what was hard, what you skipped. Adjust the next week "
        "from those notes rather than from the plan as written.",
        "Tell someone what you are doing. A friend who asks how it is going is worth more than any app.",
    ],
    "explain": [
        "The key idea to hold on to is the mechanism, not the vocabulary: if you can explain it to someone else in "
        "two sentences without the technical words, you understand it well enough for everyday use.",
        "Most of the confusion around this comes from explanations that start with the details. Start with what "
        "problem it solves, and the details fall into place as answers to obvious questions.",
        "If you want, I can draw up a one-page summary you can keep, or go through a concrete example step by step.",
        "There is a lot of misinformation around topics like this online; prefer sources that explain how they know "
        "what they claim, and be wary of anything that promises certainty.",
    ],
}


def _more(rng: random.Random, task: str) -> str:
    """Three more paragraphs, as an assistant adds: what to watch out for, what to do next."""
    return (
        "\n\n### "
        + rng.choice(["Worth knowing", "A few more thoughts", "Before you start", "One more thing"])
        + ("\n\n" + "\n\n".join(rng.sample(MORE[task], 3)))
    )


CONTEXTS = {
    "debug": [
        "Quick one before my stand-up, I've been staring at this for an hour and I'm starting to doubt everything.",
        "This is for a side project, nothing urgent, but it's been bugging me all evening and I can't let it go.",
        "A colleague wrote this and is off today, and of course it broke in the one place nobody looks at.",
    ],
    "recipe": [
        "I've got people coming round on Saturday and I'd like to cook something that doesn't keep me in the kitchen "
        "all night.",
        "Weeknight cooking rut, I keep making the same three things and everyone is bored of them.",
        "There's half a fridge of vegetables that need using up before the weekend.",
    ],
    "trip": [
        "We've got some leave to use up before the end of the year and cheap flights came up.",
        "A friend is getting married nearby so we thought we'd make a few days of it.",
        "I've never been and everyone says it's lovely, so I finally booked something.",
    ],
    "email": [
        "I've been putting this off for a week because I hate writing these.",
        "I need to send this today and every version I write sounds either rude or grovelling.",
        "This is a bit awkward and I'd like to get the tone right the first time.",
    ],
    "maths": [
        "This came up at dinner and nobody could agree, so settle it for us.",
        "I'm trying to actually understand this rather than just plugging numbers into a calculator.",
        "Helping with homework tonight and realised I'd forgotten how this works.",
    ],
    "compare": [
        "Our old one finally gave up and I don't want to spend ages reading reviews.",
        "I've narrowed it down but I keep going round in circles between these.",
        "Budget is flexible but I'd rather not pay for things I won't use.",
    ],
    "plan": [
        "I keep starting things and dropping them after two weeks, so I want something realistic this time.",
        "New month, new attempt. I have about half an hour most evenings.",
        "I'd like a structure I can stick on the fridge and actually follow.",
    ],
    "explain": [
        "Someone mentioned this at work and I nodded along without really knowing what it meant.",
        "I've read a couple of articles and I'm more confused than before.",
        "My teenager asked me and I realised I couldn't explain it properly.",
    ],
}

WRITERS: dict[str, Writer] = {
    "debug": debug,
    "recipe": recipe,
    "trip": trip,
    "email": email,
    "maths": maths,
    "compare": compare,
    "plan": plan,
    "explain": explain,
}
FOLLOW_UPS = [
    (
        "Thanks! Can you make that a bit shorter?",
        "Of course. The short version: {gist} Everything else is detail you can come back to when you need it.",
    ),
    (
        "Perfect, that's exactly what I needed.",
        "Glad it helps. If anything changes, tell me and I'll adjust it. In short: {gist}",
    ),
    (
        "Hmm, is there anything I should watch out for?",
        "Mainly one thing: don't try to change everything at once. "
        "Start with the first step, see how it goes, and adjust. To recap: {gist}",
    ),
]


# -- the users: each their own life, told in passing ------------------------------------------------------------


@dataclass(frozen=True)
class Beat:
    """One exchange a question needs: the user's request (the fact in a clause), and the task the assistant answers."""

    label: str
    at: float
    """Where in the months it falls, 0-1 (a story's beats keep their order)."""
    request: str
    task: str
    topic: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ask:
    """A question over beats: ``on`` pairs each evidence beat with the word it holds (``@`` marks the answer's
    message, the assistant's, instead of the request's)."""

    text: str
    kind: str
    answer: str
    on: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class User:
    name: str
    start: dt.date
    dated: Callable[[dt.date], str]
    tasks: tuple[str, ...]
    """The filler tasks this user brings, most often first."""
    beats: tuple[Beat, ...]
    asks: tuple[Ask, ...]


def _porto() -> User:
    b = Beat
    return User(
        "porto",
        dt.date(2024, 1, 8),
        lambda d: f"[{d:%a %-d %B %Y}]",
        ("debug", "debug", "explain", "recipe", "compare", "maths", "email", "trip"),
        (
            b(
                "job1",
                0.03,
                "I'm on the billing team at Fernway Logistics and one of our nightly jobs has started failing. {ask}",
                "debug",
            ),
            b(
                "wedding",
                0.08,
                "I'm redoing the invite list for my sister's wedding in Porto, can you draft a short "
                "email asking guests about dietary needs and plus-ones?",
                "email",
                {"to": "the wedding guests", "about": "asking about dietary needs and plus-ones"},
            ),
            b(
                "bike_buy",
                0.12,
                "I just bought a second-hand road bike for 640 euros, so I need to get fitter. Can "
                "you make me a plan for cycling to work three days a week?",
                "plan",
                {
                    "goal": "cycling to work three days a week",
                    "week": "ride in, easy|rest|ride in and back|rest|ride in|long easy ride|rest",
                },
            ),
            b(
                "cat1",
                0.16,
                "My cat Pistachio keeps walking across the keyboard mid-deploy, haha. Unrelated: "
                "can you explain how git rebase differs from merge?",
                "explain",
                {"concept": "how git rebase differs from merge"},
            ),
            b(
                "chilli",
                0.22,
                "Give me a dinner idea with plenty of chilli in it, and no meat or fish please.",
                "recipe",
                {"dish": "black bean tacos"},
            ),
            b(
                "lisbon",
                0.27,
                "We're adding four days in Lisbon after the wedding. Can you put an itinerary together? "
                "We'd rather walk around than queue for museums.",
                "trip",
                {"city": "Lisbon", "days": "4", "stay": "Casa do Arco, a guesthouse in the Alfama"},
            ),
            b(
                "knee",
                0.33,
                "I slipped on the ice and hurt my left knee last week, so cycling is off for now. Any "
                "idea how to keep fit without bending it much?",
                "plan",
                {
                    "goal": "staying fit while a knee heals",
                    "week": "upper body with bands|swim, arms only|rest|core work|swim|rest|walk on the flat",
                },
            ),
            b(
                "game1",
                0.38,
                "Just bought Wingspan for our Thursday game night. Can you explain how the end-of-round "
                "goals are scored?",
                "explain",
                {"concept": "how end-of-round goals score in a board game"},
            ),
            b(
                "laptop",
                0.44,
                "My work laptop is dying and I've got up to 1,800 euros. Can you compare the Lattice 14, "
                "the Kestrel Pro 15 and the Voss Air 13 for compiling code and running containers?",
                "compare",
                {
                    "category": "laptop for development",
                    "items": "Lattice 14|Kestrel Pro 15|Voss Air 13",
                    "pick": "Kestrel Pro 15",
                    "because": "Its 32 GB of memory matters more for containers than the others' thinner cases.",
                },
            ),
            b(
                "game2",
                0.5,
                "Picked up Cascadia too, game night has taken over my shelves. {ask}",
                "maths",
                {"kind": "4"},
            ),
            b(
                "job2",
                0.58,
                "Since I moved to Quillmark last month I'm writing code all day. Different bug: {ask}",
                "debug",
            ),
            b(
                "tofu",
                0.63,
                "Something with tofu or chickpeas again please, the hotter the better.",
                "recipe",
                {"dish": "chickpea curry"},
            ),
            b(
                "cat2",
                0.7,
                "Our old cat died in the spring and we've just brought home a grey kitten called Sable. "
                "What should I know about the first week with a kitten?",
                "explain",
                {"concept": "settling a kitten into a new home"},
            ),
            b(
                "bike_sell",
                0.76,
                "I sold the road bike today for 450 euros, the knee never really liked it. Can you "
                "help me write a short thank-you note to the buyer for collecting it?",
                "email",
                {"to": "the buyer", "about": "thanking them for collecting the bike"},
            ),
            b(
                "game3",
                0.84,
                "Bought Azul at the weekend, third new game this year. Totally unrelated: {ask}",
                "compare",
            ),
        ),
        (
            Ask("Where is my sister getting married?", "user_fact", "Porto", (("wedding", "Porto"),)),
            Ask(
                "Which hotel did you suggest for my Lisbon trip?",
                "assistant_fact",
                "Casa do Arco",
                (("lisbon@", "Casa do Arco"),),
            ),
            Ask(
                "Which laptop did you recommend I buy?",
                "assistant_fact",
                "Kestrel Pro 15",
                (("laptop@", "Kestrel Pro 15"),),
            ),
            Ask("Which body part of mine got damaged in a fall?", "paraphrased", "left knee", (("knee", "knee"),)),
            Ask("Who employs me at the moment?", "latest", "Quillmark", (("job2", "Quillmark"),)),
            Ask("What is my cat called now?", "latest", "Sable", (("cat2", "Sable"),)),
            Ask(
                "How much money did I lose on the road bike?",
                "multi_session",
                "190 euros (640 - 450)",
                (("bike_buy", "640"), ("bike_sell", "450")),
            ),
            Ask("When did I hurt myself slipping on the ice?", "temporal", "last week", (("knee", "last week"),)),
            Ask("When did I sell the road bike?", "temporal", "today", (("bike_sell", "today"),)),
            Ask(
                "How many board games have I told you I bought?",
                "counting",
                "3",
                (("game1", "Wingspan"), ("game2", "Cascadia"), ("game3", "Azul")),
            ),
            Ask(
                "What kind of dinner recipe would I like tonight?",
                "preference",
                "spicy and vegetarian",
                (("chilli", "chilli"), ("tofu", "hotter")),
            ),
            Ask(
                "What did I name the pet I had before my current one?",
                "multi_session",
                "Pistachio",
                (("cat1", "Pistachio"), ("cat2", "Sable")),
            ),
            Ask(
                "Did I buy Wingspan before or after I hurt my knee?",
                "temporal",
                "after",
                (("knee", "knee"), ("game1", "Wingspan")),
            ),
            Ask(
                "Which company was I at when I first talked to you?",
                "user_fact",
                "Fernway Logistics",
                (("job1", "Fernway"),),
            ),
            Ask(
                "How would I like to spend a few days in a new city?",
                "preference",
                "walking around, not museums",
                (("lisbon", "walk"),),
            ),
            Ask("What's the name of my brother's sailing boat?", "unanswerable", "", (("", "sailing"),)),
            Ask("Which dentist did I book in January?", "unanswerable", "", (("", "dentist"),)),
            Ask("What grade did I get in my piano exam?", "unanswerable", "", (("", "piano"),)),
            Ask("How much did I pay for Wingspan?", "missing_detail", "", (("", "Wingspan"),)),
            Ask("What colour is the road bike I sold?", "missing_detail", "", (("", "road bike"),)),
        ),
    )


def _garden() -> User:
    b = Beat
    return User(
        "garden",
        dt.date(2023, 9, 4),
        lambda d: f"Session date: {d:%Y-%m-%d}",
        ("recipe", "recipe", "email", "plan", "explain", "trip", "compare", "maths"),
        (
            b(
                "ward",
                0.04,
                "I work nights on the cardiac ward, so I need dinners I can batch-cook on a Sunday and "
                "reheat at 3am. Ideas?",
                "recipe",
                {"dish": "lentil shepherd's pie"},
            ),
            b(
                "flat",
                0.07,
                "We've just moved into a flat on Harbour Street and the boiler is already making "
                "noises. Can you help me email the letting agent?",
                "email",
                {"to": "the letting agent", "about": "asking them to send someone to look at the boiler"},
            ),
            b(
                "weight1",
                0.1,
                "I'm trying to get down to 72 kg by the summer, around night shifts, so it has to be realistic. {ask}",
                "plan",
            ),
            b(
                "sister",
                0.14,
                "My sister Bea lives in Galway and keeps telling me to visit. What's the best way to "
                "explain to her how a heat pump works? She's thinking of getting one.",
                "explain",
                {"concept": "how a heat pump works"},
            ),
            b(
                "book1",
                0.19,
                "Our book club is reading The Salt Path this month. It's my turn to host. {ask}",
                "recipe",
            ),
            b(
                "teo",
                0.24,
                "My son Teo is turning seven next month and wants a dinosaur party. He won't eat "
                "chocolate, so what cake could I make for twelve kids?",
                "recipe",
                {
                    "dish": "lemon drizzle traybake",
                    "intro": "A lemon drizzle traybake is the one I'd suggest: no "
                    "chocolate, easy to cut into twelve, and you can pipe a green dinosaur on top.",
                },
            ),
            b(
                "quiet",
                0.3,
                "We had the best week last year in a cottage with no wifi and no one around for miles. Anyway: {ask}",
                "compare",
            ),
            b(
                "test",
                0.36,
                "I passed my driving test yesterday, third attempt! Can you compare three small used "
                "cars for a new driver?",
                "compare",
                {"category": "small used car", "items": "Fiesta|Yaris|Polo", "pick": "Yaris"},
            ),
            b(
                "fence",
                0.42,
                "The back fence faces north and gets no sun at all. What climbing plant would actually grow there?",
                "compare",
                {
                    "category": "climber for a shady fence",
                    "items": "clematis montana|climbing hydrangea|star jasmine",
                    "pick": "climbing hydrangea",
                    "because": "It is one of the few climbers that flowers in full shade, and it clings on its own.",
                },
            ),
            b("book2", 0.49, "Book club picked Piranesi next, so my evenings are spoken for. {ask}", "plan"),
            b(
                "crowds",
                0.55,
                "The Christmas market was unbearable, I hate being packed in with thousands of people. Anyway. {ask}",
                "plan",
            ),
            b(
                "visit",
                0.61,
                "I'm going to see Bea for a long weekend in May. Can you help me write to her to sort out dates?",
                "email",
                {"to": "Bea", "about": "sorting out dates for my visit in May"},
            ),
            b(
                "house",
                0.68,
                "Now that we're in the new house on Elm Row, the garden is finally ours. Can you "
                "explain what inflation does to savings? We emptied ours for the deposit.",
                "explain",
                {"concept": "what inflation does to savings"},
            ),
            b("weight2", 0.74, "I've hit 72, so I'm moving my goal to 68 kg. Separate thing: {ask}", "plan"),
            b(
                "book3",
                0.82,
                "This month book club is doing Small Things Like These. Short book, so can you suggest "
                "a longer one for me afterwards?",
                "compare",
                {"category": "long novel", "items": "Middlemarch|The Overstory|Wolf Hall", "pick": "Wolf Hall"},
            ),
        ),
        (
            Ask("What's my son's name?", "user_fact", "Teo", (("teo", "Teo"),)),
            Ask("Which hospital department do I work in?", "user_fact", "the cardiac ward", (("ward", "cardiac"),)),
            Ask(
                "What cake did you suggest for my son's birthday party?",
                "assistant_fact",
                "lemon drizzle traybake",
                (("teo@", "lemon drizzle"),),
            ),
            Ask(
                "What did you tell me to plant along the shady fence?",
                "assistant_fact",
                "climbing hydrangea",
                (("fence@", "climbing hydrangea"),),
            ),
            Ask(
                "Which used car did you recommend for me as a new driver?",
                "assistant_fact",
                "Yaris",
                (("test@", "Yaris"),),
            ),
            Ask("What street do I live on now?", "latest", "Elm Row", (("house", "Elm Row"),)),
            Ask("What is my current target on the scales?", "latest", "68 kg", (("weight2", "68"),)),
            Ask("When did I get my licence?", "temporal", "the day before the session", (("test", "yesterday"),)),
            Ask(
                "Which city am I travelling to in May?",
                "multi_session",
                "Galway",
                (("sister", "Galway"), ("visit", "Bea")),
            ),
            Ask(
                "How many titles has my reading group tackled that I've mentioned?",
                "counting",
                "3",
                (("book1", "Salt Path"), ("book2", "Piranesi"), ("book3", "Small Things")),
            ),
            Ask(
                "Which relative has been pressing me to come and stay?",
                "paraphrased",
                "my sister Bea",
                (("sister", "Bea"),),
            ),
            Ask(
                "What kind of holiday would I enjoy?",
                "preference",
                "somewhere quiet and remote, away from crowds",
                (("quiet", "no one around"), ("crowds", "hate being packed in")),
            ),
            Ask(
                "Did I move into the Elm Row house before or after passing my driving test?",
                "temporal",
                "after",
                (("test", "driving test"), ("house", "Elm Row")),
            ),
            Ask(
                "How much lighter is my new goal weight than the first one I gave you?",
                "multi_session",
                "4 kg",
                (("weight1", "72"), ("weight2", "68")),
            ),
            Ask("What breed is my neighbour's parrot?", "unanswerable", "", (("", "parrot"),)),
            Ask("Which marathon am I training for?", "unanswerable", "", (("", "marathon"),)),
            Ask("What did I name my allotment shed?", "unanswerable", "", (("", "allotment"),)),
            Ask("How much is the rent on the Harbour Street flat?", "missing_detail", "", (("", "Harbour Street"),)),
            Ask("What colour is the back fence?", "missing_detail", "", (("", "fence"),)),
        ),
    )


def _spanish() -> User:
    b = Beat
    return User(
        "spanish",
        dt.date(2024, 2, 5),
        lambda d: f"{d:%A %-d %B %Y}\n",
        ("explain", "recipe", "trip", "email", "maths", "plan", "compare", "explain"),
        (
            b(
                "level1",
                0.04,
                "I've just started the A2 Spanish class at the adult college. Can you explain the "
                "difference between ser and estar with a few examples?",
                "explain",
                {"concept": "the difference between ser and estar"},
            ),
            b(
                "teacher",
                0.09,
                "I taught chemistry for thirty-one years before retiring, so I like things explained "
                "properly. How does a sourdough starter actually work?",
                "explain",
                {"concept": "how sourdough starter works"},
            ),
            b(
                "lila",
                0.13,
                "My granddaughter Lila lives in Valencia with her parents, and I'm going out in April. "
                "Can you plan four days for me?",
                "trip",
                {"city": "Valencia", "days": "4"},
            ),
            b(
                "paella",
                0.16,
                "One more thing for Valencia: where should I go for a proper paella?",
                "trip",
                {
                    "city": "Valencia",
                    "days": "2",
                    "stay": "near Casa Carmela in the Cabanyal, the place I'd pick for "
                    "a wood-fired paella at lunchtime",
                },
            ),
            b(
                "car1",
                0.2,
                "My old Corolla failed its MOT on the brakes. Can you draft a note to the garage asking "
                "for an itemised quote?",
                "email",
                {"to": "the garage", "about": "asking for an itemised quote"},
            ),
            b(
                "gory",
                0.26,
                "I gave up on that thriller the book group chose, far too much blood for me. Can you "
                "explain what an index fund is? My son keeps going on about them.",
                "explain",
                {"concept": "what an index fund is"},
            ),
            b("camera", 0.31, "I've lent my old camera to my neighbour Brenda for her trip. {ask}", "compare"),
            b(
                "jamie",
                0.36,
                "My grandson Jamie starts secondary school in September and loves numbers. {ask}",
                "maths",
                {"kind": "2"},
            ),
            b(
                "novel",
                0.42,
                "I adored the quiet novel about the lighthouse keeper, nothing happens and it's "
                "perfect. Could you suggest a book in easy Spanish for my level?",
                "compare",
                {
                    "category": "graded reader in easy Spanish",
                    "items": "Manolito Gafotas|El Principito|Marianela",
                    "pick": "Manolito Gafotas",
                    "because": "It is funny, short chapters, everyday vocabulary.",
                },
            ),
            b(
                "hip",
                0.5,
                "My hip replacement was last Tuesday, so I'm stuck on the sofa. Can you make me a gentle "
                "plan to get walking again?",
                "plan",
                {
                    "goal": "walking again after a hip operation",
                    "week": "ten minutes indoors x 3|ten minutes x 3|"
                    "rest|fifteen minutes outside|fifteen minutes x 2|rest|twenty minutes on the flat",
                },
            ),
            b(
                "brenda",
                0.57,
                "Brenda next door has moved to Whitby to be near her daughter. Can you help me write her a card?",
                "email",
                {"to": "Brenda", "about": "wishing her well in her new home"},
            ),
            b(
                "car2",
                0.64,
                "The new Skoda Fabia is much easier to park than the Corolla ever was. Can you explain "
                "how a heat pump works? We're thinking of one.",
                "explain",
                {"concept": "how a heat pump works"},
            ),
            b(
                "oona",
                0.7,
                "Wonderful news, my daughter had a baby girl, Oona, our third grandchild! Can you give "
                "me a recipe I can freeze and take round?",
                "recipe",
                {"dish": "lentil shepherd's pie"},
            ),
            b("level2", 0.78, "I've moved up to the B1 class now. Otherwise: {ask}", "plan"),
        ),
        (
            Ask("Where does my granddaughter live?", "user_fact", "Valencia", (("lila", "Valencia"),)),
            Ask(
                "Which book did you suggest I read in Spanish?",
                "assistant_fact",
                "Manolito Gafotas",
                (("novel@", "Manolito Gafotas"),),
            ),
            Ask(
                "Where did you tell me to go for paella in Valencia?",
                "assistant_fact",
                "Casa Carmela",
                (("paella@", "Casa Carmela"),),
            ),
            Ask(
                "Which science subject did I spend my career in the classroom on?",
                "paraphrased",
                "chemistry",
                (("teacher", "chemistry"),),
            ),
            Ask("Which Spanish level am I studying now?", "latest", "B1", (("level2", "B1"),)),
            Ask("What car do I drive now?", "latest", "Skoda Fabia", (("car2", "Skoda Fabia"),)),
            Ask("When was my hip operation?", "temporal", "the Tuesday before the session", (("hip", "Tuesday"),)),
            Ask(
                "Was Oona born before or after my hip replacement?",
                "temporal",
                "after",
                (("hip", "hip"), ("oona", "Oona")),
            ),
            Ask(
                "How many grandchildren have I mentioned to you?",
                "counting",
                "3",
                (("lila", "Lila"), ("jamie", "Jamie"), ("oona", "Oona")),
            ),
            Ask(
                "Where does the person who borrowed my camera live now?",
                "multi_session",
                "Whitby",
                (("camera", "Brenda"), ("brenda", "Whitby")),
            ),
            Ask(
                "What kind of novel would I enjoy?",
                "preference",
                "quiet and gentle, nothing violent",
                (("gory", "blood"), ("novel", "quiet")),
            ),
            Ask(
                "What was wrong with my old car?", "user_fact", "it failed its MOT on the brakes", (("car1", "brakes"),)
            ),
            Ask("What's my daughter's new baby called?", "user_fact", "Oona", (("oona", "Oona"),)),
            Ask("Which choir do I sing in?", "unanswerable", "", (("", "choir"),)),
            Ask("What did the vet say about my tortoise?", "unanswerable", "", (("", "tortoise"),)),
            Ask("Which golf club did I join?", "unanswerable", "", (("", "golf"),)),
            Ask("How much did the Skoda Fabia cost?", "missing_detail", "", (("", "Fabia"),)),
            Ask("How much did the garage charge for the Corolla's brakes?", "missing_detail", "", (("", "Corolla"),)),
        ),
    )


def _studio() -> User:
    b = Beat
    return User(
        "studio",
        dt.date(2024, 3, 11),
        lambda d: f"— {d:%-d %b %Y} —",
        ("email", "compare", "maths", "debug", "plan", "recipe", "explain", "trip"),
        (
            b("ghent", 0.03, "I'm a freelance designer living in Ghent, mostly logos and packaging. {ask}", "email"),
            b("rate1", 0.07, "I charge 45 euros an hour at the moment. Different question: {ask}", "maths"),
            b(
                "sem",
                0.12,
                "My partner Sem and I are going to Copenhagen in May. Can you plan three days?",
                "trip",
                {"city": "Copenhagen", "days": "3"},
            ),
            b(
                "client1",
                0.17,
                "New client signed: a bakery called Crumb & Co wants a full rebrand, so I'm busy. {ask}",
                "plan",
            ),
            b(
                "gradient",
                0.22,
                "Please no gradients, I can't stand them, flat colour and lots of white space is "
                "my thing. Can you compare three portfolio site builders?",
                "compare",
                {"category": "portfolio site builder", "items": "Framecraft|Pagely|Foliohaus", "pick": "Foliohaus"},
            ),
            b(
                "tablet",
                0.28,
                "My drawing tablet's pen has died. Can you compare the Inkpad 13, the Linea Pro and the Strokeline 16?",
                "compare",
                {
                    "category": "drawing tablet",
                    "items": "Inkpad 13|Linea Pro|Strokeline 16",
                    "pick": "Linea Pro",
                    "because": "Its pen needs no battery and the screen's matte finish feels like paper.",
                },
            ),
            b(
                "inlaws",
                0.33,
                "Sem's parents live in Utrecht and we're seeing them at Easter. Any easy dessert I "
                "can bring that travels well?",
                "recipe",
                {"dish": "apple and almond cake"},
            ),
            b("client2", 0.39, "Signed Marlow Coffee this week, they want packaging for three blends. {ask}", "email"),
            b(
                "penicillin",
                0.45,
                "I react badly to penicillin, found that out the hard way at 19, and the GP "
                "keeps bringing up jabs. {ask}",
                "explain",
                {"concept": "how vaccines train the immune system"},
            ),
            b(
                "invoice",
                0.5,
                "Marlow Coffee still hasn't paid invoice 0142 after six weeks. Can you write a firm "
                "but friendly reminder?",
                "email",
                {
                    "to": "Marlow Coffee",
                    "about": "chasing payment of invoice 0142",
                    "subject": "Friendly reminder: invoice 0142, now six weeks overdue",
                },
            ),
            b(
                "noor",
                0.56,
                "Our daughter Noor was born last Tuesday, so I'm working very short days. Can you "
                "help me draft an out-of-office message?",
                "email",
                {"to": "clients", "about": "explaining my reduced hours for the next two months"},
            ),
            b("client3", 0.63, "Third new client this year: a bike shop called Spoke Theory. {ask}", "maths"),
            b(
                "rotterdam",
                0.7,
                "Since we moved to Rotterdam I've been cycling everywhere. Can you explain what an "
                "index fund is? I want to start saving for Noor.",
                "explain",
                {"concept": "what an index fund is"},
            ),
            b(
                "rate2",
                0.77,
                "I've raised my rate to 60 euros an hour from next month. Can you help me write the "
                "email telling existing clients?",
                "email",
                {"to": "existing clients", "about": "announcing my new hourly rate"},
            ),
        ),
        (
            Ask("What's my daughter's name?", "user_fact", "Noor", (("noor", "Noor"),)),
            Ask(
                "Which drawing tablet did you tell me to get?",
                "assistant_fact",
                "Linea Pro",
                (("tablet@", "Linea Pro"),),
            ),
            Ask(
                "What subject line did you suggest for chasing the unpaid invoice?",
                "assistant_fact",
                "Friendly reminder: invoice 0142, now six weeks overdue",
                (("invoice@", "Friendly reminder"),),
            ),
            Ask(
                "Which portfolio site builder did you recommend?",
                "assistant_fact",
                "Foliohaus",
                (("gradient@", "Foliohaus"),),
            ),
            Ask("Which medicine makes me ill?", "paraphrased", "penicillin", (("penicillin", "penicillin"),)),
            Ask("What's my hourly rate now?", "latest", "60 euros", (("rate2", "60"),)),
            Ask("Which city am I based in now?", "latest", "Rotterdam", (("rotterdam", "Rotterdam"),)),
            Ask("When was my daughter born?", "temporal", "the Tuesday before the session", (("noor", "Tuesday"),)),
            Ask(
                "Did I sign Marlow Coffee before or after Crumb & Co?",
                "temporal",
                "after",
                (("client1", "Crumb"), ("client2", "Marlow")),
            ),
            Ask(
                "How many new clients have I told you I signed?",
                "counting",
                "3",
                (("client1", "Crumb"), ("client2", "Marlow"), ("client3", "Spoke Theory")),
            ),
            Ask(
                "Where do my partner's parents live?",
                "multi_session",
                "Utrecht",
                (("sem", "partner Sem"), ("inlaws", "Utrecht")),
            ),
            Ask(
                "By how much did I put my hourly rate up?",
                "multi_session",
                "15 euros (45 to 60)",
                (("rate1", "45"), ("rate2", "60")),
            ),
            Ask(
                "What kind of website template would I like?",
                "preference",
                "flat colour, lots of white space",
                (("gradient", "white space"),),
            ),
            Ask("Who was the first new client I told you about?", "user_fact", "Crumb & Co", (("client1", "Crumb"),)),
            Ask("Which marathon did Sem run?", "unanswerable", "", (("", "marathon"),)),
            Ask("What colour is my motorbike?", "unanswerable", "", (("", "motorbike"),)),
            Ask("What's my yoga teacher called?", "unanswerable", "", (("", "yoga"),)),
        ),
    )


USERS = (_porto, _garden, _spanish, _studio)


def _conversation(user: User, seed: int) -> Conversation:
    rng = random.Random(f"{user.name}-{seed}")
    sessions = rng.randint(56, 70)
    days = [user.start]
    for _ in range(sessions - 1):
        days.append(days[-1] + dt.timedelta(days=rng.choice([1, 2, 3, 3, 4, 5, 6, 7, 9, 12])))
    placed: dict[int, list[Beat]] = {}
    last = -1
    for beat in user.beats:  # in order, each in its own session, never before the previous one
        at = max(last + 1, min(sessions - 1, round(beat.at * (sessions - 1) + rng.uniform(-2, 2))))
        placed.setdefault(at, []).append(beat)
        last = at
    conversation = Conversation(f"assistant-{user.name}-{seed}", "assistant")
    where: dict[str, int] = {}
    for number, day in enumerate(days):
        first = len(conversation.messages)
        beats = placed.get(number, [])
        fillers = rng.randint(1, 3) if beats else rng.randint(2, 5)
        order = [None] * fillers + list(beats)
        rng.shuffle(order)
        for beat in order:
            if beat is None:
                task = rng.choice(user.tasks)
                request, answer = WRITERS[task](rng, {})
                request = f"{rng.choice(CONTEXTS[task])} {request}"
                answer += _more(rng, task)
            else:
                asked, answer = WRITERS[beat.task](rng, beat.topic)
                request = beat.request.replace("{ask}", asked)
                answer += _more(rng, beat.task)
                where[beat.label] = len(conversation.messages)
                where[f"{beat.label}@"] = len(conversation.messages) + 1
            conversation.messages.append({"role": "user", "content": request})
            conversation.messages.append({"role": "assistant", "content": answer})
            if rng.random() < 0.25:
                asked, reply = rng.choice(FOLLOW_UPS)
                conversation.messages.append({"role": "user", "content": asked})
                more = rng.choice(MORE[beat.task if beat else task])
                conversation.messages.append(
                    {"role": "assistant", "content": f"{reply.format(gist=_gist(answer))} {more}"}
                )
        opening = conversation.messages[first]
        dated = user.dated(day)
        space = "" if dated.endswith("\n") else " "
        opening["content"] = f"{dated}{space}{opening['content']}"
    conversation.questions = [
        Asked(
            ask.text,
            ask.kind,
            tuple(where[label] for label, _ in ask.on if label),
            answer=_answer(ask, where, conversation, user, days),
            keys=tuple(key for _, key in ask.on),
        )
        for ask in user.asks
    ]
    return conversation


def _gist(answer: str) -> str:
    """The first sentence of an answer that is prose (not a heading, list or code)."""
    for line in answer.splitlines():
        line = line.strip()
        if line and line[0].isalpha() and "." in line:
            first = line.split(". ")[0].rstrip(".")
            return first[0].lower() + first[1:] + "."
    return "start small and adjust."


def _answer(ask: Ask, where: dict[str, int], conversation: Conversation, user: User, days: list[dt.date]) -> str:
    """A time question's answer is the date its session opens with (its "yesterday" or "last Tuesday" reckoned
    from it); the others keep the answer written."""
    if ask.kind != "temporal" or ask.answer in ("before", "after"):
        return ask.answer
    at = where[ask.on[0][0]]
    day = session_day(conversation, user, at, days)
    text = conversation.messages[at]["content"].lower()
    if "yesterday" in text:
        return str(day - dt.timedelta(days=1))
    if "last tuesday" in text:
        return str(day - dt.timedelta(days=(day.weekday() - 1) % 7 or 7))
    if "last week" in text:
        return f"the week before {day}"
    return str(day)


def session_day(conversation: Conversation, user: User, at: int, days: list[dt.date]) -> dt.date:
    """The date the session holding message ``at`` opens with."""
    for i in range(at, -1, -1):
        text = conversation.messages[i]["content"]
        for day in days:
            if text.startswith(user.dated(day)):
                return day
    raise ValueError(at)


def assistant_conversations(count: int = 4, seed: int = 0) -> list[Conversation]:
    """``count`` users (up to four), each with an assistant over 56-70 sessions, written from ``seed``."""
    return [_conversation(user(), seed) for user in USERS[:count]]


if __name__ == "__main__":  # a look at the data: sizes and kinds
    from collections import Counter

    from components.context_window.token_estimator import estimator_for

    tokens = estimator_for("gpt-4o")
    for c in assistant_conversations():
        counts = [tokens.count(m["content"]) for m in c.messages]
        answers = sorted(n for n, m in zip(counts, c.messages, strict=True) if m["role"] == "assistant")
        asks = sorted(n for n, m in zip(counts, c.messages, strict=True) if m["role"] == "user")
        print(
            f"{c.name}: {len(c.messages)} messages, {sum(counts):,} tokens; answers median {answers[len(answers) // 2]}"
            f" (min {answers[0]}, max {answers[-1]}), requests median {asks[len(asks) // 2]} (max {asks[-1]});",
            dict(Counter(q.kind for q in c.questions)),
        )

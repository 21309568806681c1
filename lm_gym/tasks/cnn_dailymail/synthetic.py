"""Synthetic CNN/DailyMail-style news articles with highlights, generated offline.

``generate_articles(split)`` returns ``(article, highlights, id)`` triples shaped like the
hub release (``abisee/cnn_dailymail``) for when it cannot be downloaded: ``highlights`` is
2 to 4 sentences joined by ``"\\n"`` and ``id`` 40 hexadecimal characters (the SHA-1 of
the split and index). The output is deterministic per split (each split has its own fixed
seed).

Each article is a news story of 8 to 16 sentences (120 to 260 words) of plain printable
ASCII in one of six genres: crime, sports, business, weather, science and politics. A
story has four key sentences, which carry its facts (who, what, where, numbers):

* the lead, always the first sentence (after an optional "(CNN) -- " dateline);
* a detail, the second to fifth sentence;
* an extra fact, the third to seventh sentence;
* a late fact (a court date, the next match, a future plan) in the second half.

The other sentences are filler: background, quotes, colour. The highlights restate the
lead and the key sentences that the genre's desk highlights (``Genre.highlighted``: crime
and weather stories all four, sports and science the detail and the late fact, business
the detail and the extra fact, politics the extra and the late fact), in article order,
each lightly compressed: the key sentence without its droppable parts (an attribution such
as "police said", a date, a subordinate clause), 8 to 18 words. So every highlight word is
in the article, the first sentences hold most of the highlights (a lead-3 summary gets a
decent ROUGE score) and a summarizer that recognises the genre, finds its late fact and
compresses the sentences does better. Which sentences are highlighted follows from the
article alone, so each article has one best summary: RL on ROUGE gets a consistent target,
not a coin flip per sentence.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from lm_gym.tasks.synthetic_splits import split_request

SPLIT_SIZES = {"train": 3000, "validation": 200, "test": 300}

MIN_WORDS, MAX_WORDS = 120, 260
MIN_SENTENCES, MAX_SENTENCES = 8, 16
MIN_HIGHLIGHT_WORDS, MAX_HIGHLIGHT_WORDS = 8, 18
DATELINE_RATE = 0.3
DETAIL_POSITIONS = (1, 2, 3, 4)  # the second to fifth sentence
EXTRA_POSITIONS = (2, 3, 4, 5, 6)  # the late fact comes after these

# Droppable parts of a key sentence are in [brackets]: kept in the article, dropped from
# the highlight.
_DROPPABLE = re.compile(r"\[([^\[\]]*)\]")

# --- shared vocabulary ---------------------------------------------------------------

FIRST_NAMES = {
    "man": (
        "James",
        "Daniel",
        "Michael",
        "Thomas",
        "Robert",
        "Kevin",
        "Marcus",
        "Paul",
        "Simon",
        "Luke",
        "Adam",
        "Peter",
    ),
    "woman": (
        "Sarah",
        "Emma",
        "Laura",
        "Rachel",
        "Helen",
        "Claire",
        "Jessica",
        "Karen",
        "Amy",
        "Lisa",
        "Natalie",
        "Megan",
    ),
}
LAST_NAMES = (
    "Walker",
    "Bennett",
    "Harris",
    "Collins",
    "Morgan",
    "Turner",
    "Price",
    "Hughes",
    "Foster",
    "Murphy",
    "Reed",
    "Ellis",
    "Grant",
    "Fletcher",
    "Holland",
    "Barker",
    "Nolan",
    "Sutton",
    "Warren",
    "Palmer",
    "Dawson",
    "Hayes",
    "Lambert",
    "Chapman",
)
CITIES = (
    "Leeds",
    "Manchester",
    "Bristol",
    "Denver",
    "Atlanta",
    "Houston",
    "Glasgow",
    "Phoenix",
    "Portland",
    "Cardiff",
    "Boston",
    "Seattle",
    "Dallas",
    "Liverpool",
    "Miami",
    "Chicago",
    "Nashville",
    "Sheffield",
    "Tampa",
    "Oakland",
    "Newcastle",
    "Detroit",
    "Edinburgh",
    "Austin",
)
# weather regions and their cities
REGIONS = {
    "the Midwest": ("Chicago", "Detroit"),
    "southern England": ("Bristol",),
    "central Scotland": ("Glasgow", "Edinburgh"),
    "the Gulf Coast": ("Houston", "Tampa"),
    "New England": ("Boston",),
    "the Pacific Northwest": ("Seattle", "Portland"),
    "south Wales": ("Cardiff",),
    "central Texas": ("Austin", "Dallas"),
    "the north of England": ("Leeds", "Manchester", "Newcastle", "Sheffield", "Liverpool"),
    "eastern Florida": ("Miami",),
    "the Southeast": ("Atlanta", "Nashville"),
    "northern California": ("Oakland",),
    "the Southwest": ("Phoenix",),
    "the Rockies": ("Denver",),
}
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
ORDINALS = ("second", "third", "fourth", "fifth")

GENERIC_FILLERS = (
    "Further details are expected to be released later this week.",
    "Local media reported the news earlier in the day.",
    "It is not the first time the area has made headlines this year.",
    "Many people were quick to share their reactions online.",
    "The story has drawn wide attention across the country.",
    "More information will be published as it becomes available.",
)

# --- crime ---------------------------------------------------------------------------

# (crime, target, what was taken)
CRIMES = (
    ("robbery", "jewelry store", "watches and rings"),
    ("burglary", "electronics shop", "laptops and phones"),
    ("break-in", "pharmacy", "medicine and cash"),
    ("theft", "art gallery", "two paintings"),
    ("robbery", "gas station", "cash and cigarettes"),
    ("raid", "warehouse", "designer clothes"),
    ("robbery", "post office", "cash and parcels"),
    ("burglary", "bike shop", "electric bikes"),
)
CHARGES = (
    "robbery",
    "burglary and criminal damage",
    "theft and assault",
    "robbery and assault",
    "handling stolen goods",
)
OFFICER_RANKS = ("Detective", "Sergeant", "Inspector", "Chief Inspector")
CRIME_LEADS = (
    "A {age}-year-old {sex} has been arrested after {a_crime} at {a_target} in {city}[ on {day} night][, police said].",
    (
        "Police in {city} have arrested a {age}-year-old {sex} over {a_crime} at {a_target}"
        "[ on the edge of the city center]."
    ),
    "[Officers said on {day} that ]a {age}-year-old {sex} was arrested following {a_crime} at {a_target} in {city}.",
)
CRIME_DETAILS = (
    "The thieves took {loot} worth about {amount}[ before escaping in a waiting car][, according to investigators].",
    (
        "[Investigators believe ]{loot} worth {amount} were taken during the {crime}"
        "[, which lasted less than {minutes} minutes]."
    ),
    (
        "[Police said ]{staff} staff members were inside the {target} during the {crime} and one was treated for minor "
        "injuries."
    ),
)
CRIME_EXTRAS = (
    "{suspect}, {age}, has been charged with {charges}[ and is being held in custody][, a police spokesperson said].",
    "[{officer} said that ]{loot} worth {amount} have not been recovered and a second suspect is still being sought.",
    "{suspect}, who lives in {city}, was arrested at a house nearby[ about {hours} hours after the {crime}].",
)
CRIME_LATES = (
    (
        "{suspect} is due to appear in court on {next_day}[, where prosecutors will ask for {pronoun} to be held "
        "without bail]."
    ),
    "[Prosecutors said ]{last} could face up to {years} years in prison if convicted of {charges}.",
    "[The owner said ]the {target} will stay closed until {next_day} while its security system is replaced.",
)
CRIME_FILLERS = (
    (
        '"We were absolutely terrified, and I still cannot believe it happened here," said one worker, who asked not '
        "to be named."
    ),
    "The {target}, which opened in {year}, is a popular stop for shoppers in the area.",
    "Neighbors said the street is usually quiet, with families and small businesses.",
    "Police have asked anyone with information to contact them.",
    "It was the {ordinal} incident of its kind in {city} this year.",
    "Security camera footage of the {crime} has been shared widely on social media.",
    "Local business owners met on {day} to discuss ways to improve security.",
    "{officer} thanked members of the public for their quick response.",
    "Crime in the area has fallen over the past decade, according to city figures.",
    '"This was a frightening experience for everyone involved," {officer} said.',
    "Officers remained at the scene for several hours after the arrest.",
    "Customers who were nearby described hearing shouting and breaking glass.",
    "A forensic team spent the night examining the building.",
)


def _crime_fields(rng: random.Random) -> dict[str, str]:
    sex = rng.choice(("man", "woman"))
    crime, target, loot = rng.choice(CRIMES)
    last = rng.choice(LAST_NAMES)
    officer_sex = rng.choice(("man", "woman"))
    return {
        "sex": sex,
        "pronoun": "him" if sex == "man" else "her",
        "age": str(rng.randint(19, 67)),
        "crime": crime,
        "a_crime": _with_article(crime),
        "target": target,
        "a_target": _with_article(target),
        "loot": loot,
        "amount": f"${rng.randint(8, 95) * 1000:,}",
        "minutes": str(rng.randint(3, 15)),
        "staff": rng.choice(("Two", "Three", "Four", "Five", "Six")),
        "suspect": f"{rng.choice(FIRST_NAMES[sex])} {last}",
        "last": last,
        "charges": rng.choice(CHARGES),
        "officer": f"{rng.choice(OFFICER_RANKS)} {rng.choice(FIRST_NAMES[officer_sex])} {rng.choice(LAST_NAMES)}",
        "hours": str(rng.randint(2, 20)),
        "years": str(rng.randint(5, 20)),
    }


# --- sports --------------------------------------------------------------------------

TEAM_NICKNAMES = ("United", "Rovers", "City", "Athletic", "Rangers", "Wanderers", "Albion", "Town")
STANDINGS = (
    "move top of the table",
    "climb into second place",
    "move into the top four",
    "stay in the title race",
    "move clear of the relegation zone",
)
MATCH_QUOTES = (
    "We showed real character tonight and the fans pushed us all the way",
    "It was not our best performance, but the three points are all that matter",
    "The players worked incredibly hard and deserved the win",
    "We made it difficult for ourselves, but we kept going until the end",
    "I am proud of the group, and we have to keep this form going",
)
SPORTS_LEADS = (
    "{winner} beat {loser} {score}[ at home on {day}] to {standing}.",
    "{scorer} scored {goals_phrase} as {winner} beat {loser} {score}[ on {day} night].",
    "[On a cold night in {city}, ]{winner} came from behind to beat {loser} {score} and {standing}.",
)
SPORTS_DETAILS = (
    (
        "{scorer} scored {goals_phrase}[, including a header in the {minute} minute,] to take {his} tally to {tally} "
        "goals this season."
    ),
    "The win leaves {winner} {points} points clear of {loser}[ with {games} games left to play].",
    "{scorer} opened the scoring in the {minute} minute[ with a low shot from the edge of the area].",
)
SPORTS_EXTRAS = (
    "{loser} had {player2} sent off[ early in the second half] for a second yellow card.",
    "{loser} have now lost {losses} of their last {recent} matches[ and remain {bottom} in the table].",
    "{winner} goalkeeper {keeper} saved a penalty from {player2}[ just before half-time].",
)
SPORTS_LATES = (
    "{winner} face {next_team} in the cup final on {next_day}[ at the national stadium].",
    "{loser} will sack manager {manager2} if they lose again on {next_day}[, according to reports].",
    "{scorer} has been called up to the national team for the first time[, his manager confirmed].",
)
SPORTS_FILLERS = (
    '"{quote}," said {winner} manager {manager}.',
    "A crowd of {crowd} watched the match in heavy rain.",
    "{loser} manager {manager2} refused to blame the referee.",
    "The two sides last met in {month}, when the game ended in a draw.",
    "{winner} were founded in {year} and have a long history in the city.",
    "Both teams observed a minute of silence before kickoff.",
    "Ticket prices were raised by five percent before the start of the season.",
    "The pitch was in poor condition after a week of wet weather.",
    "Fans celebrated in the streets around the stadium long after the final whistle.",
    "The first half was a cautious affair, with few chances at either end.",
    "{loser} had the better of the early exchanges but could not find a way through.",
    "Several players on both sides needed treatment after a series of heavy tackles.",
)


def _sports_fields(rng: random.Random) -> dict[str, str]:
    home_city, away_city, next_city = rng.sample(CITIES, 3)
    winner = f"{home_city} {rng.choice(TEAM_NICKNAMES)}"
    loser = f"{away_city} {rng.choice(TEAM_NICKNAMES)}"
    winner_goals = rng.randint(2, 5)
    goals = rng.randint(2, min(3, winner_goals))
    return {
        "winner": winner,
        "loser": loser,
        "city": home_city,
        "score": f"{winner_goals}-{rng.randint(0, winner_goals - 1)}",
        "standing": rng.choice(STANDINGS),
        "scorer": _person(rng, "man"),
        "his": "his",
        "goals_phrase": "twice" if goals == 2 else "a hat-trick",
        "minute": _ordinal(rng.randint(4, 89)),
        "tally": str(rng.randint(8, 25)),
        "points": str(rng.randint(2, 9)),
        "games": str(rng.randint(3, 12)),
        "player2": _person(rng, "man"),
        "keeper": _person(rng, "man"),
        "losses": str(rng.randint(4, 6)),
        "recent": str(rng.randint(7, 9)),
        "bottom": rng.choice(("bottom", "second from bottom", "third from bottom")),
        "next_team": f"{next_city} {rng.choice(TEAM_NICKNAMES)}",
        "manager": _person(rng, "man"),
        "manager2": _person(rng, "man"),
        "quote": rng.choice(MATCH_QUOTES),
        "crowd": f"{rng.randint(8, 60) * 1000:,}",
    }


# --- business ------------------------------------------------------------------------

COMPANY_PREFIXES = (
    "Northgate",
    "Bluewater",
    "Redline",
    "Summit",
    "Crescent",
    "Harbor",
    "Silverline",
    "Oakridge",
    "Brightwell",
    "Kestrel",
)
# (company noun, what it sells)
SECTORS = (
    ("Foods", "frozen meals"),
    ("Motors", "electric cars"),
    ("Airlines", "cheap flights"),
    ("Telecom", "mobile phone plans"),
    ("Retail", "home furniture"),
    ("Pharma", "allergy medicines"),
    ("Energy", "solar panels"),
    ("Apparel", "running shoes"),
)
QUARTERS = ("first quarter", "second quarter", "third quarter", "last three months of the year")
BUSINESS_LEADS = (
    (
        "{company}[, the company best known for its {product},] said"
        "[ on {day}] that its profits {rose} {pct} percent to ${profit} million in the {quarter}."
    ),
    (
        "{company} will cut {jobs} jobs[ over the next two years] after its profits {rose} {pct} percent in the "
        "{quarter}[, the company announced]."
    ),
    "Profits at {company} {rose} {pct} percent to ${profit} million in the {quarter}[, the company said on {day}].",
)
BUSINESS_DETAILS = (
    "Sales reached ${sales} billion, helped by {demand} demand for its {product}[ in Europe and Asia].",
    "[The company said ]{jobs} jobs will go at its head office in {hq}[, mostly in management].",
    "Shares in {company} {moved} {share_pct} percent[ in early trading] after the results were published.",
)
BUSINESS_EXTRAS = (
    "{company} plans to open a new factory in {city2}, creating {new_jobs} jobs[ by the end of next year].",
    "Chief executive {ceo} said the company would raise prices by {price_pct} percent[ from {month}].",
    "[Analysts said ]{company} now controls about {share} percent of the market for {product}.",
)
BUSINESS_LATES = (
    "{company} will announce its full-year results in {month}[, when analysts expect further growth].",
    "The company will also pay shareholders a special dividend of {cents} cents a share[ in {month}].",
    "{ceo} will step down as chief executive in {month}[ after {tenure} years in the job].",
)
BUSINESS_FILLERS = (
    "{company} was founded in {hq} in {year} and employs thousands of people.",
    "The wider industry has struggled with rising costs over the past year.",
    '"These results show that our plan is working," {ceo} said in a statement.',
    "Some investors had expected a weaker set of figures.",
    "The company has faced criticism from unions over working conditions.",
    "Rival firms are due to report their own results in the coming weeks.",
    "Consumer spending has been uneven across the region this year.",
    "Analysts described the results as solid but said challenges remain.",
    "The company moved its head office to {hq} a decade ago.",
    "Its {product} have become popular with younger customers.",
    "Costs for raw materials and shipping rose sharply last year.",
    '"We are confident about the rest of the year," a company spokesperson said.',
)


def _business_fields(rng: random.Random) -> dict[str, str]:
    noun, product = rng.choice(SECTORS)
    hq, city2 = rng.sample(CITIES, 2)
    profits_up = rng.random() < 0.6
    return {
        "company": f"{rng.choice(COMPANY_PREFIXES)} {noun}",
        "product": product,
        "rose": "rose" if profits_up else "fell",
        "pct": str(rng.randint(3, 40)),
        "profit": str(rng.randint(20, 900)),
        "quarter": rng.choice(QUARTERS),
        "jobs": f"{rng.randint(2, 40) * 50:,}",
        "sales": f"{rng.randint(11, 99) / 10:.1f}",
        "demand": "strong" if profits_up else "weak",
        "hq": hq,
        "city2": city2,
        "moved": "rose" if profits_up else "fell",
        "share_pct": str(rng.randint(2, 15)),
        "new_jobs": str(rng.randint(2, 30) * 50),
        "ceo": _person(rng, rng.choice(("man", "woman"))),
        "price_pct": str(rng.randint(2, 12)),
        "share": str(rng.randint(10, 45)),
        "cents": str(rng.randint(5, 60)),
        "tenure": str(rng.randint(4, 15)),
    }


# --- weather -------------------------------------------------------------------------

STORM_NAMES = ("Ada", "Bruno", "Clara", "Dennis", "Elsa", "Frank", "Gerda", "Hugo", "Ines", "Jonas")
WEATHER_LEADS = (
    (
        "Storm {storm} brought winds of up to {mph} miles per hour to {region}"
        "[ on {day}], leaving {homes} homes without power."
    ),
    "More than {evacuated} people were forced from their homes after heavy rain flooded parts of {region}[ overnight].",
    "Storm {storm} caused flooding across {region}[ on {day}], forcing {evacuated} people from their homes.",
)
WEATHER_DETAILS = (
    "[Forecasters said ]{rain} inches of rain fell in {hours} hours[, more than the area normally sees in a month].",
    "{deaths} people were killed[ and dozens more injured] as trees fell on roads and cars.",
    "[Power companies said ]{homes} customers were still without electricity[ on {day} evening].",
)
WEATHER_EXTRAS = (
    "Schools in {city} were closed and {flights} flights were cancelled at the city airport.",
    "Officials declared a state of emergency in {counties} counties[ late on {day}].",
    "[Officials said ]{rescued} people were rescued from cars trapped in flood water.",
)
WEATHER_LATES = (
    "More rain is expected until {next_day}[, raising the risk of further flooding][, forecasters warned].",
    "Repairs to damaged roads and bridges are expected to cost at least ${repair} million[, officials said].",
    "The region will receive ${aid} million in emergency aid[, the government announced on {day}].",
)
WEATHER_FILLERS = (
    '"I have lived here for thirty years and I have never seen anything like this," said one resident.',
    "The last storm of this size hit the region in {year}.",
    "Officials urged people to avoid all but essential travel.",
    "Volunteers handed out blankets and hot drinks at a local church.",
    "Some residents spent the night in their cars on higher ground.",
    "Emergency crews worked through the night to clear fallen trees.",
    "Pictures shared online showed cars floating down flooded streets.",
    "Scientists say extreme weather has become more common in recent decades.",
    "Many shops in the town center stayed closed for the day.",
    "Farmers said it was too early to know how many crops had been lost.",
    "The river was more than {feet} feet above its normal level by the afternoon.",
    "Rail services across the area were delayed or cancelled.",
)


def _weather_fields(rng: random.Random) -> dict[str, str]:
    region = rng.choice(list(REGIONS))
    return {
        "region": region,
        "city": rng.choice(REGIONS[region]),
        "storm": rng.choice(STORM_NAMES),
        "mph": str(rng.randint(55, 110)),
        "homes": f"{rng.randint(5, 250) * 1000:,}",
        "evacuated": f"{rng.randint(2, 40) * 100:,}",
        "rain": str(rng.randint(3, 14)),
        "hours": str(rng.randint(6, 48)),
        "deaths": rng.choice(("Two", "Three", "Four", "Five", "Seven")),
        "flights": str(rng.randint(40, 600)),
        "counties": str(rng.randint(3, 30)),
        "rescued": str(rng.randint(12, 200)),
        "repair": str(rng.randint(5, 150)),
        "aid": str(rng.randint(10, 300)),
        "feet": str(rng.randint(4, 15)),
    }


# --- science -------------------------------------------------------------------------

# (habit, outcome) of a study's finding
FINDINGS = (
    ("walk for half an hour a day", "develop heart disease"),
    ("sleep at least seven hours a night", "catch a cold"),
    ("eat fish twice a week", "suffer memory loss in old age"),
    ("spend time in green spaces", "report feeling anxious"),
    ("drink two cups of coffee a day", "develop liver disease"),
    ("learn a second language", "show early signs of dementia"),
    ("take regular breaks from screens", "suffer from headaches"),
    ("cycle to work", "become overweight"),
)
SUBJECTS = ("adults", "children", "volunteers", "patients", "pensioners", "students")
JOURNALS = ("Nature Medicine", "The Lancet", "Science", "the British Medical Journal", "Health Reports", "Cell")
SCIENCE_LEADS = (
    "People who {habit} are {pct} percent less likely to {outcome}[, according to a new study].",
    "Researchers at the University of {city} have found that people who {habit} are less likely to {outcome}.",
    "[A major new study suggests that ]people who {habit} may be {pct} percent less likely to {outcome}.",
)
SCIENCE_DETAILS = (
    "The team followed {sample} {subjects} for {years} years[ and compared their health with a control group].",
    (
        "[The researchers found that ]the risk fell by {pct} percent among {subjects} who kept up the habit for "
        "{years} years."
    ),
    "The study of {sample} {subjects} was published in {journal}[ on {day}].",
)
SCIENCE_EXTRAS = (
    "Lead author Professor {author} said the effect was strongest among people over {age}.",
    "[The researchers said ]the benefits appeared within {months} months of starting the habit.",
    "The effect was {ratio} times larger for {subjects} who had never smoked[, the team reported].",
)
SCIENCE_LATES = (
    "The team plans a larger trial involving {sample2} volunteers next year[, funded by the government].",
    "[Health officials said ]the findings will be considered when national guidelines are updated in {month}.",
    "The researchers will next study whether the habit also helps people with {condition}[, starting in {month}].",
)
SCIENCE_FILLERS = (
    '"This is an exciting result, but more work is needed," said an expert who was not involved in the research.',
    "Previous studies have produced mixed results on the question.",
    "The study does not prove cause and effect, the authors cautioned.",
    "Participants filled in detailed questionnaires about their daily routines.",
    "The research was funded by a medical charity.",
    "Scientists have long suspected a link but lacked strong evidence.",
    "Doctors say small changes to daily habits can make a big difference.",
    "The authors adjusted their results for age, income and diet.",
    "Some experts warned against reading too much into a single study.",
    "The University of {city} has a long record of research in public health.",
    "Data were collected between {year} and last year.",
    "The team also looked at blood samples from some participants.",
)


def _science_fields(rng: random.Random) -> dict[str, str]:
    habit, outcome = rng.choice(FINDINGS)
    return {
        "habit": habit,
        "outcome": outcome,
        "pct": str(rng.randint(12, 45)),
        "sample": f"{rng.randint(12, 300) * 100:,}",
        "sample2": f"{rng.randint(10, 50) * 1000:,}",
        "subjects": rng.choice(SUBJECTS),
        "years": str(rng.randint(3, 20)),
        "journal": rng.choice(JOURNALS),
        "author": _person(rng, rng.choice(("man", "woman"))),
        "age": str(rng.choice((50, 60, 65, 70))),
        "months": str(rng.randint(2, 11)),
        "ratio": rng.choice(("two", "three")),
        "condition": rng.choice(("diabetes", "asthma", "high blood pressure", "arthritis")),
    }


# --- politics ------------------------------------------------------------------------

# (goal of the plan, what it delivers, how, and the range of how many)
POLICIES = (
    ("build affordable homes", "affordable homes", "built", (500, 5000)),
    ("expand the city's tram network", "tram stops", "opened", (10, 40)),
    ("repair local roads", "roads", "resurfaced", (50, 400)),
    ("improve school buildings", "new classrooms", "built", (40, 300)),
    ("plant trees across the city", "trees", "planted", (2000, 20000)),
    ("open new health clinics", "health clinics", "opened", (5, 25)),
    ("create new cycle lanes", "miles of cycle lanes", "built", (20, 150)),
)
FUNDING = (
    "a new tax on hotel stays",
    "higher parking charges",
    "savings in other departments",
    "a loan from the national government",
)
POLITICS_LEADS = (
    "Lawmakers in {city} voted {yes}-{no} to approve a ${cost} million plan to {policy}[ on {day}].",
    "Mayor {mayor} of {city} announced a ${cost} million plan to {policy}[ during a speech at city hall].",
    "[City officials said on {day} that ]{city} will spend ${cost} million to {policy} over the next five years.",
)
POLITICS_DETAILS = (
    "Under the plan, {units} {things} will be {built} by {year_done}[, officials said].",
    "The plan will be paid for by {funding}[, which will raise about ${raised} million a year].",
    "[The council said ]{units} {things} will be {built} in the first phase of the plan.",
)
POLITICS_EXTRAS = (
    "Opposition leader {opponent} called the plan a waste of money[ and promised to fight it].",
    "A recent poll found that {support} percent of residents support the plan.",
    "[Officials said ]the project will create about {jobs} jobs in construction.",
)
POLITICS_LATES = (
    "Work on the project is expected to start in {month}[, officials said].",
    "A final vote on the plan is scheduled for {month}[ after a public consultation].",
    "{mayor} will seek a second term in the election next {month}[, aides confirmed].",
)
POLITICS_FILLERS = (
    '"This is a great day for our city and for the families who live here," {mayor} said.',
    "The debate in the council chamber lasted more than four hours.",
    "Critics have long argued that the city has neglected its poorer neighborhoods.",
    "Similar plans have been tried in other cities with mixed results.",
    "Several residents spoke at the meeting, both for and against the plan.",
    "{mayor} was first elected in {year} after a close race.",
    "Business groups said they would study the details carefully.",
    "The city's budget has been under pressure for several years.",
    "Protesters gathered outside city hall before the meeting began.",
    "Local newspapers have followed the debate closely for months.",
    '"We will hold the mayor to every promise in this plan," one opposition member said.',
    "The plan was first proposed more than two years ago.",
)


def _politics_fields(rng: random.Random) -> dict[str, str]:
    policy, things, built, (low, high) = rng.choice(POLICIES)
    yes = rng.randint(26, 45)
    return {
        "yes": str(yes),
        "no": str(rng.randint(5, yes - 2)),
        "cost": str(rng.randint(15, 900)),
        "policy": policy,
        "things": things,
        "built": built,
        "units": f"{rng.randint(low, high):,}",
        "year_done": str(rng.randint(2026, 2035)),
        "funding": rng.choice(FUNDING),
        "raised": str(rng.randint(5, 90)),
        "mayor": _person(rng, rng.choice(("man", "woman"))),
        "opponent": _person(rng, rng.choice(("man", "woman"))),
        "support": str(rng.randint(51, 78)),
        "jobs": f"{rng.randint(2, 40) * 100:,}",
    }


@dataclass(frozen=True)
class Genre:
    """Templates of one kind of story, with a function drawing the story's own facts."""

    fields: Callable[[random.Random], dict[str, str]]
    leads: tuple[str, ...]
    details: tuple[str, ...]
    extras: tuple[str, ...]
    lates: tuple[str, ...]
    fillers: tuple[str, ...]
    highlighted: tuple[str, ...]  # key sentence kinds restated in the highlights, the lead first


GENRES = {
    "crime": Genre(
        _crime_fields,
        CRIME_LEADS,
        CRIME_DETAILS,
        CRIME_EXTRAS,
        CRIME_LATES,
        CRIME_FILLERS,
        ("lead", "detail", "extra", "late"),
    ),
    "sports": Genre(
        _sports_fields,
        SPORTS_LEADS,
        SPORTS_DETAILS,
        SPORTS_EXTRAS,
        SPORTS_LATES,
        SPORTS_FILLERS,
        ("lead", "detail", "late"),
    ),
    "business": Genre(
        _business_fields,
        BUSINESS_LEADS,
        BUSINESS_DETAILS,
        BUSINESS_EXTRAS,
        BUSINESS_LATES,
        BUSINESS_FILLERS,
        ("lead", "detail", "extra"),
    ),
    "weather": Genre(
        _weather_fields,
        WEATHER_LEADS,
        WEATHER_DETAILS,
        WEATHER_EXTRAS,
        WEATHER_LATES,
        WEATHER_FILLERS,
        ("lead", "detail", "extra", "late"),
    ),
    "science": Genre(
        _science_fields,
        SCIENCE_LEADS,
        SCIENCE_DETAILS,
        SCIENCE_EXTRAS,
        SCIENCE_LATES,
        SCIENCE_FILLERS,
        ("lead", "detail", "late"),
    ),
    "politics": Genre(
        _politics_fields,
        POLITICS_LEADS,
        POLITICS_DETAILS,
        POLITICS_EXTRAS,
        POLITICS_LATES,
        POLITICS_FILLERS,
        ("lead", "extra", "late"),
    ),
}


def generate_articles(split: str, num_articles: int | None = None) -> list[tuple[str, str, str]]:
    """(article, highlights, id) triples, highlights joined by "\\n"; deterministic per split.

    ``num_articles`` defaults to ``SPLIT_SIZES[split]``; a shorter request is a prefix of
    the full split.
    """
    num_articles, rng = split_request("cnn_dailymail", split, num_articles, SPLIT_SIZES, "num_articles")
    articles = []
    for index in range(num_articles):
        article, highlights = _story(rng, GENRES[rng.choice(list(GENRES))])
        articles.append((article, "\n".join(highlights), _article_id(split, index)))
    return articles


def _article_id(split: str, index: int) -> str:
    return hashlib.sha1(f"lm_gym.cnn_dailymail.synthetic/{split}/{index}".encode("ascii")).hexdigest()


def _story(rng: random.Random, genre: Genre) -> tuple[str, list[str]]:
    """An article and its highlights, redrawn until every length is within bounds."""
    while True:
        article, highlights = _draft(rng, genre)
        if MIN_WORDS <= len(article.split()) <= MAX_WORDS and all(
            MIN_HIGHLIGHT_WORDS <= len(highlight.split()) <= MAX_HIGHLIGHT_WORDS for highlight in highlights
        ):
            return article, highlights


def _draft(rng: random.Random, genre: Genre) -> tuple[str, list[str]]:
    fields = _common_fields(rng) | genre.fields(rng)
    num_sentences = rng.randint(MIN_SENTENCES, MAX_SENTENCES)
    # key sentence kind -> position; the lead opens, the late fact is in the second half
    positions = {"lead": 0, "detail": rng.choice(DETAIL_POSITIONS)}
    positions["extra"] = rng.choice([p for p in EXTRA_POSITIONS if p != positions["detail"]])
    positions["late"] = rng.randint(max(EXTRA_POSITIONS[-1] + 1, num_sentences // 2), num_sentences - 1)
    keys = {
        kind: rng.choice(templates).format(**fields)
        for kind, templates in (
            ("lead", genre.leads),
            ("detail", genre.details),
            ("extra", genre.extras),
            ("late", genre.lates),
        )
    }
    fillers = [template.format(**fields) for template in rng.sample(genre.fillers + GENERIC_FILLERS, num_sentences - 4)]
    by_position = {position: keys[kind] for kind, position in positions.items()}
    sentences = [by_position[i] if i in by_position else fillers.pop() for i in range(num_sentences)]

    highlights = [_compressed(keys[kind]) for kind in sorted(genre.highlighted, key=positions.get)]

    article = " ".join(_expanded(sentence) for sentence in sentences)
    if rng.random() < DATELINE_RATE:
        article = f"(CNN) -- {article}"
    return article, highlights


def _common_fields(rng: random.Random) -> dict[str, str]:
    day, next_day = rng.sample(DAYS, 2)
    return {
        "city": rng.choice(CITIES),
        "day": day,
        "next_day": next_day,
        "month": rng.choice(MONTHS),
        "year": str(rng.randint(1950, 2015)),
        "ordinal": rng.choice(ORDINALS),
    }


def _expanded(sentence: str) -> str:
    """The article form of a sentence: its droppable parts kept."""
    return _DROPPABLE.sub(r"\1", sentence)


def _compressed(sentence: str) -> str:
    """The highlight form of a key sentence: its droppable parts removed."""
    text = " ".join(_DROPPABLE.sub("", sentence).split())
    return text[0].upper() + text[1:]


def _person(rng: random.Random, sex: str) -> str:
    return f"{rng.choice(FIRST_NAMES[sex])} {rng.choice(LAST_NAMES)}"


def _ordinal(number: int) -> str:
    suffix = "th" if 11 <= number % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def _with_article(phrase: str) -> str:
    return f"{'an' if phrase[0] in 'aeiou' else 'a'} {phrase}"

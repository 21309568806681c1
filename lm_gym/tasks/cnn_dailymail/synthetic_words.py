"""The words and sentence templates of the synthetic news stories (:mod:`lm_gym.tasks.cnn_dailymail.synthetic`).

Each genre has its key sentences (leads, details, extras, lates) and its fillers. The ``[bracketed]`` parts of
a key sentence are droppable: kept in the article, dropped from its highlight.
"""

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

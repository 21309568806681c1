"""What the synthetic DailyDialog speakers say (:mod:`lm_gym.tasks.dailydialog.synthetic`).

A line is its text, or (text, emotion) where it has an emotion.
"""

from __future__ import annotations

from dataclasses import dataclass

# DailyDialog's emotion codes (:mod:`lm_gym.tasks.dailydialog.labels`)
ANGER, DISGUST, FEAR, HAPPINESS, SADNESS, SURPRISE = 1, 2, 3, 4, 5, 6

NAMES = ("Tom", "Mary", "Jack", "Lucy", "Peter", "Anna", "David", "Susan", "Mike", "Kate", "Bob", "Linda")
GREETINGS = ("Hi, {name}.", "Hello, {name}.", "Excuse me.", "Good morning.", "Hey, {name}.")
LEAD_INS = ("I see.", "Oh, OK.", "All right.", "Hmm, I see.")


@dataclass(frozen=True)
class Topic:
    """What people say about one topic; ``{slots}`` are filled once per dialogue."""

    slots: dict[str, tuple[str, ...]]
    statements: tuple  # informs that bring news
    questions: tuple  # (question, its answers)
    requests: tuple  # (directive, commissive acceptances, inform refusals)
    offers: tuple  # commissives nobody asked for


TOPICS = {
    "shopping": Topic(
        slots={
            "item": ("jacket", "sweater", "watch", "dress", "backpack", "coat", "scarf"),
            "color": ("blue", "black", "red", "gray", "green"),
            "price": ("20", "35", "49", "60", "85", "120"),
            "size": ("small", "medium", "large"),
            "store": ("the mall", "the shop on Main Street", "the department store"),
        },
        statements=(
            "I'm looking for a {color} {item} for my brother.",
            "This {item} is a little too tight for me.",
            ("I finally bought that {color} {item} I wanted!", HAPPINESS),
            "The store is having a big sale this weekend.",
            ("I waited twenty minutes and nobody came to help me.", ANGER),
        ),
        questions=(
            (
                "How much is this {item}?",
                (
                    "It's {price} dollars.",
                    "It's {price} dollars, but it's on sale today.",
                    "That one is {price} dollars.",
                ),
            ),
            ("Do you have it in {size}?", ("Yes, we have it in {size} and large.", "Sorry, we only have medium left.")),
            ("What size do you usually wear?", ("I usually wear a {size}.", "A {size}, I think.")),
            (
                "Where can I try it on?",
                ("The fitting rooms are at the back of the store.", "There's a fitting room next to the stairs."),
            ),
            ("Can I pay by credit card?", ("Yes, we take all major cards.", "Sorry, we only take cash here.")),
            (
                "Where did you buy that {item}?",
                ("I got it at {store} last week.", ("I bought it at {store}, and it was half price!", HAPPINESS)),
            ),
            (
                "Do you think this {color} one looks good on me?",
                (("It looks great on you!", HAPPINESS), "I think the black one suits you better."),
            ),
            ("Is there a discount for students?", ("Yes, students get ten percent off.", "No, sorry, there isn't.")),
        ),
        requests=(
            (
                "Please wrap it up for me.",
                ("Sure, I'll wrap it right away.", "No problem, I'll put it in a gift box."),
                ("Sorry, we don't offer gift wrapping.",),
            ),
            (
                "Let's go to {store} this afternoon.",
                ("OK, I'll meet you there at three.", "Sure, I'll ask my sister to come too."),
                ("I can't today, I have too much work.",),
            ),
            (
                "Show me something a bit cheaper, please.",
                ("Of course, I'll bring you a few others.", "Certainly, I'll see what we have."),
                ("This is the cheapest one we have.",),
            ),
            (
                "You should keep the receipt in case you return it.",
                ("OK, I'll keep it in my wallet.", ("Good idea, I'll put it somewhere safe.", HAPPINESS)),
                ("I never keep receipts, they just get lost.",),
            ),
        ),
        offers=(
            "I'll lend you some money if you need it.",
            "I'll check if we have it in the back.",
            "I'll hold the {item} for you until tomorrow.",
        ),
    ),
    "travel": Topic(
        slots={
            "city": ("Paris", "Rome", "Tokyo", "London", "Madrid", "Sydney", "Boston"),
            "days": ("three", "five", "seven", "ten"),
            "transport": ("train", "plane", "bus"),
            "time": ("eight", "nine", "ten"),
            "hotel": ("the Grand Hotel", "a small hotel near the station", "the Park Inn"),
        },
        statements=(
            "I'm going to {city} next month for {days} days.",
            ("We just booked our tickets to {city}!", HAPPINESS),
            "The {transport} to {city} leaves at {time} o'clock.",
            ("I'm really nervous about flying.", FEAR),
            ("Our flight was cancelled and we lost a whole day.", SADNESS),
            "I prefer traveling by {transport}, it's more comfortable.",
        ),
        questions=(
            (
                "How long are you staying in {city}?",
                ("About {days} days.", "Just {days} days this time, for a conference."),
            ),
            ("Where are you staying?", ("We booked a room at {hotel}.", "I'm staying with a friend who lives there.")),
            (
                "When does the {transport} leave?",
                ("It leaves at {time} in the morning.", "At {time} o'clock, so we should leave early."),
            ),
            (
                "Have you ever been to {city} before?",
                ("No, this is my first time.", ("Yes, twice, and I loved it!", HAPPINESS)),
            ),
            (
                "How much does a ticket cost?",
                ("A round trip is about two hundred dollars.", "It's cheaper if you book early."),
            ),
            (
                "What are you going to do there?",
                (
                    ("Mostly sightseeing and trying the local food, I can't wait!", HAPPINESS),
                    "I'm visiting my cousin and her family.",
                ),
            ),
            (
                "Is it far from the airport to the city center?",
                ("It's about forty minutes by taxi.", "Not really, there's a fast train."),
            ),
        ),
        requests=(
            (
                "Please show me your passport.",
                ("Sure, I'll get it out of my bag.", "Of course, I'll just be a second."),
                ("I think I left it at the hotel.",),
            ),
            (
                "Don't forget to bring your camera.",
                ("Don't worry, I'll pack it tonight.", "I won't forget, I promise."),
                ("My camera is broken, unfortunately.",),
            ),
            (
                "Let's take a taxi to the hotel.",
                ("OK, I'll call one now.", "Fine, I'll carry the bags."),
                ("The bus is much cheaper and it stops right there.",),
            ),
            (
                "You should book your hotel early.",
                (("Good idea, I'll do it tonight.", HAPPINESS), "You're right, I'll book it this week."),
                ("I already booked it last month.",),
            ),
        ),
        offers=(
            "I'll drive you to the airport if you like.",
            "I'll send you some photos when I get there.",
            "I'll look after your plants while you're away.",
        ),
    ),
    "restaurant": Topic(
        slots={
            "dish": ("steak", "chicken soup", "fish", "pasta", "salad", "pizza"),
            "drink": ("orange juice", "coffee", "a glass of wine", "tea", "water"),
            "people": ("two", "three", "four"),
            "time": ("seven", "eight", "half past six"),
        },
        statements=(
            "We have a reservation for {people} at {time}.",
            ("The {dish} here is delicious!", HAPPINESS),
            ("This soup is cold and tastes terrible.", DISGUST),
            "I'm not very hungry tonight.",
            "This place is always busy on weekends.",
        ),
        questions=(
            ("Are you ready to order?", ("Yes, the {dish} for me.", "We need a few more minutes.")),
            ("What would you like to drink?", ("Just {drink} for me.", "I'd like {drink}, thanks.")),
            (
                "What do you recommend?",
                ("The {dish} is very popular here.", ("Our {dish} is the best in town!", HAPPINESS)),
            ),
            ("How is your {dish}?", (("It's wonderful, thank you!", HAPPINESS), "It's a little too salty for me.")),
            (
                "Do you have a table for {people}?",
                ("Yes, there's one by the window.", "Sorry, we're full until {time}."),
            ),
            ("Can I see the menu?", ("Here it is, the specials are on the back.", "Here you are, sir.")),
            ("How much is the bill?", ("It comes to forty-five dollars.", "It's sixty dollars including the tip.")),
        ),
        requests=(
            (
                "Please bring us the bill.",
                ("Certainly, I'll bring it right away.", "Of course, I'll be right back."),
                ("Your friend has already paid.",),
            ),
            (
                "Let's try the new Italian place tonight.",
                ("Sure, I'll book a table for {time}.", ("Good idea, I'll call them now.", HAPPINESS)),
                ("I'd rather eat at home tonight.",),
            ),
            (
                "Bring me another glass of water, please.",
                ("Sure, I'll get it for you.", "No problem, I'll be right back."),
                (),
            ),
            (
                "You should try the {dish}, it's excellent.",
                ("OK, I'll have that then.", "All right, I'll give it a try."),
                ("I don't eat meat, actually.",),
            ),
        ),
        offers=(
            "I'll pay for dinner tonight.",
            "I'll ask the waiter for another menu.",
            "I'll order some dessert for all of us.",
        ),
    ),
    "work": Topic(
        slots={
            "report": ("the sales report", "the budget", "the presentation", "the contract"),
            "boss": ("Linda", "Mark", "Mr Brown", "Ms Carter"),
            "day": ("Monday", "Thursday", "Friday"),
            "time": ("ten", "two", "four"),
        },
        statements=(
            "I have a meeting with {boss} at {time} o'clock.",
            ("I got the promotion I applied for!", HAPPINESS),
            ("They told me today that I lost my job.", SADNESS),
            "The new office is much closer to my home.",
            ("My boss shouted at me in front of everyone.", ANGER),
            "I've been working late every night this week.",
        ),
        questions=(
            (
                "Have you finished {report} yet?",
                ("Almost, I just need to check the numbers.", "Not yet, it's taking longer than I thought."),
            ),
            ("When is the meeting with {boss}?", ("It's on {day} at {time}.", "It was moved to {day} afternoon.")),
            (
                "How do you like your new job?",
                (("I love it, the people are great!", HAPPINESS), "It's fine, but the hours are long."),
            ),
            (
                "What time do you usually get to the office?",
                ("Usually around eight thirty.", "I try to be there before nine."),
            ),
            ("Who is in charge of {report}?", ("{boss} is in charge of it.", "I think it's the new manager.")),
            (
                "How long have you worked here?",
                (("About three years now, and I still love it!", HAPPINESS), "Since I graduated from college."),
            ),
        ),
        requests=(
            (
                "Please send me {report} by {day}.",
                ("Sure, I'll send it to you by then.", "No problem, I'll email it tonight."),
                ("I need a bit more time, it's not ready.",),
            ),
            (
                "Let's discuss the plan over lunch.",
                (("Sounds good, I'll meet you downstairs at noon.", HAPPINESS), "OK, I'll book a table nearby."),
                ("I'm afraid I have another meeting at noon.",),
            ),
            (
                "Don't be late for the meeting on {day}.",
                ("I won't, I promise.", "Don't worry, I'll be there early."),
                (),
            ),
            (
                "You should ask {boss} for a raise.",
                ("Maybe you're right, I'll talk to {boss} tomorrow.", "OK, I will, after this project is finished."),
                ("Now is not a good time to ask.",),
            ),
        ),
        offers=(
            "I'll help you with {report} this afternoon.",
            "I'll cover your shift on {day}.",
            "I'll ask {boss} about it after lunch.",
        ),
    ),
    "health": Topic(
        slots={
            "symptom": ("a headache", "a sore throat", "a fever", "a bad cough", "a stomachache"),
            "days": ("two", "three", "four"),
            "medicine": ("these pills", "this cough syrup", "this medicine"),
            "times": ("twice", "three times"),
        },
        statements=(
            ("I have {symptom} and I feel terrible.", SADNESS),
            "I've had {symptom} for {days} days.",
            ("I'm scared it might be something serious.", FEAR),
            ("I feel much better today!", HAPPINESS),
            ("I've started going to the gym, and I really enjoy it!", HAPPINESS),
        ),
        questions=(
            (
                "What seems to be the problem?",
                ("I've had {symptom} for {days} days.", "I have {symptom} and I can't sleep."),
            ),
            ("Do you have a fever?", ("Yes, a little, since last night.", "No, but my throat really hurts.")),
            (
                "How often should I take {medicine}?",
                ("The dose is {times} a day, after meals.", "{times} a day is enough for now."),
            ),
            ("Are you allergic to anything?", ("Not that I know of.", "Yes, I'm allergic to penicillin.")),
            (
                "How are you feeling today?",
                (("Much better, thank you!", HAPPINESS), "Still a bit tired, to be honest."),
            ),
            ("Is it serious, doctor?", ("No, it's just a bad cold.", "It's nothing to worry about.")),
        ),
        requests=(
            (
                "Please take {medicine} {times} a day.",
                ("OK, I'll take it after meals.", "All right, I'll start today."),
                ("I don't like taking medicine.",),
            ),
            (
                "You should stay in bed for a few days.",
                ("OK, I'll call my boss and tell him.", "I will, thank you, doctor."),
                ("I can't, I have an exam on Friday.",),
            ),
            (
                "Drink plenty of water and get some rest.",
                ("I will, thanks for the advice.", "Sure, I'll go to bed early tonight."),
                (),
            ),
            (
                "Come back next week if you don't feel better.",
                ("OK, I'll make an appointment.", "I will, thank you."),
                (),
            ),
        ),
        offers=(
            "I'll make you some hot tea with honey.",
            "I'll call the doctor for you.",
            "I'll pick up your medicine on the way home.",
        ),
    ),
    "weather": Topic(
        slots={
            "weather": ("rain", "snow", "a storm"),
            "temp": ("thirty", "thirty-five", "forty"),
            "day": ("tomorrow", "this weekend", "on Saturday"),
        },
        statements=(
            "The forecast says there will be {weather} {day}.",
            ("What a beautiful day it is today!", HAPPINESS),
            "It's been raining all week.",
            ("I hate thunderstorms, they really scare me.", FEAR),
            "It's much colder than yesterday.",
        ),
        questions=(
            (
                "What's the weather like today?",
                (("It's sunny and warm, perfect for a picnic!", HAPPINESS), "It's cloudy, and it might rain later."),
            ),
            (
                "Do you think it will rain {day}?",
                ("The forecast says it will be sunny.", "Probably, the sky looks very dark."),
            ),
            (
                "How hot does it get here in summer?",
                ("It can get up to {temp} degrees.", "Very hot, sometimes over {temp} degrees."),
            ),
            (
                "Which season do you like best?",
                (("I love autumn, it's so colorful!", HAPPINESS), "Spring, because it's not too hot."),
            ),
            ("Is it cold outside?", ("Yes, it's freezing.", "Not really, it's quite mild.")),
        ),
        requests=(
            (
                "Take an umbrella with you.",
                ("OK, I'll take the big one.", ("Good idea, I'll grab it now.", HAPPINESS)),
                ("I don't need it, it's just a light rain.",),
            ),
            (
                "Let's go to the beach {day}.",
                (("Great idea, I'll bring some sandwiches.", HAPPINESS), "Sure, I'll check the forecast first."),
                ("It's going to be too cold for the beach.",),
            ),
            ("Please close the window, it's cold.", ("Sure, I'll close it right now.", "No problem, I'll do it."), ()),
            (
                "You should wear a warm coat today.",
                ("OK, I'll wear my new one.", "You're right, I'll change."),
                ("It's not that cold, really.",),
            ),
        ),
        offers=(
            "I'll give you a ride home so you don't get wet.",
            "I'll lend you my umbrella.",
            "I'll check the forecast for tomorrow.",
        ),
    ),
    "school": Topic(
        slots={
            "subject": ("math", "history", "chemistry", "English", "biology"),
            "exam_day": ("on Monday", "next week", "tomorrow"),
            "grade": ("an A", "a B"),
            "teacher": ("Professor Lee", "Miss Brown", "Mr Davis"),
        },
        statements=(
            "I have a {subject} exam {exam_day}.",
            ("I got {grade} on my {subject} test!", HAPPINESS),
            ("I failed my {subject} exam again.", SADNESS),
            "The library closes at nine on weekdays.",
            "Our {subject} teacher gives us a lot of homework.",
        ),
        questions=(
            (
                "Have you finished your {subject} homework?",
                ("Not yet, it's really difficult.", ("Yes, and it was easier than I expected!", HAPPINESS)),
            ),
            (
                "When is the {subject} exam?",
                ("It's {exam_day}, in the morning.", "I think it's {exam_day}, but I'm not sure."),
            ),
            (
                "What's your favorite subject?",
                (("I really like {subject}!", HAPPINESS), "Probably {subject}, it's interesting."),
            ),
            ("How did you do on the test?", (("I got {grade}!", HAPPINESS), ("Not very well, I'm afraid.", SADNESS))),
            ("Who teaches your {subject} class?", ("{teacher} teaches it this year.", "A new teacher, {teacher}.")),
            (
                "Are you going to the library after class?",
                ("Yes, I need to study for the exam.", "No, I'm going home early today."),
            ),
        ),
        requests=(
            (
                "Please help me with this {subject} problem.",
                ("Sure, I'll explain it after lunch.", "No problem, I'll show you how."),
                ("Sorry, I don't understand it either.",),
            ),
            (
                "Let's study together for the exam.",
                (("Good idea, I'll bring my notes.", HAPPINESS), "OK, I'll meet you at the library."),
                ("I prefer to study alone, to be honest.",),
            ),
            (
                "Don't forget to hand in your essay on Friday.",
                ("I won't forget, I promise.", "Don't worry, I'll hand it in on time."),
                ("I already handed it in yesterday.",),
            ),
            (
                "You should talk to {teacher} about your grade.",
                ("OK, I'll talk to {teacher} after class.", "You're right, I'll do it tomorrow."),
                ("It won't change anything.",),
            ),
        ),
        offers=(
            "I'll lend you my notes from last week.",
            "I'll help you study for the exam.",
            "I'll wait for you after class.",
        ),
    ),
    "home": Topic(
        slots={
            "room": ("the kitchen", "the living room", "the bathroom"),
            "rent": ("eight hundred", "nine hundred", "twelve hundred"),
            "chore": ("do the dishes", "take out the trash", "clean the bathroom"),
        },
        statements=(
            "I'm looking for an apartment near the city center.",
            ("We finally moved into our new house!", HAPPINESS),
            "The rent here is {rent} dollars a month.",
            ("The kitchen is filthy, there are dirty dishes everywhere.", DISGUST),
            ("Our neighbors played loud music until three in the morning.", ANGER),
        ),
        questions=(
            (
                "How much is the rent?",
                ("It's {rent} dollars a month.", "The rent is {rent} dollars, with heating included."),
            ),
            (
                "How many bedrooms does it have?",
                (("It has two bedrooms and a lovely garden!", HAPPINESS), "Just one, but it's quite big."),
            ),
            (
                "When can I move in?",
                ("The apartment is free from next Monday.", "Any time after the first of the month."),
            ),
            (
                "Is the apartment close to a subway station?",
                ("Yes, it's a five minute walk.", "Not really, it's a long bus ride."),
            ),
            (
                "Who is going to {chore} tonight?",
                ("It's your turn this time.", "I did it yesterday, so it's {name2}'s turn."),
            ),
            (
                "Do you like living with roommates?",
                ("It's fine, we get along well.", ("Not really, they're very messy.", DISGUST)),
            ),
        ),
        requests=(
            (
                "Please {chore} before you go to bed.",
                ("OK, I'll do it after dinner.", "Sure, I'll do it right now."),
                ("I did it last night, it's your turn.",),
            ),
            (
                "Let's paint {room} this weekend.",
                (("Great idea, I'll buy the paint tomorrow.", HAPPINESS), "OK, I'll move the furniture on Friday."),
                ("I'm busy this weekend, maybe next week.",),
            ),
            (
                "Turn down the music, please.",
                ("Sorry, I'll turn it down now.", "OK, I will."),
                ("It's not that loud.",),
            ),
            (
                "You should call the landlord about the heating.",
                ("You're right, I'll call him today.", "OK, I'll call first thing tomorrow."),
                ("I already called, he didn't answer.",),
            ),
        ),
        offers=(
            "I'll help you move the boxes on Saturday.",
            "I'll fix the kitchen light this evening.",
            "I'll do the shopping this week.",
        ),
    ),
}

# --- lines for any topic -------------------------------------------------------------

# reactions to a statement, by the statement's emotion
HAPPY_REACTIONS = (
    ("That's wonderful news!", HAPPINESS),
    ("I'm so glad to hear that!", HAPPINESS),
    ("That sounds great.", HAPPINESS),
)
SYMPATHETIC_REACTIONS = (
    "Oh no, I'm sorry to hear that.",
    ("That's awful, you poor thing.", SADNESS),
    "That must be really hard.",
)
NEUTRAL_REACTIONS = (
    "I see what you mean.",
    "That's good to know.",
    ("Oh, I didn't know that!", SURPRISE),
    "That makes sense to me.",
    ("That sounds like fun!", HAPPINESS),
)
THANKS = (
    ("Thank you, that's very kind of you.", HAPPINESS),
    ("Great, thanks a lot!", HAPPINESS),
    ("Wonderful, that would be a big help!", HAPPINESS),
    "Thanks, I really appreciate it.",
    "That's fine with me.",
)
REFUSALS = ("Sorry, I can't right now.", "I'm afraid I'm too busy today.", "I'd rather not, if you don't mind.")
NEWS = ("Anyway, it's been a busy week for me.", "By the way, I saw {name2} yesterday.", "Well, that's what I heard.")
# questions about a statement, about a question, about a directive, and when a topic runs out
FOLLOW_UPS = (
    ("Really? Why is that?", ("I'm not sure, it just happened that way.", "It's a long story, to be honest.")),
    (("Really? When did that happen?", SURPRISE), ("Just yesterday, actually.", "A few days ago.")),
    ("How do you feel about it?", ("I'm fine with it, really.", "A bit nervous, to be honest.")),
)
CLARIFICATIONS = (
    ("Why do you ask?", ("I was just wondering.", "I just want to plan ahead.")),
    ("Sorry, could you say that again?", ("I asked about your plans for today.", "Never mind, it's not important.")),
)
CHECKS = (
    ("Right now, or can it wait?", ("It can wait until tomorrow.", "Now would be best, if possible.")),
    ("Why, is something wrong?", ("No, everything is fine.", "No, I just think it's a good idea.")),
)
GENERIC_QUESTIONS = (("Is there anything else?", ("No, that's all for now.", "That's everything, thanks.")),)
# replies to a question with a directive or a commissive, and fallbacks
REDIRECTS = (
    ("Ask me again later, I'm busy now.", ("OK, I'll come back after lunch.",), ()),
    ("Let's talk about it after lunch.", ("Sure, I'll find you then.",), ()),
)
GENERIC_REQUESTS = (("Please wait here a moment.", ("Sure, I'll wait.", "OK, I'll be right here."), ()),)
DEFERRALS = ("I'll find out and let you know.", "I'll check and get back to you.")
GENERIC_OFFERS = ("I'll think about it and let you know.",)

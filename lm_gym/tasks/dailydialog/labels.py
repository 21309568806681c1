"""DailyDialog's label codes, as the release writes them in its act and emotion files."""

ACTS = {1: "inform", 2: "question", 3: "directive", 4: "commissive"}
EMOTIONS = {0: "no emotion", 1: "anger", 2: "disgust", 3: "fear", 4: "happiness", 5: "sadness", 6: "surprise"}

"""The actions of the synthetic CommonGen world (:mod:`lm_gym.tasks.commongen.synthetic`).

Each action with the words it takes (who does it, on what, with what, where), the actions a person can do
alongside another, and the pairs of actions two agents do on one object.
"""

from __future__ import annotations

from dataclasses import dataclass

from lm_gym.tasks.commongen.synthetic_words import EVERYONE


@dataclass(frozen=True)
class Action:
    """A verb with the typed arguments it takes in the synthetic world."""

    verb: str
    objects: tuple[str, ...] = ()  # empty: the action has no object
    prep: str = ""  # links the verb to its object ("sits on a bench")
    tools: tuple[str, ...] = ()
    tool_prep: str = "with"
    places: tuple[str, ...] = ()
    place_prep: str = ""  # overrides the place's own prepositions ("swims in the lake")
    agents: tuple[str, ...] = EVERYONE
    motion: str = "still"  # still, seated, upright, moving or resting: which postures fit it


COOKS = ("chef", "man", "woman", "girl", "boy")
ACTIONS = (
    Action(
        "throw",
        ("ball", "frisbee", "stick", "stone", "snowball"),
        places=("park", "beach", "field", "yard"),
        agents=EVERYONE + ("player",),
        motion="upright",
    ),
    Action(
        "catch",
        ("ball", "frisbee", "stick"),
        places=("park", "beach", "field", "yard"),
        agents=EVERYONE + ("player", "dog"),
        motion="upright",
    ),
    Action(
        "kick",
        ("ball",),
        places=("field", "park", "street", "yard", "beach"),
        agents=EVERYONE + ("player",),
        motion="moving",
    ),
    Action(
        "hit",
        ("ball",),
        tools=("bat", "racket", "stick"),
        places=("field", "court", "park"),
        agents=("player", "boy", "girl", "man", "woman"),
        motion="upright",
    ),
    Action(
        "score",
        ("goal", "point"),
        places=("field", "stadium", "court"),
        agents=("player", "boy", "girl", "team"),
        motion="moving",
    ),
    Action(
        "cheer",
        ("team", "player"),
        prep="for",
        places=("stadium", "field", "court"),
        agents=("crowd", "fan", "family", "girl", "boy"),
        motion="upright",
    ),
    Action(
        "cut",
        ("bread", "cake", "onion", "tomato", "apple", "cheese"),
        tools=("knife",),
        places=("kitchen", "table"),
        agents=COOKS,
        motion="upright",
    ),
    Action(
        "chop",
        ("onion", "carrot", "vegetable", "potato"),
        tools=("knife",),
        places=("kitchen", "restaurant"),
        agents=COOKS,
        motion="upright",
    ),
    Action(
        "chop",
        ("wood", "log"),
        tools=("axe",),
        places=("yard", "forest", "farm"),
        agents=("man", "woman", "farmer", "worker"),
        motion="upright",
    ),
    Action(
        "cook",
        ("egg", "pasta", "soup", "rice", "vegetable", "meal"),
        tools=("pan", "pot"),
        tool_prep="in",
        places=("kitchen", "restaurant"),
        agents=COOKS,
        motion="upright",
    ),
    Action(
        "bake",
        ("cake", "bread", "cookie", "pie", "pizza"),
        tools=("oven",),
        tool_prep="in",
        places=("kitchen", "bakery"),
        agents=COOKS,
        motion="upright",
    ),
    Action(
        "eat",
        ("soup", "salad", "pasta", "rice", "cake"),
        tools=("spoon", "fork"),
        places=("kitchen", "restaurant", "table", "cafe"),
        agents=EVERYONE + ("family",),
    ),
    Action(
        "eat",
        ("sandwich", "apple", "banana", "pizza", "cookie"),
        places=("park", "beach", "kitchen", "cafe", "table"),
        agents=EVERYONE + ("family",),
    ),
    Action(
        "eat",
        ("grass", "hay", "apple", "carrot"),
        places=("field", "farm", "barn"),
        agents=("horse", "cow", "goat", "sheep"),
    ),
    Action("chew", ("bone", "stick", "shoe"), places=("yard", "garden", "park", "room"), agents=("dog",)),
    Action(
        "drink",
        ("coffee", "tea", "water", "juice", "milk"),
        tools=("cup", "glass", "mug", "bottle"),
        tool_prep="from",
        places=("cafe", "kitchen", "table", "office", "park"),
    ),
    Action(
        "pour",
        ("water", "milk", "coffee", "juice", "tea"),
        tools=("glass", "cup", "mug"),
        tool_prep="into",
        places=("kitchen", "table", "restaurant", "bar", "cafe"),
        agents=EVERYONE + ("waiter", "chef"),
        motion="upright",
    ),
    Action(
        "serve",
        ("food", "meal", "coffee", "tea", "pizza", "soup", "dinner"),
        places=("restaurant", "cafe", "table", "party"),
        agents=("waiter", "chef", "man", "woman"),
        motion="upright",
    ),
    Action(
        "ride",
        ("bike", "horse", "skateboard", "motorcycle", "scooter"),
        places=("street", "park", "road", "trail", "beach", "field"),
        motion="moving",
    ),
    Action("walk", ("dog",), places=("park", "street", "beach", "trail"), motion="moving"),
    Action(
        "play",
        ("guitar", "piano", "violin", "drum"),
        places=("stage", "street", "park", "room", "church"),
        agents=EVERYONE + ("musician",),
    ),
    Action(
        "play",
        ("soccer", "frisbee"),
        places=("field", "park", "beach", "yard"),
        agents=EVERYONE + ("team", "player"),
        motion="moving",
    ),
    Action(
        "play",
        ("tennis", "basketball", "volleyball"),
        places=("court", "beach", "gym", "park"),
        agents=EVERYONE + ("team", "player"),
        motion="moving",
    ),
    Action("play", ("chess", "game"), places=("table", "park", "room", "cafe")),
    Action(
        "read",
        ("book", "newspaper", "letter", "magazine", "map"),
        places=("library", "park", "room", "garden", "train", "cafe"),
        agents=EVERYONE + ("teacher",),
    ),
    Action(
        "write",
        ("letter", "note", "story", "poem"),
        tools=("pen", "pencil"),
        places=("desk", "table", "office", "classroom", "library"),
        agents=EVERYONE + ("teacher",),
    ),
    Action(
        "type",
        ("email", "message", "letter"),
        tools=("keyboard", "computer", "laptop"),
        tool_prep="on",
        places=("office", "desk", "library", "cafe"),
        agents=EVERYONE + ("worker",),
    ),
    Action(
        "teach",
        ("class", "student", "child"),
        places=("classroom", "school", "library"),
        agents=("teacher", "man", "woman"),
        motion="upright",
    ),
    Action(
        "paint",
        ("wall", "fence", "picture", "door", "boat", "house"),
        tools=("brush", "roller"),
        places=("room", "yard", "garden", "studio"),
        agents=EVERYONE + ("worker", "artist"),
        motion="upright",
    ),
    Action(
        "wash",
        ("dish", "cup", "plate", "pan"),
        tools=("sponge", "cloth"),
        places=("kitchen", "restaurant"),
        motion="upright",
    ),
    Action(
        "wash",
        ("car", "dog", "window", "bike"),
        tools=("hose", "sponge"),
        places=("yard", "garage", "driveway", "street"),
        motion="upright",
    ),
    Action(
        "clean",
        ("table", "window", "floor", "mirror", "desk"),
        tools=("cloth", "sponge", "towel"),
        places=("house", "office", "hotel", "room"),
        agents=EVERYONE + ("worker",),
        motion="upright",
    ),
    Action(
        "sweep",
        ("floor", "porch", "leaf", "path"),
        tools=("broom",),
        places=("kitchen", "room", "shop", "yard", "house"),
        agents=EVERYONE + ("worker",),
        motion="upright",
    ),
    Action(
        "mow",
        ("lawn", "grass"),
        tools=("mower",),
        places=("yard", "garden", "park"),
        agents=("man", "woman", "boy", "girl", "gardener", "worker"),
        motion="moving",
    ),
    Action(
        "climb",
        ("tree", "ladder", "fence", "wall"),
        places=("park", "yard", "garden", "forest"),
        agents=EVERYONE + ("cat",),
        motion="moving",
    ),
    Action(
        "climb", ("mountain", "hill", "rock", "cliff"), tools=("rope",), agents=EVERYONE + ("climber",), motion="moving"
    ),
    Action(
        "swim",
        places=("lake", "pool", "river", "sea", "pond"),
        place_prep="in",
        agents=EVERYONE + ("dog", "duck", "swimmer"),
        motion="moving",
    ),
    Action(
        "run",
        places=("track", "beach", "street", "park", "field", "trail"),
        agents=EVERYONE + ("dog", "horse", "player", "runner"),
        motion="moving",
    ),
    Action(
        "jump",
        ("fence", "puddle", "log", "wave", "rope"),
        prep="over",
        places=("park", "field", "street", "beach", "yard"),
        agents=EVERYONE + ("dog", "horse"),
        motion="moving",
    ),
    Action(
        "hike", places=("trail", "mountain", "forest", "hill"), agents=EVERYONE + ("tourist", "family"), motion="moving"
    ),
    Action("ski", places=("mountain", "slope", "hill", "snow"), agents=EVERYONE + ("skier",), motion="moving"),
    Action("skate", places=("rink", "ice", "park", "street"), agents=EVERYONE + ("skater",), motion="moving"),
    Action(
        "surf",
        ("wave",),
        tools=("board",),
        tool_prep="on",
        places=("beach", "ocean"),
        agents=EVERYONE + ("surfer",),
        motion="moving",
    ),
    Action("row", ("boat",), places=("lake", "river", "pond"), place_prep="on", motion="moving"),
    Action(
        "plant",
        ("tree", "flower", "seed", "bush"),
        tools=("shovel",),
        places=("garden", "yard", "field", "park"),
        agents=EVERYONE + ("farmer", "gardener"),
        motion="upright",
    ),
    Action(
        "dig",
        ("hole",),
        tools=("shovel",),
        places=("garden", "beach", "yard", "field"),
        agents=EVERYONE + ("dog", "farmer", "worker"),
        motion="upright",
    ),
    Action(
        "pick",
        ("apple", "flower", "strawberry", "tomato", "berry", "orange"),
        places=("orchard", "garden", "field", "farm"),
        agents=EVERYONE + ("farmer",),
        motion="upright",
    ),
    Action("feed", ("bird", "duck", "pigeon"), places=("park", "pond", "lake"), agents=EVERYONE + ("tourist",)),
    Action(
        "feed",
        ("horse", "cow", "goat", "chicken", "sheep"),
        places=("farm", "barn", "field", "zoo"),
        agents=EVERYONE + ("farmer",),
        motion="upright",
    ),
    Action("feed", ("dog", "cat", "baby"), places=("kitchen", "yard", "room"), agents=("man", "woman", "boy", "girl")),
    Action("pet", ("dog", "cat", "horse", "goat"), places=("park", "farm", "yard", "zoo", "street")),
    Action("hug", ("friend", "dog", "baby", "puppy"), places=("party", "airport", "station", "park")),
    Action(
        "chase",
        ("ball", "cat", "bird", "squirrel", "duck"),
        places=("park", "yard", "field", "street", "beach"),
        agents=("dog", "cat", "boy", "girl", "child"),
        motion="moving",
    ),
    Action(
        "bark",
        ("cat", "stranger", "bird", "car", "mailman"),
        prep="at",
        places=("yard", "street", "park", "porch"),
        agents=("dog",),
        motion="upright",
    ),
    Action(
        "sing",
        ("song",),
        places=("stage", "church", "street", "park", "party"),
        agents=EVERYONE + ("singer", "crowd"),
        motion="upright",
    ),
    Action(
        "dance",
        places=("stage", "street", "party", "wedding", "club", "kitchen"),
        agents=EVERYONE + ("dancer",),
        motion="moving",
    ),
    Action(
        "sit",
        ("bench", "chair", "sofa", "rock", "step", "blanket", "grass"),
        prep="on",
        places=("park", "room", "garden", "beach", "porch"),
        agents=EVERYONE + ("dog", "cat"),
        motion="seated",
    ),
    Action(
        "stand",
        ("car", "tree", "door", "fence", "window", "table"),
        prep="next to",
        places=("street", "park", "room", "beach", "field"),
        agents=EVERYONE + ("dog", "horse"),
        motion="upright",
    ),
    Action(
        "sleep",
        ("sofa", "bed", "grass", "floor", "blanket"),
        prep="on",
        places=("room", "house", "park", "garden"),
        agents=EVERYONE + ("dog", "cat", "baby"),
        motion="resting",
    ),
    Action(
        "wait",
        ("bus", "train", "taxi", "friend"),
        prep="for",
        places=("station", "street", "airport", "corner"),
        agents=EVERYONE + ("crowd", "tourist"),
    ),
    Action(
        "talk",
        ("phone",),
        prep="on",
        places=("street", "office", "cafe", "park", "train"),
        agents=EVERYONE + ("worker",),
    ),
    Action(
        "smile", ("camera", "baby", "friend"), prep="at", places=("party", "wedding", "park", "beach"), motion="upright"
    ),
    Action(
        "look",
        ("map", "sky", "picture", "menu", "phone"),
        prep="at",
        places=("street", "park", "station", "cafe", "restaurant"),
    ),
    Action(
        "wear",
        ("hat", "helmet", "jacket", "coat", "scarf", "cap"),
        places=("party", "street", "wedding", "beach", "park"),
        agents=EVERYONE + ("player",),
    ),
    Action(
        "hold", ("umbrella", "cup", "baby", "flower", "sign", "balloon"), places=("street", "park", "station", "party")
    ),
    Action(
        "open",
        ("door", "window", "box", "gift", "bottle"),
        places=("room", "kitchen", "office", "party"),
        motion="upright",
    ),
    Action(
        "push",
        ("cart", "stroller", "wheelbarrow", "swing", "car"),
        places=("street", "park", "store", "garden", "market"),
        motion="moving",
    ),
    Action(
        "pull",
        ("rope", "cart", "wagon", "sled"),
        places=("field", "street", "yard", "farm", "snow"),
        agents=EVERYONE + ("horse", "dog"),
        motion="moving",
    ),
    Action(
        "carry",
        ("bag", "box", "basket", "bucket", "suitcase", "umbrella"),
        places=("street", "beach", "market", "station", "farm"),
        agents=EVERYONE + ("worker",),
        motion="moving",
    ),
    Action(
        "lift",
        ("box", "weight", "bag"),
        places=("gym", "street", "room", "store"),
        agents=EVERYONE + ("worker",),
        motion="upright",
    ),
    Action("pack", ("bag", "suitcase", "box", "lunch"), places=("room", "car", "house", "kitchen"), motion="upright"),
    Action(
        "fill",
        ("bucket",),
        tools=("sand", "water"),
        places=("beach", "garden", "yard"),
        agents=("boy", "girl", "child", "man", "woman"),
        motion="upright",
    ),
    Action(
        "fill",
        ("glass", "cup", "bottle"),
        tools=("water", "juice", "milk"),
        places=("kitchen", "table", "restaurant"),
        agents=EVERYONE + ("waiter",),
        motion="upright",
    ),
    Action(
        "watch",
        ("game", "match"),
        places=("stadium", "field", "room", "bar"),
        agents=EVERYONE + ("crowd", "fan", "family"),
    ),
    Action("watch", ("movie", "show"), places=("theater", "room", "house"), agents=EVERYONE + ("family",)),
    Action("watch", ("sunset", "bird", "wave"), places=("beach", "park", "lake", "hill")),
    Action("fly", ("kite",), places=("beach", "park", "field", "hill"), motion="upright"),
    Action(
        "sell",
        ("fruit", "vegetable", "flower", "bread", "hat", "ticket"),
        places=("market", "street", "store", "shop"),
        agents=EVERYONE + ("vendor", "farmer"),
        motion="upright",
    ),
    Action(
        "buy",
        ("fruit", "vegetable", "flower", "bread", "hat", "ticket"),
        places=("market", "store", "shop", "mall"),
        agents=EVERYONE + ("tourist", "customer"),
        motion="upright",
    ),
    Action(
        "fix",
        ("car", "bike", "truck"),
        tools=("wrench", "screwdriver"),
        places=("garage", "street", "driveway"),
        agents=("man", "woman", "worker", "mechanic"),
        motion="upright",
    ),
    Action(
        "fix",
        ("chair", "fence", "table", "door"),
        tools=("hammer", "screwdriver"),
        places=("yard", "farm", "garage", "workshop"),
        agents=("man", "woman", "worker", "carpenter"),
        motion="upright",
    ),
    Action(
        "build",
        ("sandcastle",),
        tools=("bucket", "shovel"),
        places=("beach",),
        agents=("boy", "girl", "child", "family"),
        motion="upright",
    ),
    Action(
        "build",
        ("snowman",),
        places=("yard", "park", "field", "snow"),
        agents=("boy", "girl", "child", "family"),
        motion="upright",
    ),
    Action(
        "build",
        ("fence", "house", "wall", "shed"),
        tools=("hammer",),
        places=("yard", "farm", "field"),
        agents=("man", "woman", "worker", "carpenter"),
        motion="upright",
    ),
    Action(
        "drive",
        ("car", "truck", "bus", "tractor", "taxi"),
        places=("road", "street", "city", "highway", "farm"),
        agents=("man", "woman", "driver", "farmer"),
        motion="moving",
    ),
)

# Actions a person can do at the same time as the main one, and which main motions they fit.
BACKGROUND_FITS = {
    "sit": ("still",),
    "stand": ("still", "upright"),
    "hold": ("still", "seated"),
    "look": ("still", "seated"),
    "smile": ("still", "seated", "upright", "moving"),
    "wear": ("still", "seated", "upright", "moving", "resting"),
}


@dataclass(frozen=True)
class Partner:
    """Two agents acting on the same object: the first does ``first``, the second ``second``."""

    first: str
    second: str
    objects: tuple[str, ...]
    second_agents: tuple[str, ...]


EATERS = ("family", "child", "boy", "girl", "man", "woman")
PARTNERS = (
    Partner("throw", "catch", ("ball", "frisbee", "stick"), ("dog", "boy", "girl", "player", "man", "woman")),
    Partner("throw", "chase", ("ball", "stick", "frisbee"), ("dog",)),
    Partner("kick", "chase", ("ball",), ("dog", "boy", "girl", "child")),
    Partner("hit", "catch", ("ball",), ("player", "boy", "girl")),
    Partner("cook", "eat", ("pasta", "soup", "rice", "meal"), EATERS),
    Partner("bake", "eat", ("cake", "bread", "cookie", "pie"), EATERS),
    Partner("cut", "eat", ("cake", "bread", "apple", "cheese"), EATERS),
    Partner("serve", "eat", ("meal", "pizza", "soup", "food"), EATERS + ("customer",)),
    Partner("serve", "drink", ("coffee", "tea"), ("man", "woman", "customer", "student")),
    Partner("pour", "drink", ("water", "milk", "coffee", "juice", "tea"), ("man", "woman", "boy", "girl", "customer")),
    Partner("pick", "eat", ("apple", "strawberry", "berry", "orange"), ("boy", "girl", "child", "man", "woman")),
    Partner("pick", "sell", ("apple", "flower", "tomato", "strawberry"), ("farmer", "vendor", "man", "woman")),
    Partner(
        "sell",
        "buy",
        ("fruit", "vegetable", "flower", "bread", "hat", "ticket"),
        ("tourist", "customer", "man", "woman", "girl", "boy"),
    ),
    Partner(
        "write", "read", ("letter", "note", "story", "poem"), ("teacher", "student", "girl", "boy", "man", "woman")
    ),
)

"""What a sentence does, read from its wording (SPEC 6.6): sets a rule, states a preference,
records a decision or asks for an action. The one place these words are listed; labels
("RULE:", "ALICE-ASK:") are read by line_subjects, and a label's kind wins over the wording.
"""

from __future__ import annotations

import re

from compactbot.compression.line_subjects import FeatureKind

# A sentence shorter than this says too little to be a rule or a preference ("never!").
MIN_WORDS = 3
MIN_CJK_CHARS = 4

# Each expression below reads the lowered sentence.
_DECISION = re.compile(
    r"\b(?:we\s+decided|decided\s+(?:to|that|on)|(?:we\s+)?agreed|let'?s\s+go\s+with|"
    r"let\s+us\s+go\s+with|we'?ll\s+go\s+with|we\s+will\s+go\s+with|going\s+with|settled\s+on|"
    r"final\s+decision)\b|\bdecision\s*:|我们决定|决定了|就这么定|定下来|最后定了|大家同意|"
    # A choice announced as made: "X it is", "locking it in", "the board signed off on X".
    r"^(?:(?:ok|okay|so|right|alright|fine)[,.]?\s+)*(?!(?:so|it|that|this|there|what|how|who|"
    r"as|oh|yes|yeah)\b)\w+\s+it\s+is\s+(?:for\s+the|then)\b|"
    r"\b(?:wins\s+the\s+vote|lock(?:ing|ed)\s+it\s+in|"
    r"done\s+deal|final\s+answer\s+(?:from|is|:)|that'?s\s+sorted|sorted\s+on\s+the|signed\s+off\s+on|"
    r"vote'?s\s+closed|we\s+(?:picked|chose)\s+\w+\s+(?:for|as)\b|"
    r"(?:in\s+the\s+end\s+)?we\s+went\s+(?:for|with)\s+\w+\s+(?:for|as)\b|"
    r"(?:committee|board|team|group)\s+(?:went\s+with|chose|picked|approved)|"
    r"the\s+winner\s+for\s+the|(?:the\s+)?date'?s\s+fixed|confirmed\s+with\s+the\s+\w+|"
    r"we'?ll\s+take\s+the\s+\w+\s+(?:quote|offer|deal|option|bid)|we'?re\s+doing\s+plan)|"
    r"^(?:settled|chosen|decided|agreed)\s*:",
)
# "I prefer …", "keep answers short": the speaker's own taste, not a rule for everyone.
_PREFERENCE = re.compile(
    r"\b(?:i\s+(?:really\s+|much\s+|generally\s+|always\s+)?(?:prefer|dislike)|"
    r"i'd\s+(?:much\s+)?(?:prefer|rather)|i'd\s+like\s+(?:answers|replies|responses|it|my|short)|i\s+would\s+(?:much\s+)?(?:prefer|rather)|"
    r"i\s+(?:don't|do\s+not)\s+(?:like|want|enjoy)|i\s+can't\s+stand|i\s+want\s+(?:my|the|short|"
    r"shorter|brief|terse|answers|replies|responses|summaries)|my\s+(?:preference|favou?rite)|"
    r"(?:works?|suits?)\s+(?:better|best)\s+for\s+me|not\s+a\s+fan\s+of|i\s+lean\s+towards?|"
    r"keep\s+(?:your\s+|the\s+|my\s+|all\s+)?(?:answers|replies|responses|messages|summaries|"
    r"it|them|things|explanations)\s+(?:short|brief|terse|concise|simple|plain|under|to|in|"
    r"casual|formal|light))\b|"
    # A pick of one's own: "my vote's on X", "put me down for X", "X for me, please".
    r"\b(?:my\s+(?:vote|pick|choice)(?:'s|\s+is|\s+goes)?\s+(?:on|for|is)\b|"
    r"is\s+my\s+(?:pick|choice|vote)\b|put\s+me\s+down\s+for|if\s+it'?s\s+up\s+to\s+me|"
    r"i'?d\s+go\s+with|i\s+(?:always|usually)\s+(?:go|opt)\s+for|^for\s+me\s+it'?s\b|"
    r"i'?m\s+more\s+of\s+an?\s+\w+\s+person|i'?d\s+like\s+the\b|"
    r"i'?m\s+(?:a\s+)?(?:vegetarian|vegan|allergic|lactose|gluten|diabetic|kosher|halal)\b|"
    r"when\s+you\s+(?:send|give|email|text|call|message|ping|book)\s+me\b)|"
    r"^(?:please\s+)?(?:don'?t|do\s+not|never)\s+(?:book|send|call|text|email|ping|put|"
    r"schedule|assign|add|tag|cc|seat)\s+me\b|"
    r"我(?:更|比较|很|最)?(?:喜欢|偏好|倾向|希望|讨厌)|我(?:更|比较|最)想|如果可以的话|"
    r"我不(?:喜欢|想要)|对我来说|"
    r"请.{0,12}(?:简短|简洁|简单|精简)|(?:回答|回复|答案).{0,6}(?:简短|简洁|短一点)",
)
# "I love/like/hate …" is mostly small talk ("I love science fiction"); it states a
# preference when it says how things should be done ("… when you cite") or picks one thing
# over another ("I like the blue one better").
_TASTE = re.compile(
    r"\bi\s+(?:really\s+|just\s+|kind\s+of\s+)?(?:like|love|hate)\s+(?:it\s+)?when\b|"
    r"\bi\s+(?:really\s+|also\s+)?(?:like|love)\b.*\b(?:better|more\s+than|over\s+the|"
    r"rather\s+than|instead\s+of)\b|"
    r"\bi\s+hate\s+(?:getting|being|when|it\s+when)\b",
)
# Small talk: laughter, a hedge or a clause that only sets a scene. A sentence with one of
# these sets no rule through a weak word ("you never know haha"); "must", "forbidden" and
# the like still make it one.
_SMALL_TALK = re.compile(
    r"\b(?:a?ha(?:ha)+h?|hehe\w*|lol\w*|lmao|rofl|xd|jk)\b|"
    r"^(?:(?:yeah|yes|well|but|and|oh|so|like)[,!]?\s+)?(?:i\s+(?:think|guess|mean|feel|believe|"
    r"suppose|bet|wish)|maybe|probably|perhaps|because|cause|since|if|when|though|although|"
    r"at\s+least|even\s+if|unless|hopefully|i\s+hope|(?:i'?m|im)\s+sure)\b",
)
# A person's name (capitalised: read in the sentence as written), not a pronoun.
_NAME = r"(?!(?:It|This|That|There|He|She|They|We|You|I|What|Who|Which|Here)\b)[A-Z][\w-]+"
# Who a rule binds, before its modal: "we never …", "every expense must …", "the key must …".
_BOUND = (
    r"(?:we|you|everyone|everybody|nobody|no\s+one|members|people|guests|staff|students|"
    r"each\s+\w+|every\s+\w+(?:\s+\w+)?|all\s+\w+|the\s+\w+(?:\s+\w+)?)"
)
# Those a weak word binds as a rule: the group itself ("we don't …"), not "you" or "the
# landlord", of whom "never" and "always" mostly tell what they do.
_GROUP = r"(?:we|everyone|everybody|nobody|no\s+one|members|guests|staff|students)"
# "You must be tired", "they must be doing well": a guess, not an obligation.
_GUESSED = (
    r"(?:a|an|the|so|such|really|pretty|very|quite|someone|something|nice|fun|great|hard|"
    r"tough|crazy|awesome|cool|amazing|lovely|rough|good|right|fine|tired|busy|\w+ing)\b"
)
_STRONG_MODAL = (
    rf"(?:must(?!\s+have\b)(?!\s+be\s+{_GUESSED})|mustn't|shall|shan't|"
    r"should\s+(?:never|always|not)|shouldn't|can\s+only|may\s+not|may\s+only|"
    r"(?:is|are)\s+(?:not\s+)?(?:allowed|permitted|required|forbidden|prohibited))"
)
_WEAK_MODAL = r"(?:never|always|only|(?:do|does)\s+not|don'?t|doesn'?t|cannot|can't)"
# What "we don't" says of the group's state, not its conduct: "we don't even know".
_STATE = (
    r"(?:even|really|know|have|need|get|see|think|care|usually|both|just|mind|want|like|"
    r"understand|remember|feel|seem)\b"
)
# "No" that answers or exclaims ("no you're fine", "no idea"), not a prohibition.
_NO_REPLY = (
    r"(?:worries|worry|problem|problems|prob|idea|way|thanks|clue|rush|doubt|kidding|need|"
    r"i|i'm|im|you|you're|youre|we|he|she|they|it|it's|that|this|not|one's|wonder|"
    r"matter|offense|offence|big|more|longer|sir|man|dude|lol|haha|really|actually|just|but|"
    r"no|other|one\s+else|"
    r"(?:was|were|is|are|did|do|does|have|had|will|would|can|could)(?:n'?t)?)\b"
)
# "never" before what happened ("never seen it", "the landlord never came"): a story.
_NEVER_PAST = re.compile(
    r"\bnever\s+(?:\w+ed|seen|heard|been|done|had|got|gotten|went|came|knew|told|thought|"
    r"saw|made|said|met|read|ate|eaten|tried|played|watched|found|felt|understood)\b"
)
# "Don't forget to …" reminds; "don't get me wrong" is a turn of phrase: neither bans anything.
_NOT_A_BAN = r"(?:forget|(?:get|mind|judge|quote|ask|tell)\s+me)\b"
# A rule in words that also describe what merely happens: "never", "only", "don't" …
_WEAK_RULE = re.compile(
    rf"^(?:(?:please|remember|reminder|note|and|also|so|ok|okay)[,:]?\s+)?"
    rf"(?:never|always|only|(?:don'?t|do\s+not)(?!\s+{_NOT_A_BAN})|no\s+(?!{_NO_REPLY})\w+|"
    rf"nobody|no\s+one|avoid)\b|"
    rf"\b{_GROUP}\s+{_WEAK_MODAL}\s+(?!{_STATE})",
)
# Words that only ever set one.
_STRONG_RULE = re.compile(
    rf"\b{_BOUND}\s+{_STRONG_MODAL}\b|"
    r"^(?:under\s+no\s+circumstances|at\s+no\s+time)\b|"
    r"\b(?:not\s+allowed|no\s+\w+(?:\s+\w+)?\s+(?:is\s+|are\s+)?allowed|forbidden|prohibited|"
    r"mandatory|required\s+to|must\s+not|off-limits|no\s+exceptions|at\s+all\s+times|"
    r"without\s+(?:\w+\s+)?(?:approval|sign-?off|permission|consent)|rule\s*:|"
    # Norms in plain words: "needs sign-off", "stays private", "is not to be posted".
    r"(?:needs?|requires?)\s+(?:\w+\s+)?(?:sign-?off|approval|review)\s+(?:from|by|first)|"
    r"gets?\s+(?:\w+\s+){0,2}(?:checked|reviewed|approved)\s+by\s+\w+(?:\s+\w+)?\s+first|"
    r"stays?\s+(?:private|confidential|internal|secret)|(?:is|are)\s+not\s+to\s+be\s+"
    r"(?:posted|shared|forwarded|used|touched|opened|moved|discussed|mentioned|sent|shown)|"
    r"not\s+ok(?:ay)?\s+to\s+(?:forward|share|post|send|use|bring|invite|leak|discuss)|"
    r"forbids|strictly\s+no|ground\s+rules?|leaves\s+this\s+(?:room|chat|group)|"
    r"until\s+further\s+notice|stick\s+to\s+this|keep\s+.{0,40}\bout\s+of\s+"
    r"(?:public|email|the\s+chat|this\s+chat|the\s+group)|keep\s+.{0,40}\bfor\s+\w+\s+only)|"
    r"\bwithout\b.{0,60}\b(?:get|gets|are|will\s+be)\s+rejected\b|"
    r"^(?:guys,?\s+|everyone,?\s+|please\s+)?stop\s+\w+ing\b.*\bwithout\b|"
    r"不要|禁止|必须|务必|只能|不得|一定要|不准|不许|不可以|严禁|切勿|千万别|未经.{0,8}(?:批准|同意|允许)",
)
# A member asking someone to do something …
_ASK = re.compile(
    r"^(?:(?:hey|hi|ok|okay|so|and|also)[,!]?\s+)?(?:@?[\w-]+\s*,\s*|@[\w-]+\s+)?"
    r"(?:(?:can|could)\s+(?:you|someone|somebody|anyone)|will\s+(?:someone|somebody|anyone)|"
    r"please|pls|kindly|(?:would\s+you\s+)?mind\s+\w+ing|remind\s+me|ask\s+\w+\s+to|"
    r"(?:don'?t|do\s+not)\s+forget\s+to)\b|"
    # A task handed to someone: "Task for Bob:", "over to you", "the slides are yours to finish".
    r"\b(?:(?:task|todo|job)\s+for\s+\w+\s*:|next\s+step\s+is\s+on\b|over\s+to\s+you\b|"
    r"your\s+job\s*:|(?:is|are)\s+yours\s+to\b|you'?re\s+on\s+\w+\s+duty\b)|"
    r"\b(?:i\s+need\s+you\s+to|i'?d\s+like\s+(?:you|someone|somebody)\s+to|"
    r"i\s+would\s+like\s+(?:you|someone|somebody)\s+to|(?:can|could)\s+you\s+(?:please\s+)?\w+|"
    r"(?:someone|somebody|anyone)\s+(?:needs?\s+to|should|has\s+to|must))\b|"
    r"请你|请帮|帮我|帮忙|麻烦|你能不能|能不能帮|可以帮|^请|[a-z]负责",
)
# … or taking it on for the group, which small talk also says ("maybe we will meet again").
_PLEDGE = re.compile(
    r"^(?:(?:hey|hi|ok|okay|so|and|also)[,!]?\s+)?(?:let'?s|let\s+us)\b|"
    r"\b(?:we\s+(?:need\s+to|should|have\s+to|'ll|will)|we'll|"
    r"i'll|i\s+will|i'm\s+going\s+to|i\s+am\s+going\s+to|i\s+can\s+take|i'll\s+take|"
    r"todo|to-do|action\s+item)\b|"
    r"我来|我会|我负责",
)
# What a named person must or will do ("Grace must approve", "Bob will write …"): the name
# is told by its capital, so this one reads the sentence as written.
_NAMED = re.compile(
    rf"\b{_NAME}\s+(?:(?P<strong>{_STRONG_MODAL})|(?P<weak>{_WEAK_MODAL})|will|should|needs\s+to|"
    r"has\s+to|is\s+going\s+to|promised\s+to|said\s+(?:they|he|she)'?d|"
    r"is\s+(?:taking\s+care\s+of|handling|in\s+charge\s+of))\s|"
    rf"^{_NAME}\s+to\s+[a-z]+\b.*\b(?:by|before)\s+\w|"
    # "Hey Bob, send the team the plan": a task handed to the one addressed.
    rf"^(?:(?:Hey|Hi|Ok|OK|Okay)\s+)?{_NAME},\s+(?:send|book|call|email|chase|confirm|update|"
    r"file|print|bring|check|fix|renew|order|buy|pick|grab|water|write|share|post|upload|"
    r"finish|prepare|draft|ping|invite|reserve)\b"
)


def statement_kind(sentence: str) -> FeatureKind | None:
    """ "rule", "preference", "decision" or "action" for a sentence that is one; else None."""
    if not _long_enough(sentence):
        return None
    lowered = sentence.lower()
    if lowered.rstrip().endswith(("?", "？")):
        # A question sets no rule and states no taste; it may ask someone to do something.
        return "action" if _ASK.search(lowered) else None
    if _DECISION.search(lowered):
        return "decision"
    small_talk = _SMALL_TALK.search(lowered) is not None
    if _PREFERENCE.search(lowered) or (not small_talk and _TASTE.search(lowered)):
        return "preference"
    named = None if sentence.islower() else _NAMED.search(sentence)
    if _STRONG_RULE.search(lowered) or (named is not None and named["strong"] is not None):
        return "rule"
    # "Taken only has one season": a capitalised word before a weak word tells no rule.
    if _WEAK_RULE.search(lowered) and not small_talk and _NEVER_PAST.search(lowered) is None:
        return "rule"
    if named is not None and not (named["weak"] or named["strong"]):
        return "action"
    if _ASK.search(lowered) or (not small_talk and _PLEDGE.search(lowered)):
        return "action"
    return None


def _long_enough(sentence: str) -> bool:
    if len(sentence.split()) >= MIN_WORDS:
        return True
    return not sentence.isascii() and sum(ord(ch) > 0x2E7F for ch in sentence) >= MIN_CJK_CHARS

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
    r"final\s+decision)\b|\bdecision\s*:|我们决定|决定了|就这么定|定下来",
)
# "I prefer …", "keep answers short": the speaker's own taste, not a rule for everyone.
_PREFERENCE = re.compile(
    r"\b(?:i\s+(?:really\s+|much\s+|generally\s+|always\s+)?(?:prefer|like|love|hate|dislike)|"
    r"i'd\s+(?:much\s+)?(?:prefer|rather)|i'd\s+like\s+(?:answers|replies|responses|it|my|short)|i\s+would\s+(?:much\s+)?(?:prefer|rather)|"
    r"i\s+(?:don't|do\s+not)\s+(?:like|want|enjoy)|i\s+can't\s+stand|i\s+want\s+(?:my|the|short|"
    r"shorter|brief|terse|answers|replies|responses|summaries)|my\s+(?:preference|favou?rite)|"
    r"(?:works?|suits?)\s+(?:better|best)\s+for\s+me|"
    r"keep\s+(?:your\s+|the\s+|my\s+|all\s+)?(?:answers|replies|responses|messages|summaries|"
    r"it|them|things|explanations)\s+(?:short|brief|terse|concise|simple|plain|under|to|in|"
    r"casual|formal|light))\b|"
    r"我(?:更|比较|很|最)?(?:喜欢|偏好|倾向|希望|讨厌)|我不(?:喜欢|想要)|"
    r"请.{0,12}(?:简短|简洁|简单|精简)|(?:回答|回复|答案).{0,6}(?:简短|简洁|短一点)",
)
# A person's name (capitalised: read in the sentence as written), not a pronoun.
_NAME = r"(?!(?:It|This|That|There|He|She|They|We|You|I|What|Who|Which|Here)\b)[A-Z][\w-]+"
# "No worries", "no idea": chatter, not a prohibition.
_NOT_RULES = (
    r"(?:worries|worry|problem|problems|prob|idea|way|thanks|clue|rush|doubt|kidding|need)\b"
)
# Who a rule binds, before its modal: "we never …", "every expense must …", "the key must …".
_BOUND = (
    r"(?:we|you|everyone|everybody|nobody|no\s+one|members|people|guests|staff|students|"
    r"each\s+\w+|every\s+\w+(?:\s+\w+)?|all\s+\w+|the\s+\w+(?:\s+\w+)?)"
)
_MODAL = (
    r"(?:must(?!\s+have\b)|mustn't|shall|shan't|never|always|only|should\s+(?:never|always|not)|"
    r"shouldn't|(?:do|does)\s+not|don'?t|doesn'?t|cannot|can't|can\s+only|may\s+not|may\s+only|"
    r"(?:is|are)\s+(?:not\s+)?(?:allowed|permitted|required|forbidden|prohibited))"
)
_RULE = re.compile(
    rf"^(?:(?:please|remember|reminder|note|and|also|so|ok|okay)[,:]?\s+)?"
    rf"(?:never|always|only|don'?t|do\s+not|no\s+(?!{_NOT_RULES})\w+|nobody|no\s+one|avoid|"
    r"under\s+no\s+circumstances|at\s+no\s+time)\b|"
    rf"\b{_BOUND}\s+{_MODAL}\b|"
    r"\b(?:not\s+allowed|no\s+\w+(?:\s+\w+)?\s+(?:is\s+|are\s+)?allowed|forbidden|prohibited|"
    r"mandatory|required\s+to|must\s+not|off-limits|no\s+exceptions|at\s+all\s+times|"
    r"without\s+(?:\w+\s+)?(?:approval|sign-?off|permission|consent)|rule\s*:)|"
    r"不要|禁止|必须|务必|只能|不得|一定要|不准|不许|不可以|严禁|切勿|千万别|未经.{0,8}(?:批准|同意|允许)",
)
# A member asking someone to do something, or taking it on.
_REQUEST = re.compile(
    r"^(?:(?:hey|hi|ok|okay|so|and|also)[,!]?\s+)?(?:@?[\w-]+\s*,\s*)?"
    r"(?:(?:can|could|would|will)\s+(?:you|someone|somebody|anyone)|please|pls|kindly|"
    r"would\s+you\s+mind|remind\s+me|let'?s|let\s+us)\b|"
    r"\b(?:i\s+need\s+you\s+to|i'?d\s+like\s+(?:you\s+|someone\s+)?to|i\s+would\s+like\s+(?:you\s+)?to|(?:can|could|would)\s+you\s+(?:please\s+)?\w+|"
    r"(?:someone|somebody|anyone)\s+(?:needs?\s+to|should|has\s+to|must)|"
    r"we\s+(?:need\s+to|should|have\s+to|'ll|will)|we'll|"
    r"i'll|i\s+will|i'm\s+going\s+to|i\s+am\s+going\s+to|i\s+can\s+take|i'll\s+take|"
    r"todo|to-do|action\s+item)\b|"
    r"请你|请帮|帮我|帮忙|麻烦|你能不能|能不能帮|可以帮|我来|我会|我负责",
)
# What a named person must or will do ("Grace must approve", "Bob will write …"): the name
# is told by its capital, so this one reads the sentence as written.
_NAMED = re.compile(
    rf"\b{_NAME}\s+(?:(?P<rule>{_MODAL})|will|should|needs\s+to|has\s+to|is\s+going\s+to)\s"
)


def statement_kind(sentence: str) -> FeatureKind | None:
    """ "rule", "preference", "decision" or "action" for a sentence that is one; else None."""
    if not _long_enough(sentence):
        return None
    lowered = sentence.lower()
    if _DECISION.search(lowered):
        return "decision"
    if _PREFERENCE.search(lowered):
        return "preference"
    named = None if sentence.islower() else _NAMED.search(sentence)
    if _RULE.search(lowered) or (named is not None and named["rule"] is not None):
        return "rule"
    if named is not None or _REQUEST.search(lowered):
        return "action"
    return None


def _long_enough(sentence: str) -> bool:
    if len(sentence.split()) >= MIN_WORDS:
        return True
    return not sentence.isascii() and sum(ord(ch) > 0x2E7F for ch in sentence) >= MIN_CJK_CHARS

"""The built-in offline model: no LLM, it answers by searching this chat's history (SPEC 2)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from compactbot.bot.llm.client import LLMResponse, ToolCall
from compactbot.bot.turns.tools import DEFAULT_SEARCH_LIMIT, SEARCH_HISTORY
from compactbot.compression.tokens import counter_for
from compactbot.compression.transcript import content_text, split_speaker

OFFLINE_MODEL_NAME = "offline"
MAX_ANSWER_HITS = 5
MAX_QUOTE_CHARS = 300
BANNER = "🔌 offline mode (no LLM configured)"
NO_KEYWORDS_REPLY = (
    f"{BANNER}. I can't chat, but I can look things up in this chat's history: "
    "ask me something like “what did Alice say about the release?”"
)
NO_SEARCH_REPLY = f"{BANNER}. Searching this chat's history is not available for this message."

_MENTION = re.compile(r"(?<!\w)@\w+")
_COMMAND = re.compile(r"^\s*/\w+(@\w+)?")
_WORD = re.compile(r"\w+")
# Question scaffolding and chat filler: what is left after removing them is what to search for.
_STOPWORD_TEXT = """
    a about above after again against all also am an and any anyone anything are as ask asked at
    be been before being below between both but by can could did do does doing done down during
    each else ever every few for from further get got had has have having he her here hers herself
    him himself his how i if in into is it its itself just know let lets me mention mentioned more
    most my myself no nor not now of off on once only or other our ours ourselves out over own
    please recall remember said same say saying says she should so some someone something still
    such talk talked tell than thank thanks that the their theirs them themselves then there these
    they think this those through to told too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves
    hi hey hello yo ok okay good morning evening night bot
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def question_keywords(text: str) -> str:
    """Search keywords of a question: "what did Bob say about the deploy?" -> "Bob deploy"."""
    _, body = split_speaker(text.strip())
    body = _MENTION.sub(" ", _COMMAND.sub(" ", body))
    keywords: list[str] = []
    for word in _WORD.findall(body):
        if word.isascii() and (len(word) < 2 or word.lower() in STOPWORDS):
            continue
        if word.lower() not in (k.lower() for k in keywords):
            keywords.append(word)
    return " ".join(keywords)


class OfflineModel:
    """A deterministic stand-in for an LLM that only ever searches and quotes the history."""

    model = OFFLINE_MODEL_NAME
    offline = True

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        content, calls = self._respond(messages, tools)
        counter = counter_for(None)
        prompt_tokens = counter.count_messages(messages) + counter.count_tools(tools or ())
        reply = LLMResponse(content, calls, prompt_tokens, 0, OFFLINE_MODEL_NAME)
        completion_tokens = counter.count_message(reply.as_message())
        return LLMResponse(content, calls, prompt_tokens, completion_tokens, OFFLINE_MODEL_NAME)

    def _respond(
        self, messages: Sequence[Mapping[str, Any]], tools: list[dict[str, Any]] | None
    ) -> tuple[str | None, tuple[ToolCall, ...]]:
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            result = _search_result(last.get("content"))
            return (answer_from_hits(result) if result else NO_SEARCH_REPLY), ()
        if last.get("role") != "user":
            return NO_KEYWORDS_REPLY, ()
        query = question_keywords(content_text(last.get("content")))
        if not query:
            return NO_KEYWORDS_REPLY, ()
        if not _offers(tools, SEARCH_HISTORY):
            return NO_SEARCH_REPLY, ()
        arguments = json.dumps({"query": query, "limit": DEFAULT_SEARCH_LIMIT}, ensure_ascii=False)
        # Deterministic id: the same question always yields the same request.
        call_id = "call_offline_" + hashlib.sha1(arguments.encode()).hexdigest()[:12]
        return None, (ToolCall(call_id, SEARCH_HISTORY, arguments),)


def answer_from_hits(result: Mapping[str, Any]) -> str:
    """The marked reply quoting the best hits of a search_history result."""
    if "error" in result:
        return f"{BANNER}. I could not search this chat's history: {result['error']}"
    query = str(result.get("query", "")).strip()
    hits = [h for h in result.get("hits") or () if isinstance(h, Mapping)][:MAX_ANSWER_HITS]
    if not hits:
        return f"{BANNER}. I found nothing about “{query}” in this chat's history."
    lines = [f"{BANNER} — from this chat's history:"]
    lines.extend(_quote(hit) for hit in hits)
    return "\n".join(lines)


def _quote(hit: Mapping[str, Any]) -> str:
    prefix_name, text = split_speaker(str(hit.get("text", "")))
    speaker = str(hit.get("speaker") or prefix_name or "someone")
    text = " ".join(text.split())
    if len(text) > MAX_QUOTE_CHARS:
        text = text[: MAX_QUOTE_CHARS - 1] + "…"
    date = hit.get("date")
    return f"• {speaker}, {date}: {text}" if date else f"• {speaker}: {text}"


def _search_result(content: Any) -> dict[str, Any] | None:
    try:
        result = json.loads(content_text(content))
    except (json.JSONDecodeError, TypeError):
        return None
    if isinstance(result, dict) and ("hits" in result or "error" in result):
        return result
    return None


def _offers(tools: list[dict[str, Any]] | None, name: str) -> bool:
    return any((t.get("function") or {}).get("name") == name for t in tools or ())

"""The built-in offline model: no LLM, it answers from this chat's pins, memory and history
(SPEC 2): it calls `search_history` and `recall`, and quotes what they and its context hold."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from compactbot.bot.llm.client import LLMResponse, ToolCall
from compactbot.bot.turns.search_words import COMMON_WORDS, search_terms, stem
from compactbot.bot.turns.tools import DEFAULT_SEARCH_LIMIT, RECALL, SEARCH_HISTORY
from compactbot.compression.extract import read_features, read_turn
from compactbot.compression.messages import is_summary_message
from compactbot.compression.tokens import counter_for
from compactbot.compression.transcript import content_text, split_speaker

OFFLINE_MODEL_NAME = "offline"
MAX_ANSWER_HITS = 5
# Pins, memory entries and typed lines of the context quoted beside the search hits.
MAX_ANSWER_NOTES = 5
MAX_QUOTE_CHARS = 300
BANNER = "🔌 offline mode (no LLM configured)"
NO_KEYWORDS_REPLY = (
    f"{BANNER}. I can't chat, but I can look things up in this chat's history: "
    "ask me something like “what did Alice say about the release?”"
)
NO_SEARCH_REPLY = f"{BANNER}. Searching this chat's history is not available for this message."

_MENTION = re.compile(r"(?<!\w)@\w+")
_COMMAND = re.compile(r"^\s*/\w+(@\w+)?")
# Question words (stemmed) that ask for a kind of statement: "what are our rules?".
_KIND_STEMS = {
    **dict.fromkeys(("rule", "constraint", "policy", "pin"), "rule"),
    **dict.fromkeys(("preference", "prefer"), "preference"),
    **dict.fromkeys(("decision", "decide"), "decision"),
    **dict.fromkeys(("todo", "task", "action"), "action"),
}
# The same in Chinese, found inside a question's run of characters ("我们的规则是什么").
_KIND_WORDS_CJK = {
    **dict.fromkeys(("规则", "规定", "约束", "置顶"), "rule"),
    **dict.fromkeys(("偏好", "喜好"), "preference"),
    **dict.fromkeys(("决定", "决策"), "decision"),
    **dict.fromkeys(("待办", "任务"), "action"),
}


def question_keywords(text: str) -> str:
    """Search keywords of a question: "what did Bob say about the deploy?" -> "Bob deploy"."""
    _, body = split_speaker(text.strip())
    body = _MENTION.sub(" ", _COMMAND.sub(" ", body))
    return " ".join(t for t in search_terms(body) if t.lower() not in COMMON_WORDS)


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
            results = _trailing_results(messages)
            if not results:
                return NO_SEARCH_REPLY, ()
            return answer_from_results(results, _typed_lines(messages)), ()
        if last.get("role") != "user":
            return NO_KEYWORDS_REPLY, ()
        query = question_keywords(content_text(last.get("content")))
        if not query:
            return NO_KEYWORDS_REPLY, ()
        if not _offers(tools, SEARCH_HISTORY):
            return NO_SEARCH_REPLY, ()
        calls = [_call(SEARCH_HISTORY, {"query": query, "limit": DEFAULT_SEARCH_LIMIT})]
        if _offers(tools, RECALL):
            calls.append(_call(RECALL, {"query": query}))
        return None, tuple(calls)


def _call(name: str, arguments: Mapping[str, Any]) -> ToolCall:
    text = json.dumps(arguments, ensure_ascii=False)
    # Deterministic id: the same question always yields the same request.
    call_id = "call_offline_" + hashlib.sha1(f"{name}{text}".encode()).hexdigest()[:12]
    return ToolCall(call_id, name, text)


def answer_from_hits(result: Mapping[str, Any]) -> str:
    """The marked reply quoting the best hits of a search_history result."""
    return answer_from_results([result], [])


def answer_from_results(results: Sequence[Mapping[str, Any]], typed: Sequence[str]) -> str:
    """The marked reply: pins and memory entries (recall), the context's lines of the kind
    asked for, then the best search hits; each said once."""
    errors = [str(r["error"]) for r in results if "error" in r]
    query = next((str(r.get("query", "")).strip() for r in results if r.get("query")), "")
    notes = [
        f"• pinned: {' '.join(str(pin).split())}" for r in results for pin in r.get("pins") or ()
    ]
    notes += [_quote(e) for r in results for e in r.get("entries") or () if isinstance(e, Mapping)]
    notes += typed
    hits = [h for r in results for h in r.get("hits") or () if isinstance(h, Mapping)]
    lines = _distinct([*notes[:MAX_ANSWER_NOTES], *map(_quote, hits[:MAX_ANSWER_HITS])])
    if not lines:
        if errors:
            return f"{BANNER}. I could not search this chat's history: {errors[0]}"
        return f"{BANNER}. I found nothing about “{query}” in this chat's history."
    return "\n".join([f"{BANNER} — from this chat's history:", *lines])


def _distinct(lines: list[str]) -> list[str]:
    """Each statement once, whoever quoted it (a pin and the message that stated it)."""
    seen: set[str] = set()
    kept: list[str] = []
    for line in lines:
        key = "".join(ch for ch in line.rsplit(": ", 1)[-1].lower() if ch.isalnum())
        if key not in seen:
            seen.add(key)
            kept.append(line)
    return kept


def _typed_lines(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Members' lines in the context whose kind the question asks for ("our rules": rules),
    typed as the compressor types them; the bot's lines and commands never count."""
    asked = _asked_kinds(messages)
    if not asked:
        return []
    found: list[str] = []
    for message in messages:
        if message.get("role") != "user" or is_summary_message(message):
            continue
        name = read_turn(message)[1]
        for candidate in read_features(message).candidates:
            if candidate.kind in asked:
                found.append(f"• {name or 'someone'}: {candidate.text}")
    return found[::-1]  # the newest first


def _asked_kinds(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    question = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    if question is None:
        return set()
    words = question_keywords(content_text(question.get("content"))).split()
    kinds = {_KIND_STEMS[s] for s in map(stem, words) if s in _KIND_STEMS}
    text = "".join(w for w in words if not w.isascii())
    return kinds | {kind for word, kind in _KIND_WORDS_CJK.items() if word in text}


def _trailing_results(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The results of the tool calls that answer the question, oldest first."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        result = _search_result(message.get("content"))
        if result is not None:
            results.append(result)
    return results[::-1]


def _quote(hit: Mapping[str, Any]) -> str:
    """A search hit or a memory entry as "• speaker, date: text"."""
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
    if isinstance(result, dict) and ("hits" in result or "entries" in result or "error" in result):
        return result
    return None


def _offers(tools: list[dict[str, Any]] | None, name: str) -> bool:
    return any((t.get("function") or {}).get("name") == name for t in tools or ())

"""The system prompt: persona, language, pins and tools, byte-stable within a session."""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_PERSONA = (
    "You are compactbot, a helpful assistant in a group chat. Be concise and friendly; "
    "answer the newest message addressed to you."
)
GROUP_CONVENTIONS = (
    "Messages from people start with the speaker's name in brackets, e.g. [Alice]. Several "
    "people talk at once; keep track of who said what and address people by name. Earlier "
    "conversation may have been compacted into a reference summary; when you need an exact "
    "detail from before it, call search_history instead of guessing."
)
TOOLS_NOTE = (
    "Tools: search_history(query) searches everything ever said in this chat, including "
    "compacted history; remember(fact) pins a rule or value the chat asked you to keep; "
    "chat_stats() reports the chat's size."
)


def build_system_prompt(
    *,
    persona: str | None,
    language: str | None,
    pins: Sequence[str],
    tools_enabled: bool = True,
    chat_instructions: str | None = None,
) -> str:
    """Assemble the prompt from stable inputs only (no clocks, no counters), so it caches.

    `chat_instructions` (a chat's /config system_prompt) add to the operator's persona; they
    never replace it, so the operator's rules hold in every chat.
    """
    parts = [persona.strip() if persona and persona.strip() else DEFAULT_PERSONA]
    if chat_instructions and chat_instructions.strip():
        parts.append(f"This chat's own instructions:\n{chat_instructions.strip()}")
    parts.append(GROUP_CONVENTIONS)
    if language:
        parts.append(f"Reply in {language} unless someone asks for another language.")
    if tools_enabled:
        parts.append(TOOLS_NOTE)
    if pins:
        pinned = "\n".join(f"{i}. {text}" for i, text in enumerate(pins, 1))
        parts.append(f"Pinned facts for this chat (always true until unpinned):\n{pinned}")
    return "\n\n".join(parts)

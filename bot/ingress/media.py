"""Photos and documents that come with messages: placeholders at once, then what they hold.

A message with media is stored at once with a short placeholder per file (nothing is fetched
before the message is safe in the store). In the chat's lane, before any answer, each file is
read within the operator's size limit: a text-like document becomes part of the message's text
(searchable, summarised like any text); an image, when `model.vision` is on, goes to the model as
an image part, and a one-line description of it is kept as text so it survives compaction.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Protocol, runtime_checkable

from compactbot.bot.events import Attachment
from compactbot.bot.llm.client import LLMClient
from compactbot.bot.llm.errors import LLMError

log = logging.getLogger(__name__)

TEXT_EXTENSIONS = frozenset(
    {
        ".txt", ".md", ".markdown", ".csv", ".tsv", ".json", ".jsonl", ".yaml", ".yml", ".toml",
        ".ini", ".cfg", ".log", ".xml", ".html", ".css", ".sql", ".sh", ".py", ".js", ".ts",
        ".tsx", ".jsx", ".java", ".kt", ".go", ".rs", ".c", ".h", ".cpp", ".hpp", ".cs", ".rb",
        ".php", ".swift", ".scala", ".lua", ".r", ".m", ".pl", ".diff", ".patch",
    }
)  # fmt: skip
TEXT_MIME_PREFIXES = ("text/",)
TEXT_MIME_TYPES = frozenset({"application/json", "application/xml", "application/x-yaml"})
IMAGE_DESCRIPTION_PROMPT = (
    "Describe this image in one or two sentences for a chat log: what it shows, and any text "
    "or numbers visible in it. Reply with the description only."
)
DESCRIPTION_MAX_CHARS = 400
DEFAULT_IMAGE_MIME = "image/jpeg"


class MediaError(Exception):
    """A file could not be fetched from the platform."""


@runtime_checkable
class MediaSource(Protocol):
    """An adapter that can fetch the files its messages carry."""

    async def download(self, attachment: Attachment, max_bytes: int) -> bytes:
        """The file's bytes; MediaError when it cannot be had or exceeds `max_bytes`."""
        ...


@dataclass(frozen=True, slots=True)
class MediaLimits:
    vision: bool
    max_file_bytes: int
    max_document_chars: int


@dataclass(frozen=True, slots=True)
class ReadMedia:
    """What the files of one message became: notes for its text, image parts for the model."""

    notes: tuple[str, ...]
    image_parts: tuple[dict[str, Any], ...] = ()


def placeholder(attachment: Attachment) -> str:
    """The note a file gets before it is read (and keeps when it cannot be)."""
    if attachment.kind == "image":
        return f"[image: {attachment.name}]" if attachment.name else "[image]"
    return f"[document: {attachment.name or 'file'}]"


def is_text_document(attachment: Attachment) -> bool:
    mime = (attachment.mime_type or "").lower()
    if mime.startswith(TEXT_MIME_PREFIXES) or mime in TEXT_MIME_TYPES:
        return True
    return PurePosixPath(attachment.name or "").suffix.lower() in TEXT_EXTENSIONS


def with_media(text: str, notes: tuple[str, ...], image_parts: tuple[dict[str, Any], ...]) -> Any:
    """Stored content: the text with its notes, plus image parts when there are any."""
    full = "\n".join([text, *notes]) if notes else text
    if not image_parts:
        return full
    return [{"type": "text", "text": full}, *image_parts]


async def read_media(
    attachments: tuple[Attachment, ...],
    source: object,
    llm: LLMClient,
    limits: MediaLimits,
) -> ReadMedia:
    """Read each file within the limits; whatever cannot be read keeps its placeholder."""
    notes: list[str] = []
    parts: list[dict[str, Any]] = []
    for attachment in attachments:
        note, part = await _read_one(attachment, source, llm, limits)
        notes.append(note)
        if part is not None:
            parts.append(part)
    return ReadMedia(tuple(notes), tuple(parts))


async def _read_one(
    attachment: Attachment,
    source: object,
    llm: LLMClient,
    limits: MediaLimits,
) -> tuple[str, dict[str, Any] | None]:
    wanted = attachment.kind == "image" and limits.vision and not llm.offline
    wanted = wanted or (attachment.kind == "document" and is_text_document(attachment))
    if not wanted or not isinstance(source, MediaSource):
        return placeholder(attachment), None
    size = attachment.size_bytes
    if size is not None and size > limits.max_file_bytes:
        return f"{placeholder(attachment)} (not read: {_kib(size)} is over the limit)", None
    try:
        data = await source.download(attachment, limits.max_file_bytes)
    except MediaError as exc:
        log.warning("media: %s not fetched: %s", attachment.kind, exc)
        return placeholder(attachment), None
    if len(data) > limits.max_file_bytes:  # the platform under-reported the size
        return f"{placeholder(attachment)} (not read: {_kib(len(data))} is over the limit)", None
    if attachment.kind == "document":
        return _document_note(attachment, data, limits.max_document_chars), None
    part = _image_part(attachment, data)
    description = await _describe(llm, part)
    note = f"[image: {description}]" if description else placeholder(attachment)
    return note, part


def _document_note(attachment: Attachment, data: bytes, max_chars: int) -> str:
    text = data.decode("utf-8", errors="replace")
    clipped = text if len(text) <= max_chars else text[:max_chars] + "\n… (cut)"
    return f"{placeholder(attachment)}\n{clipped}"


def _image_part(attachment: Attachment, data: bytes) -> dict[str, Any]:
    mime = attachment.mime_type or DEFAULT_IMAGE_MIME
    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}


async def _describe(llm: LLMClient, part: dict[str, Any]) -> str | None:
    request = [
        {"role": "user", "content": [{"type": "text", "text": IMAGE_DESCRIPTION_PROMPT}, part]}
    ]
    try:
        response = await llm.complete(request)
    except LLMError as exc:
        log.warning("media: image description failed: %s", type(exc).__name__)
        return None
    text = " ".join((response.content or "").split())
    return text[:DESCRIPTION_MAX_CHARS] or None


def _kib(size: int) -> str:
    return f"{size / 1024:.0f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"

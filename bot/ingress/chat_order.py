"""Per-chat mutual exclusion for the ingress: one chat's updates pass the chain one at a time."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


class ChatOrder:
    """Per-chat mutual exclusion for the ingress, so concurrent callers cannot interleave one
    chat's updates between a command's commit and its effect. Idle chats hold no lock object."""

    def __init__(self) -> None:
        # Per chat in use: its lock and how many callers hold or wait for it.
        self._chats: dict[str, _ChatLock] = {}

    @property
    def chats_in_use(self) -> int:
        return len(self._chats)

    def holding(self, chat_key: str) -> _Holding:
        return _Holding(self._chats, chat_key)


@dataclass(slots=True)
class _ChatLock:
    lock: asyncio.Lock
    users: int = 0


class _Holding:
    """`async with`: the chat's lock (FIFO: updates keep their arrival order); a class, not a
    generator, since it is entered once per inbound update."""

    __slots__ = ("_chats", "_held", "_key")

    def __init__(self, chats: dict[str, _ChatLock], key: str) -> None:
        self._chats = chats
        self._key = key
        self._held = False

    async def __aenter__(self) -> None:
        chat = self._chats.get(self._key)
        if chat is None:
            chat = self._chats[self._key] = _ChatLock(asyncio.Lock())
        chat.users += 1
        try:
            await chat.lock.acquire()
            self._held = True
        except BaseException:
            self._release()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._release()

    def _release(self) -> None:
        chat = self._chats[self._key]
        if self._held:
            chat.lock.release()
        chat.users -= 1
        if not chat.users:
            del self._chats[self._key]

"""Per-chat mutual exclusion for the ingress: one chat's updates pass the chain one at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
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

    def holding(self, chat_keys: Iterable[str]) -> _Holding:
        # Sorted, so two batches that share chats always take their locks in the same order.
        return _Holding(self._chats, sorted(set(chat_keys)))


@dataclass(slots=True)
class _ChatLock:
    lock: asyncio.Lock
    users: int = 0


class _Holding:
    """`async with`: every key's lock, taken in order; a class, not a generator, since it is
    entered once per inbound update."""

    __slots__ = ("_chats", "_held", "_keys")

    def __init__(self, chats: dict[str, _ChatLock], keys: list[str]) -> None:
        self._chats = chats
        self._keys = keys
        self._held: list[_ChatLock] = []

    async def __aenter__(self) -> None:
        chats = self._chats
        wanted = []
        for key in self._keys:
            chat = chats.get(key)
            if chat is None:
                chat = chats[key] = _ChatLock(asyncio.Lock())
            chat.users += 1
            wanted.append(chat)
        try:
            for chat in wanted:
                await chat.lock.acquire()
                self._held.append(chat)
        except BaseException:
            self._release()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._release()

    def _release(self) -> None:
        for chat in self._held:
            chat.lock.release()
        for key in self._keys:
            chat = self._chats[key]
            chat.users -= 1
            if not chat.users:
                del self._chats[key]

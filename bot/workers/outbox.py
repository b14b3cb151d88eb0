"""Delivering the reply outbox: claim, mark sending as the request leaves, record the outcome.

Any worker delivers any chat's pending rows, oldest first per chat. A row is marked `sending`
(committed) only once its request is through client-side pacing (bot/workers/wire.py), so a claimed
row still waiting in a rate limiter when its worker dies is simply sent by another; so is one whose
only request so far was refused with a flood wait (it goes back to `claimed` for the wait). A row
its sender left `sending` may already be in the chat: it is marked unknown, logged once and counted,
and never sent again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from compactbot.bot.events import Adapter, DeliveryError, IdempotentSender, ReplyTarget
from compactbot.bot.operators.metrics import Metrics
from compactbot.bot.store.postgres.queue.outbox import OutboxRow, PostgresOutbox
from compactbot.bot.workers.wire import WIRE, MarksTheWire

log = logging.getLogger(__name__)

# A send, with the adapter's own retries and flood-control waits, finishes well within this
# many turn leases (the workers' one setting for how soon a dead worker's work is taken over).
SEND_LEASE_TURN_LEASES = 3
# On shutdown, a send already begun gets this long to finish and record its outcome.
STOP_DRAIN_SECONDS = 10.0
# How long Discord remembers a nonce is "a few minutes"; a resend waits out the lease first.
NONCE_WINDOW_SECONDS = 180.0
BATCH = 32


class OutboxSender:
    def __init__(
        self,
        outbox: PostgresOutbox,
        adapters: Mapping[str, Adapter],
        metrics: Metrics,
        holder: str,
        *,
        lease_seconds: float,
    ) -> None:
        self._outbox = outbox
        self._adapters = adapters
        self._metrics = metrics
        self._holder = holder
        self._lease_seconds = lease_seconds
        self._stopping = False

    async def run(self, wake: asyncio.Event) -> None:
        """Deliver whenever woken, until `stop`."""
        while not self._stopping:
            await wake.wait()
            wake.clear()
            if self._stopping:
                return
            try:
                await self.deliver()
            except Exception:
                log.exception("outbox delivery failed; trying again on the next wake-up")

    def stop(self) -> None:
        """Claim nothing more; what is being sent still gets its outcome recorded."""
        self._stopping = True

    async def deliver(self) -> int:
        """Send everything deliverable now; how many rows were sent."""
        resend = [p for p, a in self._adapters.items() if isinstance(a, IdempotentSender)]
        for row in await self._outbox.abandon_stale(resend, NONCE_WINDOW_SECONDS):
            if not row.attempted:
                log.info("reply %d to %s: its sender died before sending it", row.id, row.chat_key)
                continue
            if row.resent:
                log.info(
                    "reply %d to %s: its sender died; sent again, same nonce", row.id, row.chat_key
                )
                continue
            log.warning(
                "reply %d to %s may or may not have been delivered (its sender died mid-send);"
                " not sending it again",
                row.id,
                row.chat_key,
            )
            self._metrics.send_unknown(row.platform)
        sent = 0
        platforms = list(self._adapters)
        while not self._stopping and (
            rows := await self._outbox.claim(self._holder, BATCH, self._lease_seconds, platforms)
        ):
            # At most one row per chat is claimed at a time, so chats are sent concurrently.
            outcomes = await asyncio.gather(*(self._send(row) for row in rows))
            sent += sum(outcomes)
        return sent

    async def _send(self, row: OutboxRow) -> bool:
        adapter = self._adapters[row.platform]
        target = ReplyTarget(**row.target)
        wire = _RowWire(self._outbox, row.id, self._holder)
        token = WIRE.set(wire)
        try:
            if not isinstance(adapter, MarksTheWire):
                await wire.leaving()
            if isinstance(adapter, IdempotentSender):
                await adapter.send_once(target, row.text, row.nonce)
            else:
                await adapter.send(target, row.text)
        except _RowLost:
            log.warning("reply %d to %s: claimed by another worker; not sent", row.id, row.chat_key)
            return False
        except DeliveryError:
            log.error("reply could not be delivered (chat=%s)", row.chat_key)
            self._metrics.send_failed(row.platform)
            await self._outbox.settle(row.id, self._holder, "failed")
            return False
        except Exception:
            if not wire.left:  # nothing reached the platform: a known failure, not an unknown send
                log.exception("reply %d to %s failed before sending", row.id, row.chat_key)
                self._metrics.send_failed(row.platform)
                await self._outbox.settle(row.id, self._holder, "failed")
                return False
            # It may have reached the chat before the error: the same rule as a dead sender.
            log.exception("reply %d to %s: outcome unknown, not resent", row.id, row.chat_key)
            self._metrics.send_unknown(row.platform)
            await self._outbox.settle(row.id, self._holder, "unknown")
            return False
        finally:
            WIRE.reset(token)
        await self._outbox.settle(row.id, self._holder, "sent")
        return True


class _RowLost(Exception):
    """Our claim on an outbox row expired and another worker took it over."""


class _RowWire:
    """One row's requests: `sending` is committed as the first leaves, and taken back when the
    platform refused it unread while none of the row's requests had arrived yet."""

    def __init__(self, outbox: PostgresOutbox, row_id: int, holder: str) -> None:
        self._outbox = outbox
        self._row_id = row_id
        self._holder = holder
        self.left = False
        self._arrived = False

    async def leaving(self) -> None:
        if self.left:
            return
        if not await self._outbox.mark_sending(self._row_id, self._holder):
            raise _RowLost(self._row_id)
        self.left = True

    async def arrived(self) -> None:
        self._arrived = True

    async def refused(self) -> None:
        if self.left and not self._arrived:
            self.left = not await self._outbox.unmark_sending(self._row_id, self._holder)

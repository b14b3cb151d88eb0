"""Edits never starve a compaction (SPEC 17): an edit made while it runs is applied after it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from compactbot.bot.compaction.session_compactor import SessionCompactor, UsageSink
from compactbot.bot.store import NewMessage
from compactbot.bot.store.backends import Store
from compactbot.compression import CompressorConfig, Summarizer, SummaryRequest
from compactbot.compression.deterministic import deterministic_summary
from compactbot.compression.tokens import counter_for
from tests.store.conftest import ManualClock
from tests.store.factories import user

CHAT = "telegram:-100"
SETTINGS = CompressorConfig(context_length=8_000, protect_last_n=5)
ROUNDS = 5


@dataclass
class EditingSummarizer:
    """While each summary is written, a member edits two messages the compaction read,
    one edit a second: one of them is summarised, the other is kept in the tail."""

    store: Store
    clock: ManualClock
    targets: list[str] = field(default_factory=list)  # platform ids, [middle, tail]
    edits: int = 0

    async def summarize(self, request: SummaryRequest) -> str:
        for platform_id in self.targets:
            self.edits += 1
            self.clock.advance(1.0)
            text = f"[alice] edit {self.edits} of {platform_id}"
            assert await self.store.edit_platform_message(CHAT, platform_id, text, 6)
        return deterministic_summary(request, unavailable=False)

    def factory(self, _usage: UsageSink) -> Summarizer:
        return self


def posted(text: str, platform_id: str) -> NewMessage:
    return replace(user(text, 200), platform_message_id=platform_id)


async def test_a_compaction_completes_under_an_edit_a_second_and_keeps_every_edit(
    store: Store, clock: ManualClock
) -> None:
    summarizer = EditingSummarizer(store, clock)
    compactor = SessionCompactor(store, counter_for(None), summarizer.factory, clock=clock)
    session = await store.active_session(CHAT)
    for round_no in range(ROUNDS):
        middle, tail = f"{round_no}-first", f"{round_no}-last"
        chatter = [user(f"round {round_no} note {i}", 200) for i in range(30)]
        await store.append_messages(
            session.id,
            [*chatter[:10], posted("first", middle), *chatter[10:], posted("last", tail)],
        )
        summarizer.targets = [middle, tail]

        report = await compactor.compact(
            session.id, trigger="manual", settings=SETTINGS, system_prompt="You are a bot."
        )

        assert report.outcome == "compressed", report
        kept = await store.find_platform_message(CHAT, tail)
        summarised = await store.find_platform_message(CHAT, middle)
        assert kept is not None and kept.active
        assert kept.content == f"[alice] edit {summarizer.edits} of {tail}"
        assert summarised is not None and not summarised.active
        assert summarised.content == f"[alice] edit {summarizer.edits - 1} of {middle}"
        assert await store.message_revisions(summarised.id) == ["[alice] first"]
    assert summarizer.edits == 2 * ROUNDS
    current = await store.get_session(session.id)
    assert (current.active_tokens, current.active_messages) == await store.recount(session.id)

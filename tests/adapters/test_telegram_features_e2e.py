"""What members expect beyond plain answers, end to end on Telegram: reply context, media, edits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.adapters.telegram_rig import GROUP_KEY, Running, serving
from tests.fakes.fixtures import fake_telegram  # noqa: F401  (pytest fixture)
from tests.fakes.telegram_server import FakeTelegram

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

FILLER_MESSAGES = 40


@pytest.fixture
async def bot(tmp_path: Path, fake_telegram: FakeTelegram) -> AsyncIterator[Running]:  # noqa: F811
    async with serving(tmp_path, fake_telegram) as running:
        yield running


async def _compact_everything(bot: Running) -> None:
    services = bot.app.services
    session = await services.store.active_session(GROUP_KEY)
    settings = services.compaction_settings(await services.settings_for(GROUP_KEY))
    report = await services.compactor.compact(
        session.id,
        trigger="manual",
        settings=settings,
        system_prompt=await services.system_prompt_for(GROUP_KEY),
        force=True,
    )
    assert report.changed


async def test_reply_to_a_compacted_message_quotes_the_original(bot: Running) -> None:
    tg = bot.tg
    for i in range(5):  # the opening messages are kept verbatim until the first compaction
        tg.push_update(tg.group_message(f"hello {i}"))
    original = tg.group_message("the launch codename is BLUEFIN", first_name="Bob", user_id=2)
    tg.push_update(original)
    for i in range(FILLER_MESSAGES):
        tg.push_update(tg.group_message(f"chatter {i} about lunch"))
    await bot.stored(f"chatter {FILLER_MESSAGES - 1}")
    await _compact_everything(bot)
    row = await bot.app.services.store.find_platform_message(
        GROUP_KEY, str(original["message"]["message_id"])
    )
    assert row is not None and not row.active  # compacted away, only in the archive

    # Telegram's copy of the replied-to message is left without text: the archive must answer.
    replied = {k: v for k, v in original["message"].items() if k != "text" and k != "entities"}
    tg.push_update(tg.group_message("what was that again?", mention_bot=True, reply_to=replied))
    await bot.answered()
    assert bot.llm is not None
    last = bot.llm.completions[-1]["messages"][-1]["content"]
    assert last == (
        '[Alice] (in reply to Bob: "the launch codename is BLUEFIN")'
        " @compact_bot what was that again?"
    )


async def test_edited_message_shows_its_new_text_in_history(bot: Running) -> None:
    tg = bot.tg
    update = tg.group_message("we meet at 10:00", first_name="Bob", user_id=2)
    tg.push_update(update)
    await bot.stored("we meet at 10:00")
    edited = {**update["message"], "text": "we meet at 11:30", "edit_date": 1_700_000_000}
    tg.push_update({"update_id": tg.next_update_id(), "edited_message": edited})
    await bot.stored("we meet at 11:30")

    store = bot.app.services.store
    live = [row.text for row in await store.load_history(GROUP_KEY, include_archived=False)]
    assert "[Bob] we meet at 11:30" in live
    assert not any("10:00" in text for text in live)
    row = await store.find_platform_message(GROUP_KEY, str(update["message"]["message_id"]))
    assert row is not None
    assert await store.message_revisions(row.id) == ["[Bob] we meet at 10:00"]  # old text kept

"""/summary end to end through the gateway: offline (deterministic) and with a summary model."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from compactbot.adapters.telegram_html import markdown_to_telegram_html
from compactbot.bot.app import App
from compactbot.bot.commands.quoting import code_span
from tests.fakes.openai_server import Behaviour, FakeOpenAI, Reply
from tests.harness import RecordingAdapter, endpoint_env, group_message, make_config, running_app

CHAT = "test:g1"
PEOPLE = ["Alice", "Bob", "Dave", "Erin"]
WORDS = ["deploy", "lunch", "tests", "coffee", "design", "docs", "ok", "weather"]
DECISION = "Decision: we will use Postgres for the billing service."
ACTION = "Bob will write the migration plan by Friday."
MODEL_DIGEST = (
    "## Decisions\n- Postgres for billing (Alice)\n## Action items\n- Bob: migration plan"
)


async def _feed(app: App, adapter: RecordingAdapter) -> None:
    """300 group messages; Carol speaks early, the decision and action item come after."""
    rng = random.Random(7)
    for i in range(300):
        if i == 10:
            author, text = "Carol", "I'm off for the afternoon, see you"
        elif i == 150:
            author, text = "Alice", DECISION
        elif i == 220:
            author, text = "Bob", ACTION
        else:
            author = PEOPLE[i % len(PEOPLE)]
            text = f"message {i}: " + " ".join(rng.choice(WORDS) for _ in range(12))
        await app.gateway.handle(group_message(text, author=author, addressed=False), adapter)
    # Background hygiene may compact the chatter; /summary must be judged after it settled.
    await app.gateway.join()


async def _snapshot(app: App) -> tuple[Any, ...]:
    store = app.services.store
    session = await store.active_session(CHAT)
    active = [(m.id, m.text) for m in await store.load_active(session.id)]
    events = await store.list_compression_events(chat_key=CHAT)
    return (session, active, len(events))


async def _ask(app: App, adapter: RecordingAdapter, text: str = "/summary") -> str:
    await app.gateway.handle(group_message(text, author="Carol"), adapter)
    await app.gateway.join()
    return adapter.texts()[-1]


async def test_offline_summary_names_decisions_and_action_items_and_changes_nothing(
    tmp_path: Path,
) -> None:
    adapter = RecordingAdapter()
    async with running_app(make_config(tmp_path)) as app:
        await _feed(app, adapter)
        before = await _snapshot(app)
        reply = await _ask(app, adapter)
        assert reply.startswith("🧾 What you missed since your last message (289 messages)")
        assert "Postgres for the billing service" in reply
        assert "migration plan by Friday" in reply
        assert "I'm off for the afternoon" not in reply  # the asker's own message is not news
        assert await _snapshot(app) == before


async def test_summary_model_gets_the_span_and_its_digest_is_returned(tmp_path: Path) -> None:
    def respond(body: dict[str, Any]) -> Behaviour:
        return Reply(MODEL_DIGEST)

    adapter = RecordingAdapter()
    async with (
        FakeOpenAI(respond) as llm,
        running_app(make_config(tmp_path, endpoint_env(llm.base_url))) as app,
    ):
        await _feed(app, adapter)
        before = await _snapshot(app)
        reply = await _ask(app, adapter, "/catchup billing")
        assert MODEL_DIGEST in reply
        assert "about `billing`" in reply
        prompt = str(llm.completions[-1]["messages"])
        assert DECISION in prompt and ACTION in prompt
        assert "billing" in prompt  # the topic is the focus
        assert await _snapshot(app) == before
        usage = await app.services.store.usage(CHAT, "2000-01-01")
        assert any(row.user_id == "carol" and row.prompt_tokens for row in usage)


async def test_summary_is_rate_limited_per_member(tmp_path: Path) -> None:
    adapter = RecordingAdapter()
    async with running_app(make_config(tmp_path)) as app:
        await _feed(app, adapter)
        first = await _ask(app, adapter, "/summary 2h")
        assert first.startswith("🧾 What you missed in the last 2h")
        assert "One /summary a minute" in await _ask(app, adapter)
        await app.gateway.handle(group_message("/summary @Bob", author="Dave"), adapter)
        await asyncio.wait_for(app.gateway.join(), 5)
        other = adapter.texts()[-1]
        assert other.startswith("🧾 What you missed from `Bob`")
        assert "migration plan" in other


async def test_offline_digest_never_lists_the_bots_lines_or_commands_as_facts_or_the_ask(
    tmp_path: Path,
) -> None:
    adapter = RecordingAdapter(admins={"alice"})
    async with running_app(make_config(tmp_path)) as app:
        say = [
            ("Dave", "hello all", False),
            ("Bob", "The invoice total is $4,210 for the venue.", False),
            ("Erin", "what did Bob say about the invoice?", True),  # the offline bot quotes Bob
            ("Alice", "/pin Never share the wifi password", True),
        ]
        for author, text, addressed in say:
            await app.gateway.handle(
                group_message(text, author=author, addressed=addressed), adapter
            )
            await app.gateway.join()
        assert any("offline mode" in text for text in adapter.texts())
        reply = await _ask(app, adapter)
    facts = reply.split("## Key facts and exact values", 1)[1].split("\n## ", 1)[0]
    assert "$4,210" in facts
    assert "offline mode" not in reply and "•" not in reply  # none of the bot's lines
    ask = reply.split("## Latest ask", 1)[1].split("\n## ", 1)[0]
    assert "/pin" not in ask and "what did Bob say about the invoice?" in ask


async def test_a_topic_a_member_typed_is_echoed_as_text_never_as_a_link(tmp_path: Path) -> None:
    adapter = RecordingAdapter()
    async with running_app(make_config(tmp_path)) as app:
        await _feed(app, adapter)
        reply = await _ask(app, adapter, "/summary [click me](https://evil.example) **now**")
    assert "about `[click me](https://evil.example) **now**`" in reply
    # As Telegram shows it: the member's link and bold are literal text inside <code>.
    html = markdown_to_telegram_html(reply.splitlines()[0])
    assert "<a " not in html and "<b>" not in html
    assert "<code>[click me](https://evil.example) **now**</code>" in html


def test_a_code_span_holds_backticks_a_member_typed() -> None:
    assert code_span("a `b` c") == "``a `b` c``"
    assert code_span("`x`") == "`` `x` ``"
    assert markdown_to_telegram_html(code_span("`[x](https://e.example)`")) == (
        "<code>`[x](https://e.example)`</code>"
    )

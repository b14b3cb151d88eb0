"""Offline (no LLM), "what are our rules?" through the gateway finds a stated rule and a pin."""

from __future__ import annotations

from pathlib import Path

from tests.harness import RecordingAdapter, group_message, make_config, running_app


async def test_offline_our_rules_answers_with_the_stated_rule_and_the_pin(tmp_path: Path) -> None:
    adapter = RecordingAdapter(admins={"alice"})
    async with running_app(make_config(tmp_path)) as app:
        for author, text, addressed in (
            ("Dave", "Nobody deploys on Fridays, no exceptions.", False),
            ("Erin", "lunch at noon?", False),
            ("Alice", "/pin Never share the wifi password", True),
            ("Bob", "what are our rules?", True),
        ):
            await app.gateway.handle(
                group_message(text, author=author, addressed=addressed), adapter
            )
            await app.gateway.join()
        answer = adapter.texts()[-1]
    assert answer.startswith("🔌 offline mode"), answer
    assert "I found nothing" not in answer
    assert "Never share the wifi password" in answer
    assert "Nobody deploys on Fridays, no exceptions." in answer
    assert "lunch" not in answer

from __future__ import annotations

from pathlib import Path

from compactbot.bot.settings.dotenv import read_dotenv


def test_dotenv_reads_pairs_quotes_and_skips_comments(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text(
        "# comment\nTELEGRAM_BOT_TOKEN=123:abc\nexport OPENAI_BASE_URL='http://x/v1'\n"
        'COMPACTBOT_MODEL="gpt-4o"\nEMPTY=\nnot a pair\n'
    )
    assert read_dotenv(path) == {
        "TELEGRAM_BOT_TOKEN": "123:abc",
        "OPENAI_BASE_URL": "http://x/v1",
        "COMPACTBOT_MODEL": "gpt-4o",
        "EMPTY": "",
    }


def test_missing_dotenv_is_empty(tmp_path: Path) -> None:
    assert read_dotenv(tmp_path / "nope") == {}

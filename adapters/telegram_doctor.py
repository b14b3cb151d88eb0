"""Doctor checks of Telegram: the token (getMe), privacy mode, and the webhook Telegram knows."""

from __future__ import annotations

from telegram import Bot
from telegram.error import InvalidToken, NetworkError, TelegramError

from compactbot.bot.operators.doctor_report import Finding, fix, ok, shown_url, skip
from compactbot.bot.settings.config import Config

AREA = "telegram"
DEFAULT_BASE_URL = "https://api.telegram.org/bot"  # PTB's defaults
DEFAULT_FILE_URL = "https://api.telegram.org/file/bot"


async def check_telegram(config: Config, live: bool) -> list[Finding]:
    settings = config.telegram
    if settings.token is None:
        return [skip(AREA, "TELEGRAM_BOT_TOKEN not set")]
    token = settings.token.get_secret_value()
    base_url, base_file_url = _urls(settings.api_base_url)
    bot = Bot(token, base_url=base_url, base_file_url=base_file_url)
    try:
        async with bot:
            me = await bot.get_me()
            webhook = await bot.get_webhook_info()
    except InvalidToken:
        return [fix(AREA, "the Bot API refused TELEGRAM_BOT_TOKEN: copy it again from @BotFather")]
    except NetworkError as exc:
        where = shown_url(settings.api_base_url or DEFAULT_BASE_URL)
        return [fix(AREA, f"cannot reach the Bot API at {where} ({type(exc).__name__})")]
    except TelegramError as exc:
        return [fix(AREA, f"the Bot API answered {type(exc).__name__}")]
    findings = [ok(AREA, f"token works: @{me.username} (id {me.id})")]
    if me.can_read_all_group_messages:
        findings.append(ok(AREA, "privacy mode is off: the bot sees every group message"))
    else:
        findings.append(
            fix(
                AREA,
                "privacy mode is on: in groups the bot sees only messages addressed to it, so "
                "the chat is not remembered; @BotFather → /setprivacy → Disable, then re-add "
                "the bot to its groups",
            )
        )
    findings.append(_webhook_finding(config, webhook.url, webhook.last_error_message))
    return findings


def _webhook_finding(config: Config, registered: str, last_error: str | None) -> Finding:
    wanted = config.telegram.webhook_url
    if last_error:
        return fix(AREA, f"Telegram reports a webhook delivery error: {last_error}")
    if wanted is None and registered:
        # Polling would delete it: usually another deployment is using this token.
        return fix(AREA, f"a webhook is registered ({registered}) but this bot polls")
    if wanted is not None and registered and registered != wanted:
        return fix(AREA, f"Telegram delivers to {registered}, not TELEGRAM_WEBHOOK_URL")
    if wanted is not None:
        return ok(AREA, f"webhook {'registered' if registered else 'set at start'}: {wanted}")
    return ok(AREA, "no webhook registered: the bot polls")


def _urls(api_base_url: str | None) -> tuple[str, str]:
    """PTB's base_url and base_file_url, for a self-hosted Bot API server as the adapter does."""
    if not api_base_url:
        return DEFAULT_BASE_URL, DEFAULT_FILE_URL
    base = api_base_url.rstrip("/")
    files = base.removesuffix("/bot") + "/file/bot" if base.endswith("/bot") else DEFAULT_FILE_URL
    return base, files

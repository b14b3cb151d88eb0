"""The `compactbot.jobs` entry point: the overnight job as the service and the CLI see it."""

from __future__ import annotations

from bot.chat_settings import ChatSettings
from bot.compaction_report import CompactionReport
from bot.config import Config
from bot.gateway import Gateway
from bot.plugins import Notifier
from bot.services import Services
from scheduler.job import run_overnight
from scheduler.overnight import OvernightScheduler
from scheduler.windows import next_run_text


class OvernightJob:
    name = "overnight"

    def schedule(
        self, services: Services, gateway: Gateway, notify: Notifier
    ) -> OvernightScheduler:
        return OvernightScheduler(services, gateway, notify=notify)

    async def run_now(
        self, services: Services, *, ignore_window: bool
    ) -> list[tuple[str, CompactionReport]]:
        return await run_overnight(services, ignore_window=ignore_window)

    def next_run_text(self, settings: ChatSettings, config: Config) -> str:
        return next_run_text(settings, config)


OVERNIGHT = OvernightJob()

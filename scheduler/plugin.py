"""The `compactbot.jobs` entry point: the overnight job as the service and the CLI see it."""

from __future__ import annotations

from compactbot.bot.compaction.report import CompactionReport
from compactbot.bot.ingress.gateway import Gateway
from compactbot.bot.plugins import Notifier
from compactbot.bot.services import Services
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.settings.config import Config
from compactbot.scheduler.job import run_overnight
from compactbot.scheduler.overnight import OvernightScheduler
from compactbot.scheduler.windows import next_run_text


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

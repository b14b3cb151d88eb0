"""The opt-in operator port: GET /metrics (Prometheus), /healthz (alive), /readyz (ready), and the
web console under /console when it is enabled (SPEC 18)."""

from __future__ import annotations

import logging

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from compactbot.bot.operators.health import Readiness
from compactbot.bot.operators.metrics import Metrics

log = logging.getLogger(__name__)

NOT_READY_STATUS = 503
CONSOLE_PREFIX = "/console"
SHUTDOWN_TIMEOUT_SECONDS = 1.0  # a scraper holding a connection must not delay shutdown


class OperatorPortError(OSError):
    """COMPACTBOT_METRICS_LISTEN cannot be bound (in use, no such address, no permission)."""


class OperatorEndpoint:
    """An aiohttp server on the event loop; `start()` binds, `stop()` releases the port."""

    def __init__(
        self,
        host: str,
        port: int,
        metrics: Metrics,
        readiness: Readiness,
        *,
        console: web.Application | None = None,
    ) -> None:
        self._host = host
        self._console = console
        self._port = port
        self._metrics = metrics
        self._readiness = readiness
        self._runner: web.AppRunner | None = None

    @property
    def port(self) -> int:
        """The bound port (the configured one, or the one picked for port 0)."""
        if self._runner is not None and self._runner.addresses:
            return int(self._runner.addresses[0][1])
        return self._port

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._scrape)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        if self._console is not None:
            app.add_subapp(CONSOLE_PREFIX, self._console)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_SECONDS)
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._port).start()
        except OSError as exc:
            await runner.cleanup()
            raise OperatorPortError(
                f"COMPACTBOT_METRICS_LISTEN: cannot listen on {self._host}:{self._port} "
                f"({exc.strerror or type(exc).__name__})"
            ) from exc
        self._runner = runner
        paths = "/metrics /healthz /readyz" + (" /console" if self._console is not None else "")
        log.info("operator endpoint on %s:%d (%s)", self._host, self.port, paths)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _scrape(self, request: web.Request) -> web.Response:
        return web.Response(
            body=self._metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        report = await self._readiness.check()
        if report.ready:
            return web.Response(text="ready\n")
        return web.Response(text="\n".join(report.problems) + "\n", status=NOT_READY_STATUS)

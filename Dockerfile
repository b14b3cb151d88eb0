FROM python:3.12-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    COMPACTBOT_DB=/data/compactbot.db \
    COMPACTBOT_METRICS_LISTEN=0.0.0.0:9464 \
    TIKTOKEN_CACHE_DIR=/app/.tiktoken

WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY adapters ./adapters
COPY compression ./compression
COPY scheduler ./scheduler
RUN pip install . \
    && useradd --create-home --uid 10001 compactbot \
    && mkdir -p /data /app/.tiktoken \
    && python -c "from compactbot.compression.tokens import seed_tiktoken_cache; seed_tiktoken_cache()" \
    && chown -R compactbot /data /app/.tiktoken

USER compactbot
VOLUME ["/data"]
EXPOSE 9464
# /readyz on the operator port: the store answers, the platforms are connected, queues move.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD python -c "import os, urllib.request as u; port = os.environ['COMPACTBOT_METRICS_LISTEN'].rpartition(':')[2]; u.urlopen(f'http://127.0.0.1:{port}/readyz', timeout=4)"
ENTRYPOINT ["compactbot"]
CMD ["run"]

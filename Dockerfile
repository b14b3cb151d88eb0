FROM python:3.12-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    COMPACTBOT_DB=/data/compactbot.db \
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
    && python -c "from compression.tokens import seed_tiktoken_cache; seed_tiktoken_cache()" \
    && chown -R compactbot /data /app/.tiktoken

USER compactbot
VOLUME ["/data"]
ENTRYPOINT ["compactbot"]
CMD ["run"]

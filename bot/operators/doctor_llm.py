"""Doctor checks of the model endpoint: the key, the models offered, their window, a live call."""

from __future__ import annotations

import time
from typing import Any

import openai

from compactbot.bot.app import endpoint_configured
from compactbot.bot.llm.client import context_length_of
from compactbot.bot.operators.doctor_report import Finding, fix, ok, shown_url
from compactbot.bot.settings.config import DEFAULT_CONTEXT_LENGTH, Config

REQUEST_TIMEOUT_SECONDS = 15.0
MODELS_SHOWN = 5
LIVE_PROMPT = "Reply with the single word OK."


async def check_llm(config: Config, live: bool) -> list[Finding]:
    model = config.model
    if not endpoint_configured(config):
        return [ok("llm", "no OPENAI_BASE_URL or OPENAI_API_KEY: the built-in offline model")]
    key = model.api_key.get_secret_value() if model.api_key is not None else "not-needed"
    client = openai.AsyncOpenAI(
        api_key=key, base_url=model.base_url, max_retries=0, timeout=REQUEST_TIMEOUT_SECONDS
    )
    try:
        try:
            page = await client.models.list()
            entries = [item.to_dict() for item in page.data]
        except openai.NotFoundError:
            entries = []  # some servers have no model list; the window must then be configured
        except openai.OpenAIError as exc:
            return [_refused(exc, config)]
        findings = _model_findings(config, entries)
        if live:
            findings.append(await _live_completion(client, model.name))
        return findings
    finally:
        await client.close()


def _refused(exc: openai.OpenAIError, config: Config) -> Finding:
    where = shown_url(config.model.base_url or "https://api.openai.com/v1")
    if isinstance(exc, openai.AuthenticationError):
        return fix("llm", f"{where} refused the API key (401): check OPENAI_API_KEY")
    if isinstance(exc, openai.PermissionDeniedError):
        return fix("llm", f"{where} denied access (403): check the key's project and permissions")
    if isinstance(exc, openai.APITimeoutError):
        return fix("llm", f"{where} did not answer within {REQUEST_TIMEOUT_SECONDS:.0f}s")
    if isinstance(exc, openai.APIConnectionError):
        return fix("llm", f"cannot reach {where}: check OPENAI_BASE_URL")
    status = getattr(exc, "status_code", None)
    return fix("llm", f"{where} answered the model list with {status or type(exc).__name__}")


def _model_findings(config: Config, entries: list[dict[str, Any]]) -> list[Finding]:
    model = config.model
    offered = [str(e.get("id")) for e in entries if e.get("id")]
    findings: list[Finding] = []
    for role, name in (("reply", model.name), ("summary", model.summary_model)):
        if name is None or not offered:
            continue
        if name in offered:
            findings.append(ok("llm", f"{role} model {name} is offered"))
        else:
            shown = ", ".join(offered[:MODELS_SHOWN]) + (
                ", …" if len(offered) > MODELS_SHOWN else ""
            )
            findings.append(fix("llm", f"{role} model {name} is not offered (it offers {shown})"))
    reported = next((context_length_of(e) for e in entries if e.get("id") == model.name), None)
    configured = model.context_length
    if configured and reported and configured > reported:
        findings.append(
            fix(
                "llm",
                f"COMPACTBOT_CONTEXT_LENGTH={configured:,} exceeds the window the endpoint "
                f"reports for {model.name} ({reported:,}): prompts would overflow",
            )
        )
    elif configured:
        findings.append(ok("llm", f"window {configured:,} tokens (config)"))
    elif reported:
        findings.append(ok("llm", f"window {reported:,} tokens (reported by the endpoint)"))
    else:
        findings.append(
            fix(
                "llm",
                f"the endpoint reports no window for {model.name}: set COMPACTBOT_CONTEXT_LENGTH "
                f"(else {DEFAULT_CONTEXT_LENGTH:,} is assumed)",
            )
        )
    return findings


async def _live_completion(client: openai.AsyncOpenAI, model: str) -> Finding:
    started = time.monotonic()
    try:
        await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": LIVE_PROMPT}], max_tokens=5
        )
    except openai.OpenAIError as exc:
        status = getattr(exc, "status_code", None)
        return fix("llm", f"a test completion with {model} failed ({status or type(exc).__name__})")
    return ok(
        "llm", f"a test completion with {model} answered in {time.monotonic() - started:.1f}s"
    )

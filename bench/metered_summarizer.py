"""A cost proxy for the token bench: the built-in deterministic summary, metered as an LLM call
(the input is the real summary prompt, the output that summary), so summaries have a realistic
size and price without a model."""

from __future__ import annotations

from dataclasses import dataclass, field

from compactbot.compression import SummaryRequest
from compactbot.compression.deterministic import deterministic_summary
from compactbot.compression.template import build_summary_prompt
from compactbot.compression.tokens import counter_for


@dataclass(slots=True)
class SummaryCalls:
    """What the summarizer was asked and wrote, in tokens, as an LLM would bill it."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    input_sizes: list[int] = field(default_factory=list)


class ExtractiveLLMSummarizer:
    name = "llm-sized"

    def __init__(self) -> None:
        self.calls = SummaryCalls()

    async def summarize(self, request: SummaryRequest) -> str:
        body = deterministic_summary(request, unavailable=False)
        counter = counter_for(None)
        prompt = counter.count_message({"role": "user", "content": build_summary_prompt(request)})
        self.calls.calls += 1
        self.calls.input_tokens += prompt
        self.calls.output_tokens += counter.count_text(body)
        self.calls.input_sizes.append(prompt)
        return body

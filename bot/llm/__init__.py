"""The model client: OpenAI-compatible calls, streaming, errors, and the offline model."""

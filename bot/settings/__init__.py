"""Configuration: the YAML and environment sections, their bounds, and per-chat settings."""

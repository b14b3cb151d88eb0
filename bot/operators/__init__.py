"""What operators use: the CLI, metrics, health probes, doctor and log hygiene."""

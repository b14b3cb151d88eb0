"""deploy/compose.yaml and README's "Running several workers" say what the code accepts.

Every compactbot service's command must parse with the real CLI, and its environment must be
variables the configuration reads, with values it validates; names the README section gives
must exist too. A renamed flag or variable fails here instead of in someone's deployment.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from compactbot.bot.cli import build_parser
from compactbot.bot.settings.loading import CONFIG_PATH_ENV, ENV_VARS, load_config
from compactbot.bot.store.backends import parse_store_url
from tests import postgres_server

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "deploy" / "compose.yaml"
README = REPO / "README.md"
SCALE_OUT_ROLES = ("worker", "ingress")
# Values a real deployment would give the ${…} placeholders.
SAMPLE_ENV = {
    "POSTGRES_PASSWORD": "pw",
    "TELEGRAM_BOT_TOKEN": "123456:ABCdefGhIjKlmNoPQRsTUVwxyZ123456789",
    "TELEGRAM_WEBHOOK_URL": "https://bot.example.com/telegram",
    "TELEGRAM_WEBHOOK_SECRET": "s3cret-Token_1",
    "OPENAI_API_KEY": "sk-test",
    "DISCORD_BOT_TOKEN": "discord-token",
}
_PLACEHOLDER = re.compile(r"\$\{(?P<name>[A-Z_][A-Z0-9_]*)(?::(?P<op>[-?])(?P<word>[^}]*))?\}")


def _interpolate(value: str) -> str:
    """Compose's `${NAME}`, `${NAME:-default}` and `${NAME:?error}` with SAMPLE_ENV as the shell."""

    def one(match: re.Match[str]) -> str:
        name, op, word = match["name"], match["op"], match["word"]
        if name in SAMPLE_ENV:
            return SAMPLE_ENV[name]
        assert op == "-", f"${{{name}}} is required by compose but not in SAMPLE_ENV"
        return word

    return _PLACEHOLDER.sub(one, value)


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return loaded


def _compactbot_services() -> dict[str, Mapping[str, Any]]:
    """The services built from this repository's Dockerfile."""
    services = _compose()["services"]
    return {name: spec for name, spec in services.items() if "build" in spec}


def _environment(spec: Mapping[str, Any]) -> dict[str, str]:
    return {name: _interpolate(str(value)) for name, value in spec["environment"].items()}


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def _skip_without_scale_out_roles() -> None:
    if not set(SCALE_OUT_ROLES) & _commands(build_parser()):
        pytest.skip("this build's CLI has no `compactbot worker`/`ingress` (issue 14 parts 2-3)")


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def test_compose_runs_postgres_15_an_ingress_and_two_workers_from_the_dockerfile() -> None:
    compose = _compose()
    assert compose["services"]["postgres"]["image"] == "postgres:15"
    services = _compactbot_services()
    roles = sorted(spec["command"][0] for spec in services.values())
    assert roles == ["ingress", "worker", "worker"]
    for spec in services.values():
        build = spec["build"]
        assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == (
            REPO / "Dockerfile"
        )
        assert "postgres" in spec["depends_on"]


def test_every_service_command_parses_with_the_cli() -> None:
    _skip_without_scale_out_roles()
    parser = build_parser()
    for name, spec in _compactbot_services().items():
        try:
            parser.parse_args(spec["command"])
        except SystemExit:
            pytest.fail(f"{name}: `compactbot {' '.join(spec['command'])}` is refused by the CLI")


def test_workers_share_out_the_discord_shards_between_them() -> None:
    workers = [s for s in _compactbot_services().values() if s["command"][0] == "worker"]
    shards, counts = set(), set()
    for spec in workers:
        flags = dict(zip(spec["command"][1::2], spec["command"][2::2], strict=True))
        shards.add(int(flags["--shards"]))
        counts.add(int(flags["--shard-count"]))
    assert counts == {len(workers)} and shards == set(range(len(workers)))


def test_every_service_environment_is_read_and_accepted_by_the_config() -> None:
    known = set(ENV_VARS) | {CONFIG_PATH_ENV}
    for name, spec in _compactbot_services().items():
        env = _environment(spec)
        unknown = set(env) - known
        assert not unknown, f"{name}: compactbot reads no {sorted(unknown)}"
        config = load_config(env, path=None)  # raises ConfigError naming a bad value
        assert parse_store_url(config.storage.database).backend == "postgresql"
        assert config.telegram.token is not None


def test_only_the_ingress_serves_the_webhook_and_it_publishes_the_port_it_binds() -> None:
    for name, spec in _compactbot_services().items():
        config = load_config(_environment(spec), path=None)
        if spec["command"][0] != "ingress":
            assert config.telegram.webhook_url is None, f"{name} would compete for the webhook"
            continue
        assert config.telegram.webhook_url is not None
        assert config.telegram.webhook_secret is not None
        port = config.telegram.webhook_port
        assert any(str(p).endswith(f":{port}") for p in spec["ports"])
        assert config.telegram.webhook_host == "0.0.0.0"  # reachable from outside the container


def test_readme_section_names_only_real_commands_and_variables() -> None:
    section = _section("Running several workers")
    variables = set(re.findall(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=[^`]*)?`", section))
    test_only = {postgres_server.DSN_ENV, postgres_server.REQUIRE_ENV}
    unknown = variables - set(ENV_VARS) - {CONFIG_PATH_ENV} - test_only
    assert not unknown, f"README names variables compactbot does not read: {sorted(unknown)}"
    for required in ("COMPACTBOT_DB", "TELEGRAM_WEBHOOK_URL", "TELEGRAM_WEBHOOK_SECRET"):
        assert required in variables

    _skip_without_scale_out_roles()
    named = set(re.findall(r"`compactbot ([a-z]+)", section))
    assert {"worker", "ingress", "run", "store"} <= named
    assert named <= _commands(build_parser())

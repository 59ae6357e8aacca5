"""Options in an agent spec: `name:key=value,key=value` (e.g. `claude-code:sandbox=bwrap`)."""

from __future__ import annotations

from collections.abc import Mapping

from gauntlet.errors import ConfigError

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def parse_options(agent: str, argument: str, known: Mapping[str, str]) -> dict[str, str]:
    """Split `key=value,key=value`; every key must be one of `known` (key -> description).

    Raises:
        ConfigError: A part is not `key=value` or names an unknown key.
    """
    options: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in argument.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in known:
            choices = "; ".join(f"{k}: {v}" for k, v in known.items()) or "none"
            raise ConfigError(
                f"bad option '{part}' for agent '{agent}' (expected key=value with a key of: "
                f"{choices})"
            )
        options[key] = value.strip()
    return options


def flag(agent: str, key: str, value: str) -> bool:
    """An on/off option's value.

    Raises:
        ConfigError: The value is not a yes/no word.
    """
    word = value.lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ConfigError(f"option '{key}' of agent '{agent}' must be on or off, not '{value}'")


def number(agent: str, key: str, value: str) -> float:
    """A numeric option's value.

    Raises:
        ConfigError: The value is not a positive number.
    """
    try:
        parsed = float(value)
    except ValueError:
        parsed = -1.0
    if parsed <= 0:
        raise ConfigError(
            f"option '{key}' of agent '{agent}' must be a positive number, not '{value}'"
        )
    return parsed

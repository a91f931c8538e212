"""Small field checks used by every structured config's `validate()`.

Each raises `ZayaConfigError` naming the key (relative to the dataclass; `validate_config` adds the
group prefix), the bad value and what is allowed, so a sweep fails at start, not an hour in.
"""

from collections.abc import Collection

from zaya_config.errors import invalid


def positive(key: str, value: float | int | None, *, optional: bool = False) -> None:
    """Require value > 0 (or None when optional)."""
    if value is None and optional:
        return
    if value is None or value <= 0:
        raise invalid(key, value, "a number > 0" + (" or null" if optional else ""))


def non_negative(key: str, value: float | int) -> None:
    """Require value >= 0."""
    if value < 0:
        raise invalid(key, value, "a number >= 0")


def one_of(key: str, value: object, allowed: Collection[object]) -> None:
    """Require value to be one of a fixed set."""
    if value not in allowed:
        raise invalid(key, value, "one of " + ", ".join(repr(a) for a in allowed))


def in_range(key: str, value: float, low: float, high: float) -> None:
    """Require low <= value <= high."""
    if not low <= value <= high:
        raise invalid(key, value, f"a number in [{low}, {high}]")

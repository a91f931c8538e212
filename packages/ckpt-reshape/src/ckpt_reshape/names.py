"""Model parameter names <-> Hugging Face key names.

Logical entries use the training model's own fully qualified names (`model.<fqn>`); the HF format stores
`transformers`' names. For ZAYA the map comes from `zaya_model.hf_keys` when zaya-model is installed (see
`zaya_names.py`); for any other model the names are used as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def _identity(name: str) -> str:
    return name


@dataclass(frozen=True)
class HfNameMap:
    """A pair of inverse functions between model fqns and HF keys."""

    to_hf: Callable[[str], str] = _identity
    from_hf: Callable[[str], str] = _identity
    source: str = "identity"


def default_name_map() -> HfNameMap:
    """zaya-model's HF key map when available, else identity."""
    from ckpt_reshape.zaya_names import zaya_name_map

    return zaya_name_map() or HfNameMap()

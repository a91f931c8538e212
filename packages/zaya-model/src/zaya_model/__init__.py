"""zaya-model: the ZAYA1 mixture-of-experts transformer, interoperable with Hugging Face `zaya`.

`ZayaConfig` holds every architectural choice (presets zaya1-base, zaya1-8b-32k, zaya1-tiny);
`build_model(cfg)` makes a `ZayaForCausalLM`. Imports neither hydra nor transformers.
"""

from zaya_model.cache import ZayaCache
from zaya_model.config import ZayaConfig
from zaya_model.errors import ZayaModelConfigError, ZayaModelError
from zaya_model.model import ZayaDecoderLayer, ZayaForCausalLM, build_model

__all__ = [
    "ZayaCache",
    "ZayaConfig",
    "ZayaDecoderLayer",
    "ZayaForCausalLM",
    "ZayaModelConfigError",
    "ZayaModelError",
    "build_model",
]

"""zaya-model: the ZAYA1 mixture-of-experts transformer, interoperable with Hugging Face `zaya`.

`ZayaConfig` holds every architectural choice (presets zaya1-base, zaya1-8b-32k, zaya1-tiny);
`build_model(cfg)` makes a `ZayaForCausalLM`. Imports neither hydra nor transformers.

The names that need torch load on first use (PEP 562): every `zaya` process imports `zaya_model.conf`
(Hydra's search path) and `zaya_model.config` (the config schema), and neither should pay for torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Torch-free parts load now (`step_traffic` the function must also shadow its submodule's name).
from zaya_model.accounting import (
    DecodeBytes,
    ParameterCount,
    attention_flops_per_token,
    count_parameters,
    decode_bytes_per_token,
    flops_per_token,
)
from zaya_model.config import ZayaConfig
from zaya_model.errors import ZayaModelConfigError, ZayaModelError
from zaya_model.step_traffic import StepTraffic, step_traffic

# The rest needs torch: public name -> the submodule that defines it (`hf_keys`: the submodule itself); the
# decode stack lives in `zaya_model.decode`.
_EXPORTS = {
    "hf_keys": "hf_keys",
    "ZayaCache": "cache",
    "ContextParallel": "context_parallel",
    "gather_sequence": "context_parallel",
    "shard_sequence": "context_parallel",
    "CPTraffic": "cp_traffic",
    "context_parallel_traffic": "cp_traffic",
    "EPTraffic": "ep_traffic",
    "expert_parallel_traffic": "ep_traffic",
    "ExpertParallel": "expert_parallel",
    "ZayaDecoder": "decode.decoder",
    "load_hf": "hf_io",
    "read_hf_folder": "hf_io",
    "save_hf": "hf_io",
    "to_hf_state_dict": "hf_io",
    "ZayaDecoderLayer": "model",
    "ZayaForCausalLM": "model",
    "build_model": "model",
    "ShardSpec": "parallel",
    "hf_parallel_plan": "parallel",
    "parallel_plan": "parallel",
    "spec_for": "parallel",
    "sample_tokens": "decode.sampling",
    "ZayaStaticCache": "decode.static_cache",
}
__all__ = [
    "CPTraffic",
    "ContextParallel",
    "DecodeBytes",
    "EPTraffic",
    "ExpertParallel",
    "ParameterCount",
    "ShardSpec",
    "StepTraffic",
    "ZayaCache",
    "ZayaConfig",
    "ZayaDecoder",
    "ZayaDecoderLayer",
    "ZayaForCausalLM",
    "ZayaModelConfigError",
    "ZayaModelError",
    "ZayaStaticCache",
    "attention_flops_per_token",
    "build_model",
    "context_parallel_traffic",
    "count_parameters",
    "decode_bytes_per_token",
    "expert_parallel_traffic",
    "flops_per_token",
    "gather_sequence",
    "hf_keys",
    "hf_parallel_plan",
    "load_hf",
    "parallel_plan",
    "read_hf_folder",
    "sample_tokens",
    "save_hf",
    "shard_sequence",
    "spec_for",
    "step_traffic",
    "to_hf_state_dict",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'zaya_model' has no attribute {name!r}")
    loaded = importlib.import_module(f"zaya_model.{module}")
    value = loaded if module == name else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from zaya_model import hf_keys
    from zaya_model.cache import ZayaCache
    from zaya_model.context_parallel import ContextParallel, gather_sequence, shard_sequence
    from zaya_model.cp_traffic import CPTraffic, context_parallel_traffic
    from zaya_model.decode.decoder import ZayaDecoder
    from zaya_model.decode.sampling import sample_tokens
    from zaya_model.decode.static_cache import ZayaStaticCache
    from zaya_model.ep_traffic import EPTraffic, expert_parallel_traffic
    from zaya_model.expert_parallel import ExpertParallel
    from zaya_model.hf_io import load_hf, read_hf_folder, save_hf, to_hf_state_dict
    from zaya_model.model import ZayaDecoderLayer, ZayaForCausalLM, build_model
    from zaya_model.parallel import ShardSpec, hf_parallel_plan, parallel_plan, spec_for

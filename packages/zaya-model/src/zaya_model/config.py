"""`ZayaConfig`: every architectural choice of ZAYA1 in one dataclass, validated at construction.

Field names follow Hugging Face's `ZayaConfig` where a field exists there, so `config.json` maps one to
one (`from_hf_config` / `to_hf_config`); fields HF lacks (bias-balancing step, MoE backend) are ours.
The dataclass is also the Hydra structured config of the `model` group (presets in `conf/model/`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass
from importlib import resources
from typing import Any

from zaya_config.validated import ValidatedConfig

from zaya_model.errors import ZayaModelConfigError, invalid

MOE_BACKENDS = ("auto", "grouped_mm", "loop")
# The RMSNorm and LM-head-loss kernels (zaya_model/kernels.py): PyTorch's, or liger-kernel's (both or one).
KERNELS = ("torch", "liger", "liger_norm", "liger_loss")

# HF config.json keys that carry no architecture (or that we handle by hand) and are ignored on import.
_HF_IGNORED = {
    "model_type",
    "architectures",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "use_cache",
    "hidden_act",
    "attention_dropout",
    "output_router_logits",
    "sliding_window",
    "layer_types",
    "rope_parameters",
    "rope_theta",
    "partial_rotary_factor",
    "rope_scaling",
    "auto_map",
    "_name_or_path",
    "return_dict",
}


@dataclass
class ZayaConfig(ValidatedConfig):
    """ZAYA1 dims and choices; defaults are the paper's ZAYA1-base (arXiv 2511.17127)."""

    name: str = "zaya1-base"
    vocab_size: int = 262272
    hidden_size: int = 2048
    num_hidden_layers: int = 40
    num_attention_heads: int = 8
    num_key_value_heads: int = 2
    head_dim: int = 128
    # CCA (arXiv 2510.04476): kernel sizes of the depthwise and the per-head grouped causal conv over q|k.
    cca_time0: int = 2
    cca_time1: int = 2
    attention_bias: bool = False
    partial_rotary_factor: float = 0.5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 4096
    # MoE: num_experts real experts plus one skip route; top-k over the num_experts + 1 classes.
    num_experts: int = 16
    num_experts_per_tok: int = 1
    moe_intermediate_size: int = 2048
    router_hidden_size: int = 256
    rms_norm_eps: float = 1e-5
    tie_word_embeddings: bool = True
    lm_head_bias: bool = False
    initializer_range: float = 0.02
    pad_token_id: int | None = 0
    bos_token_id: int | None = 2
    eos_token_id: int | None = 106
    # Aux-loss-free balancing: Adam-like step on the E + 1 class biases from the load error (balancing.py),
    # toward a load of skip_rate_target on the skip class and (1 - skip_rate_target) / E on each expert;
    # null = 1 / (E + 1), every class alike (as AMD's Primus port of ZAYA1 balances them).
    skip_rate_target: float | None = None
    skip_bias_init: float = -1.0
    bias_update_rate: float = 1e-3
    bias_update_beta1: float = 0.9
    bias_update_beta2: float = 0.999
    # How the experts run: grouped GEMM (torch._grouped_mm) or a loop over contiguous per-expert slices.
    moe_backend: str = "auto"
    # RMSNorm and LM head + loss on PyTorch ("torch") or liger-kernel's fused Triton kernels (the extra
    # zaya-model[kernels]; CUDA tensors only): "liger" for both, "liger_norm" or "liger_loss" for one.
    kernels: str = "torch"

    # ------------------------------------------------------------------ validation
    def validate_fields(self) -> None:
        """Reject configs the model cannot build, naming the key, the value and what is allowed."""
        for key in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "cca_time0",
            "cca_time1",
            "max_position_embeddings",
            "num_experts",
            "num_experts_per_tok",
            "moe_intermediate_size",
            "router_hidden_size",
        ):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise invalid(key, value, "an integer > 0")
        for key in ("rope_theta", "rms_norm_eps", "initializer_range", "bias_update_rate"):
            if not getattr(self, key) > 0:
                raise invalid(key, getattr(self, key), "a number > 0")
        if self.num_attention_heads % self.num_key_value_heads:
            raise invalid(
                "num_attention_heads",
                self.num_attention_heads,
                f"a multiple of num_key_value_heads ({self.num_key_value_heads})",
            )
        if (self.num_key_value_heads * self.head_dim) % 2:
            raise invalid(
                "head_dim",
                self.head_dim,
                "num_key_value_heads * head_dim must be even (the value is split into current and delayed halves)",
            )
        if self.num_experts_per_tok > self.num_experts:
            raise invalid(
                "num_experts_per_tok", self.num_experts_per_tok, f"an integer in [1, num_experts={self.num_experts}]"
            )
        if not 0.0 < self.partial_rotary_factor <= 1.0:
            raise invalid("partial_rotary_factor", self.partial_rotary_factor, "a number in (0, 1]")
        if self.rotary_dim % 2 or self.rotary_dim == 0:
            raise invalid(
                "head_dim",
                self.head_dim,
                f"head_dim * partial_rotary_factor ({self.head_dim} * {self.partial_rotary_factor}) "
                "must be a positive even integer for RoPE",
            )
        for key in ("bias_update_beta1", "bias_update_beta2"):
            if not 0.0 <= getattr(self, key) < 1.0:
                raise invalid(key, getattr(self, key), "a number in [0, 1)")
        if self.skip_rate_target is not None and (
            isinstance(self.skip_rate_target, bool) or not 0.0 <= self.skip_rate_target < 1.0
        ):
            raise invalid(
                "skip_rate_target", self.skip_rate_target, "null (1 / (num_experts + 1)) or a fraction in [0, 1)"
            )
        if self.moe_backend not in MOE_BACKENDS:
            raise invalid("moe_backend", self.moe_backend, "one of " + ", ".join(map(repr, MOE_BACKENDS)))
        if self.kernels not in KERNELS:
            raise invalid("kernels", self.kernels, "one of " + ", ".join(map(repr, KERNELS)))
        if self.kernels != "torch" and importlib.util.find_spec("liger_kernel") is None:
            raise ZayaModelConfigError(
                f"invalid config: kernels = {self.kernels!r} needs liger-kernel, which is not installed: "
                "pip install 'zaya-model[kernels]', or set kernels=torch"
            )
        for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
            value = getattr(self, key)
            if value is not None and not 0 <= value < self.vocab_size:
                raise invalid(key, value, f"null or a token id in [0, vocab_size={self.vocab_size})")

    # ------------------------------------------------------------------ derived sizes
    @property
    def rotary_dim(self) -> int:
        """Leading dims of each head that RoPE rotates (HF: int(head_dim * partial_rotary_factor))."""
        return int(self.head_dim * self.partial_rotary_factor)

    @property
    def skip_target(self) -> float:
        """The skip-route load the balancing steers to: `skip_rate_target`, or 1 / (E + 1) when null."""
        if self.skip_rate_target is None:
            return 1.0 / (self.num_experts + 1)
        return float(self.skip_rate_target)

    @property
    def kv_groups(self) -> int:
        """Query heads per KV head."""
        return self.num_attention_heads // self.num_key_value_heads

    @property
    def q_size(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_key_value_heads * self.head_dim

    @property
    def conv_channels(self) -> int:
        """Channels of the CCA convolutions: the concatenated query and key projections."""
        return self.q_size + self.kv_size

    @property
    def conv_state_len(self) -> int:
        """Past q|k projections a decode step needs: (cca_time0 - 1) + (cca_time1 - 1)."""
        return self.cca_time0 - 1 + self.cca_time1 - 1

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_preset(cls, preset: str, /, **overrides: Any) -> ZayaConfig:
        """Load `conf/model/<preset>.yaml` (zaya1-base, zaya1-8b-32k, zaya1-tiny), then apply overrides."""
        import yaml  # pyyaml; light and present wherever transformers is

        folder = resources.files("zaya_model.conf") / "model"
        names = sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))
        if preset not in names:
            raise ZayaModelConfigError(f"unknown model preset {preset!r}; known presets: {', '.join(names)}")
        data = yaml.safe_load((folder / f"{preset}.yaml").read_text()) or {}
        data.pop("defaults", None)
        data.update(overrides)
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> ZayaConfig:
        """Build from a dict or an omegaconf DictConfig of the `model` group; unknown keys are an error."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            from omegaconf import OmegaConf  # only when handed a DictConfig

            data = OmegaConf.to_container(data, resolve=True)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known - {"_target_"})
        if unknown:
            raise ZayaModelConfigError(
                f"invalid config: unknown model key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(known))}"
            )
        return cls(**{k: v for k, v in data.items() if k in known})

    def replace(self, **changes: Any) -> ZayaConfig:
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    # ------------------------------------------------------------------ Hugging Face config.json
    @classmethod
    def from_hf_config(cls, hf: dict[str, Any], **overrides: Any) -> ZayaConfig:
        """Map a HF `zaya` config.json dict to ours (RoPE from `rope_parameters`, nested or flat)."""
        if hf.get("model_type", "zaya") != "zaya":
            raise ZayaModelConfigError(f"config.json has model_type {hf.get('model_type')!r}; expected 'zaya'")
        if hf.get("hidden_act", "silu") != "silu":
            raise invalid("hidden_act", hf["hidden_act"], "'silu' (SwiGLU experts)")
        layer_types = hf.get("layer_types") or ["hybrid"]
        if set(layer_types) != {"hybrid"}:
            raise invalid("layer_types", sorted(set(layer_types)), "only 'hybrid' (full attention) layers")
        rope = dict(hf.get("rope_parameters") or {})
        if isinstance(rope.get("hybrid"), dict):
            rope = rope["hybrid"]
        if rope.get("rope_type", "default") != "default":
            raise invalid("rope_parameters.rope_type", rope["rope_type"], "'default'")
        known = {f.name for f in dataclasses.fields(cls)}
        data: dict[str, Any] = {k: v for k, v in hf.items() if k in known and k not in _HF_IGNORED}
        data["rope_theta"] = float(rope.get("rope_theta", hf.get("rope_theta", 5_000_000.0)))
        data["partial_rotary_factor"] = float(rope.get("partial_rotary_factor", hf.get("partial_rotary_factor", 0.5)))
        eos = data.get("eos_token_id")
        if isinstance(eos, list):
            data["eos_token_id"] = eos[0] if eos else None
        data.setdefault("name", str(hf.get("_name_or_path") or "hf-zaya"))
        data.update(overrides)
        return cls(**data)

    def to_hf_config(self) -> dict[str, Any]:
        """The HF `zaya` config.json dict for these dims (our-only fields are left out)."""
        ours_only = {
            "name",
            "skip_rate_target",
            "skip_bias_init",
            "bias_update_rate",
            "bias_update_beta1",
            "bias_update_beta2",
            "moe_backend",
            "kernels",
            "rope_theta",
            "partial_rotary_factor",
        }
        hf = {k: v for k, v in self.to_dict().items() if k not in ours_only}
        hf.update(
            model_type="zaya",
            architectures=["ZayaForCausalLM"],
            hidden_act="silu",
            layer_types=["hybrid"] * self.num_hidden_layers,
            rope_parameters={
                "hybrid": {
                    "rope_type": "default",
                    "rope_theta": float(self.rope_theta),
                    "partial_rotary_factor": float(self.partial_rotary_factor),
                }
            },
        )
        return hf

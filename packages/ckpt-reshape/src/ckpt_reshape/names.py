"""Model parameter names <-> Hugging Face keys, including fused tensors.

Logical entries use the training model's own names (`model.<fqn>`). HF keys may differ in name and in
granularity: zaya-model's fused `attn.qkv.weight` is HF's q_proj, k_proj, v_proj_current and v_proj_delayed
stacked along dim 0. An `HfKeyMap` describes each of our tensors as a list of `HfPart`s (HF key + the slice
of our tensor it holds); tensors with no parts (ours-only buffers) are not exported. Without a model-specific
map, names are used as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HfPart:
    """HF key `hf` holds our tensor's `[start, start + length)` along `dim` (the whole tensor if dim is None)."""

    hf: str
    dim: int | None = None
    start: int = 0
    length: int = 0


@dataclass
class HfKeyMap:
    """Our fqn -> HF parts; `mapped` None means identity names for every tensor."""

    mapped: dict[str, list[HfPart]] | None = None
    ignored_hf: set[str] = field(default_factory=set)  # HF keys that are not ours (e.g. a tied head)
    source: str = "identity"

    def parts(self, fqn: str, shape: tuple[int, ...]) -> list[HfPart]:
        """HF parts of one of our tensors (empty: the tensor is not part of the HF model)."""
        if self.mapped is None:
            return [HfPart(fqn)]
        return self.mapped.get(fqn, [])

    def group(self, hf_keys: list[str]) -> tuple[dict[str, list[HfPart]], list[str]]:
        """Our fqns assembled from these HF keys (complete groups only), plus HF keys left over."""
        present = set(hf_keys)
        if self.mapped is None:
            return {k: [HfPart(k)] for k in hf_keys}, []
        groups = {fqn: parts for fqn, parts in self.mapped.items() if parts and all(p.hf in present for p in parts)}
        used = {p.hf for parts in groups.values() for p in parts} | self.ignored_hf
        return groups, [k for k in hf_keys if k not in used]


IDENTITY = HfKeyMap()

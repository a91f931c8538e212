"""ckpt-reshape: move checkpoints between parallel layouts (TP/EP/PP/FSDP) and formats (DCP, zarr v3, HF
safetensors, torch.save), one tensor at a time, verified, with atomic output. See README.md."""

from zaya_config.lazy import lazy_exports

# Names load on first use, so `import ckpt_reshape.cli` (and `zaya ckpt --help`) stays light.
_EXPORTS = {
    "ConvertResult": "ckpt_reshape.convert",
    "convert": "ckpt_reshape.convert",
    "ReshapeError": "ckpt_reshape.errors",
    "FORMATS": "ckpt_reshape.formats",
    "detect_format": "ckpt_reshape.formats",
    "open_checkpoint": "ckpt_reshape.formats",
    "CheckpointIndex": "ckpt_reshape.index",
    "TensorMeta": "ckpt_reshape.index",
    "ParallelLayout": "ckpt_reshape.layout",
    "Piece": "ckpt_reshape.pieces",
    "plan_layout": "ckpt_reshape.pieces",
    "SplitSpec": "ckpt_reshape.splits",
    "SplitTable": "ckpt_reshape.splits",
    "VerifyReport": "ckpt_reshape.verify",
    "compare": "ckpt_reshape.verify",
    "verify": "ckpt_reshape.verify",
}
__all__ = lazy_exports(__name__, _EXPORTS)

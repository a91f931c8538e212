"""ckpt-reshape: move checkpoints between parallel layouts (TP/EP/PP/FSDP) and formats (DCP, zarr v3, HF
safetensors, torch.save), one tensor at a time, verified, with atomic output. See README.md."""

from ckpt_reshape.convert import ConvertResult, convert
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats import FORMATS, detect_format, open_checkpoint
from ckpt_reshape.index import CheckpointIndex, TensorMeta
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.pieces import Piece, plan_layout
from ckpt_reshape.splits import SplitSpec, SplitTable
from ckpt_reshape.verify import VerifyReport, compare, verify

__all__ = [
    "FORMATS",
    "CheckpointIndex",
    "ConvertResult",
    "ParallelLayout",
    "Piece",
    "ReshapeError",
    "SplitSpec",
    "SplitTable",
    "TensorMeta",
    "VerifyReport",
    "compare",
    "convert",
    "detect_format",
    "open_checkpoint",
    "plan_layout",
    "verify",
]

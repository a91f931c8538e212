"""`load_run`: the one loader of a trained model from a zaya-train run dir (generate, eval and tests use it).

Which step folder and which model config come from `zaya_config.train_checkpoint.run_dir` (pure data, shared
with ckpt-reshape): the step's `trained_model.json`, or for older runs the same record derived from
`config.yaml`. Here the model is built from it (zaya-model), the step's weights are read (DCP, metadata
through the restricted unpickler; only the model's tensors, without the balancing moments, so runs from
older layouts load too), and the tokenizer is rebuilt: the run's saved `tokenizer/` folder, else the recorded
tokenizer config (bytes; the tokenizer.json; a BPE found again in the data cache or retrained identically).
This lives in zaya-train because tokenizers are zaya-train's; ckpt-reshape needs only the config.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zaya_config.train_checkpoint.run_dir import TOKENIZER_DIR, TOKENIZER_JSON, RunStep, locate_run, resolve_run_step
from zaya_config.train_checkpoint.trained_model import TrainCheckpointError

from zaya_train.data.tokenizers import Tokenizer
from zaya_train.errors import ZayaTrainError


@dataclass
class LoadedRun:
    """A run's model (eval mode, on its device) with the tokenizer it was trained with, and which step it is."""

    model: Any  # a ZayaForCausalLM
    tokenizer: Tokenizer
    run: RunStep

    @property
    def source(self) -> str:
        """Where the weights came from, for logs: `<run dir> (checkpoint step N)`."""
        return f"{self.run.run_dir} (checkpoint step {self.run.step})"


def load_run(
    path: str | Path,
    *,
    step: int | None = None,
    device: Any = "cpu",
    dtype: Any = None,
    tokenizer: Tokenizer | None = None,
) -> LoadedRun:
    """Load a run dir (its newest verified checkpoint, or `step`), its `checkpoints/` or one step folder;
    `tokenizer` replaces the run's own."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
    from zaya_config.train_checkpoint.dcp_metadata import safe_reader
    from zaya_model import build_model, hf_keys

    run_dir, step = locate_run(Path(path).expanduser(), step)
    try:
        run = resolve_run_step(run_dir, step, _latest_verified)
    except TrainCheckpointError as err:
        raise ZayaTrainError(str(err)) from None
    model = build_model(run.trained.model)
    weights = {k: v for k, v in get_model_state_dict(model).items() if not k.endswith(hf_keys.OURS_ONLY_SUFFIXES)}
    state = {"model": weights}
    dcp.load(state, storage_reader=safe_reader(run.folder), no_dist=True)
    set_model_state_dict(model, state["model"], options=_partial())
    model.to(device=device, dtype=dtype).eval()
    return LoadedRun(model, tokenizer or run_tokenizer(run), run)


def _partial() -> Any:
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(strict=False)  # the balancing moments stay as built: the forward does not read them


def _latest_verified(root: Path) -> int | None:
    from zaya_train.checkpoint import CheckpointManager

    return CheckpointManager(root).latest_step()


def run_tokenizer(run: RunStep) -> Tokenizer:
    """The tokenizer a run trained with: its saved `tokenizer/` folder, else rebuilt from the recorded config."""
    from zaya_train.config import TokenizerConfig
    from zaya_train.data.tokenizer_files import load_tokenizer_folder
    from zaya_train.data.tokenizers import load_tokenizer

    if (run.run_dir / TOKENIZER_DIR / TOKENIZER_JSON).is_file():
        return load_tokenizer_folder(run.run_dir / TOKENIZER_DIR)
    cfg = TokenizerConfig(**(run.trained.tokenizer.get("config") or {}))
    if cfg.kind != "bpe":
        return load_tokenizer(cfg)
    return find_bpe_tokenizer(run.config, cfg)


def find_bpe_tokenizer(run_config: dict[str, Any], cfg: Any) -> Tokenizer:
    """A run's BPE (`cfg`, its TokenizerConfig) as its data pipeline made it: found in the data cache of
    `run_config` (the run's config.yaml), or retrained identically from the same sources."""
    from omegaconf import OmegaConf
    from zaya_config import validate_config

    from zaya_train.data.cache_dir import data_cache_dir
    from zaya_train.data.corpus import iter_texts, list_documents
    from zaya_train.data.pipeline import is_shard
    from zaya_train.data.tokenizers import load_tokenizer

    config = OmegaConf.create(run_config)
    train = validate_config(config).get("train")
    if train is None:
        raise ZayaTrainError(
            f"the run has no {TOKENIZER_DIR}/ folder and its config.yaml no `train` group to retrain its BPE "
            "tokenizer from; pass the tokenizer.json the run used"
        )
    docs = [
        list_documents(src, f"train.data.sources.{name}")
        for name, src in train.data.sources.items()
        if not is_shard(src)
    ]
    texts = (text for group in docs for text in iter_texts(group, cfg.train_max_bytes))
    return load_tokenizer(cfg, texts, data_cache_dir(config, train) / "tokenizers")

"""Where a run's prepared shards and trained tokenizers are cached, from its config.

Its own module because both the builder (which fills the cache) and the run loader (which finds a run's BPE
tokenizer there again) need it, and the loader must not import the builder.
"""

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from zaya_train.config import TrainConfig


def _resolve(path: str, root: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else Path(root) / p


def data_cache_dir(cfg: DictConfig, train: TrainConfig) -> Path:
    """Where the run's shards and trained tokenizers are cached: `train.data.cache_dir`, else
    `paths.cache_dir`/data, relative to `paths.root_dir`."""
    root = OmegaConf.select(cfg, "paths.root_dir", default=".") or "."
    cache = train.data.cache_dir or str(Path(OmegaConf.select(cfg, "paths.cache_dir", default=".cache/zaya")) / "data")
    return _resolve(cache, root)

"""From `train.data` to ready token streams: pick or train the tokenizer, prepare (or reuse) one shard per
source in the cache (a Megatron prefix is read in place), and open their train/val splits. Rank 0 prepares
while the other ranks wait.
"""

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from zaya_train.config import DataConfig, SourceConfig, TokenizerConfig
from zaya_train.data.corpus import Document, fingerprint, iter_texts, list_documents
from zaya_train.data.dataset import DATASET_FORMAT, INDEX, is_dataset
from zaya_train.data.megatron_indexed import megatron_prefix
from zaya_train.data.megatron_source import is_megatron_source, megatron_streams
from zaya_train.data.shards import TokenShard, TokenStream
from zaya_train.data.tokenizers import HFTokenizer, Tokenizer, load_tokenizer


@dataclass
class PreparedData:
    """The run's tokenizer and, per source, its train and validation streams."""

    tokenizer: Tokenizer
    train: dict[str, TokenStream]
    val: dict[str, TokenStream]
    shards: dict[str, Path]


def is_shard(source: SourceConfig) -> bool:
    """Whether a source is an already prepared zarr shard or dataset (read as is, no tokenizing)."""
    path = Path(source.path)
    return path.is_dir() and (path.suffix == ".zarr" or is_dataset(path))


def _shard_path(
    cache: Path, name: str, source: SourceConfig, docs: list[Document], tokenizer: Tokenizer, cfg: DataConfig
) -> Path:
    key = json.dumps(
        [
            DATASET_FORMAT,
            asdict(source),
            fingerprint(docs),
            tokenizer.describe()["fingerprint"],
            cfg.val_fraction,
            cfg.chunk_tokens,
        ],
        sort_keys=True,
        default=str,
    )
    return cache / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.zarr"


def _tokenize(
    docs: list[Document], tokenizer: Tokenizer, path: Path, cfg: DataConfig, progress: bool, name: str
) -> None:
    """One source through the one engine (`zaya data prepare`'s): datatrove tasks, one shard each."""
    from zaya_train.data.prepare.inputs import from_documents, plan_tasks
    from zaya_train.data.prepare.run import prepare_dataset

    if isinstance(tokenizer, HFTokenizer):
        spec = TokenizerConfig(kind="file", path=str(tokenizer.path), eos_token=cfg.tokenizer.eos_token)
    else:
        spec = TokenizerConfig(kind="byte")
    prepare_dataset(
        plan_tasks(from_documents(docs)),
        spec,
        path,
        cfg.val_fraction,
        chunk_tokens=cfg.chunk_tokens,
        progress=progress,
        description=f"tokenizing {name}",
    )


def _prepare(cfg: DataConfig, cache: Path, progress: bool) -> PreparedData:
    raw = {
        name: list_documents(src, f"train.data.sources.{name}")
        for name, src in cfg.sources.items()
        if not is_shard(src) and not is_megatron_source(src)
    }
    texts = (text for docs in raw.values() for text in iter_texts(docs, cfg.tokenizer.train_max_bytes))
    tokenizer = load_tokenizer(cfg.tokenizer, texts if cfg.tokenizer.kind == "bpe" else None, cache / "tokenizers")
    train, val, paths = {}, {}, {}
    for name, src in sorted(cfg.sources.items()):
        if is_megatron_source(src):  # token ids already: read in place (megatron_source.py)
            streams = megatron_streams(src, tokenizer, cfg.val_fraction, f"train.data.sources.{name}", cache)
            train[name], val[name], paths[name] = streams["train"], streams["val"], megatron_prefix(src.path)
            continue
        if is_shard(src):
            path = Path(src.path)
        else:
            path = _shard_path(cache, name, src, raw[name], tokenizer, cfg)
            if not (path / INDEX).is_file():  # absent, or a killed prepare to resume
                _tokenize(raw[name], tokenizer, path, cfg, progress, name)
        shard = TokenShard(path)
        shard.check_tokenizer(tokenizer)
        train[name], val[name], paths[name] = shard.split("train"), shard.split("val"), path
    return PreparedData(tokenizer, train, val, paths)


def prepare_data(
    cfg: DataConfig,
    cache_dir: Path,
    *,
    is_rank0: bool = True,
    barrier: Callable[[], None] = lambda: None,
    progress: bool = True,
) -> PreparedData:
    """Tokenizer and streams for every source; shards are built once (by rank 0) and reused from the cache."""
    cache = Path(cache_dir)
    if not is_rank0:
        barrier()
    data = _prepare(cfg, cache, progress and is_rank0)
    if is_rank0:
        barrier()
    return data

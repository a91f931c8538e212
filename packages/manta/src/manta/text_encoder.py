"""A sentence-transformers BERT folder (all-MiniLM-L6-v2 and its kind) run in numpy: tokens, encoder, pooling.

Why: `import sentence_transformers` costs about 6.5 s of CPU (torch, transformers' BERT with torch._dynamo,
scikit-learn), which every `zaya manta compose` and every plan-metrics evaluation paid to embed a few dozen
short texts. Loading the same folder's `tokenizer.json` with `tokenizers` and its `model.safetensors` with
`safetensors.numpy` (both dependencies of transformers) imports almost nothing; the forward pass below is
BERT's (post-LayerNorm, exact erf GELU, additive attention mask), followed by the modules the folder's
`modules.json` declares: mean pooling over the attention mask, then L2 normalisation. A test holds its
embeddings to sentence-transformers' own, to float tolerance. Folders of any other shape (another
architecture, another pooling, extra Dense layers) are left to sentence-transformers (`supports` says which).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"
# Token matrices of a catalog batch (128 texts x ~30 tokens) are too small for OpenBLAS's threads: on a loaded
# 2-core machine 138 catalog texts took 25 s of CPU (55 s wall) with two threads and 2.6 s (5.8 s) with one.
# Only a large catalog, embedded once and cached, gets the default pool.
THREADED_MIN_TEXTS = 4096
MEAN_ONLY = {
    "pooling_mode_cls_token": False,
    "pooling_mode_mean_tokens": True,
    "pooling_mode_max_tokens": False,
    "pooling_mode_mean_sqrt_len_tokens": False,
}


def _read_json(path: Path) -> dict | list | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def supports(path: Path) -> bool:
    """True for a folder of BERT + mean pooling (+ normalisation) with `tokenizer.json` and safetensors weights."""
    try:
        import safetensors.numpy  # noqa: F401  (both come with transformers, a dependency of sentence-transformers)
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    modules = _read_json(path / "modules.json")
    if not isinstance(modules, list) or [m.get("type") for m in modules][:2] != [TRANSFORMER, POOLING]:
        return False
    if any(m.get("type") != NORMALIZE for m in modules[2:]) or modules[0].get("path", "") != "":
        return False
    pooling = _read_json(path / modules[1]["path"] / "config.json") or {}
    config = _read_json(path / "config.json") or {}
    return (
        all(pooling.get(k, False) == v for k, v in MEAN_ONLY.items())
        and not any(pooling.get(k) for k in ("pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"))
        and config.get("model_type") == "bert"
        and config.get("hidden_act") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and (path / "tokenizer.json").is_file()
        and (path / "model.safetensors").is_file()
    )


@contextmanager
def _blas_threads(limit: int | None) -> Iterator[None]:
    """At most `limit` BLAS threads inside (None: the default pool); a no-op without threadpoolctl."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        limit = None
    if limit is None:
        yield
        return
    with threadpool_limits(limits=limit, user_api="blas"):
        yield


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    variance = np.mean(centred * centred, -1, keepdims=True)
    return centred / np.sqrt(variance + eps) * weight + bias


class BertSentenceEncoder:
    """Unit-norm mean-pooled BERT embeddings of a sentence-transformers folder that `supports` accepts."""

    def __init__(self, path: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        st_config = _read_json(path / "sentence_bert_config.json") or {}
        self.dim = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_tokens = min(int(st_config.get("max_seq_length") or 512), int(config["max_position_embeddings"]))
        self.lower_case = bool(st_config.get("do_lower_case", False))
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_tokens)
        self.tokenizer.no_padding()
        w = {
            k.removeprefix("bert."): v.astype(np.float32) for k, v in load_file(str(path / "model.safetensors")).items()
        }
        self.word, self.position = w["embeddings.word_embeddings.weight"], w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            qkv = [w[f"{p}attention.self.{n}.weight"] for n in ("query", "key", "value")]
            self.layers.append(
                {
                    "qkv_w": np.ascontiguousarray(np.concatenate(qkv).T),  # x @ qkv_w = [q | k | v]
                    "qkv_b": np.concatenate([w[f"{p}attention.self.{n}.bias"] for n in ("query", "key", "value")]),
                    "out_w": np.ascontiguousarray(w[f"{p}attention.output.dense.weight"].T),
                    "out_b": w[f"{p}attention.output.dense.bias"],
                    "norm1": (w[f"{p}attention.output.LayerNorm.weight"], w[f"{p}attention.output.LayerNorm.bias"]),
                    "up_w": np.ascontiguousarray(w[f"{p}intermediate.dense.weight"].T),
                    "up_b": w[f"{p}intermediate.dense.bias"],
                    "down_w": np.ascontiguousarray(w[f"{p}output.dense.weight"].T),
                    "down_b": w[f"{p}output.dense.bias"],
                    "norm2": (w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"]),
                }
            )

    def encode(self, texts: Sequence[str], batch_size: int = 128) -> np.ndarray:
        """Rows of unit-norm float32 embeddings, one per text (batched by token length, as sentence-transformers)."""
        texts = [t.lower() if self.lower_case else t for t in texts]
        encodings = self.tokenizer.encode_batch(texts)
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with _blas_threads(None if len(texts) >= THREADED_MIN_TEXTS else 1):
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                width = max(len(encodings[i].ids) for i in rows)
                ids = np.zeros((len(rows), width), dtype=np.int64)
                mask = np.zeros((len(rows), width), dtype=np.float32)
                for r, i in enumerate(rows):
                    ids[r, : len(encodings[i].ids)] = encodings[i].ids
                    mask[r, : len(encodings[i].ids)] = encodings[i].attention_mask
                out[rows] = self._forward(ids, mask)
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        from scipy.special import erf

        batch, width = ids.shape
        head_dim = self.dim // self.heads
        x = (self.word[ids] + self.position[:width] + self.token_type).reshape(batch * width, self.dim)
        x = _layer_norm(x, *self.embedding_norm, self.eps)  # rows: tokens; 2-D products are BLAS's fastest path
        blocked = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]  # no attention to padding
        for layer in self.layers:
            qkv = (x @ layer["qkv_w"] + layer["qkv_b"]).reshape(batch, width, 3, self.heads, head_dim)
            q, k, v = qkv.transpose(2, 0, 3, 1, 4)  # each (batch, heads, width, head_dim)
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head_dim)) + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            context = context.transpose(0, 2, 1, 3).reshape(batch * width, self.dim)
            x = _layer_norm(context @ layer["out_w"] + layer["out_b"] + x, *layer["norm1"], self.eps)
            hidden = x @ layer["up_w"] + layer["up_b"]
            hidden = 0.5 * hidden * (1.0 + erf(hidden / np.float32(np.sqrt(2.0))))
            x = _layer_norm(hidden @ layer["down_w"] + layer["down_b"] + x, *layer["norm2"], self.eps)
        x = x.reshape(batch, width, self.dim)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

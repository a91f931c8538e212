"""The prepare's tokenizing fast path: `encode_batch` (HF `encode_batch_fast`, no offsets) gives the ids
one `encode` per text gives, on unicode, empty and long documents; a task loads its tokenizer once per
process and again only when the file changes."""

import numpy as np
from zaya_train.config import TokenizerConfig
from zaya_train.data.prepare.tokenize_step import task_tokenizer
from zaya_train.data.tokenizers import HFTokenizer, train_bpe

EOS = "<|endoftext|>"


def _texts(seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "héllo", "naïve", "日本語", "✓", "🙂", "def", "return", "\n", "\t", "  "]
    texts = [" ".join(rng.choice(words, int(rng.integers(1, 40)))) for _ in range(200)]
    texts += ["", " ", "\n\n", "x", "🙂" * 500, " ".join(rng.choice(words, 20_000))]  # empty, tiny, long
    return texts


def _bpe(tmp_path, texts, vocab_size=400, name="tok.json"):
    return train_bpe(texts, vocab_size, EOS, tmp_path / name)


def test_batched_fast_ids_equal_one_encode_per_text(tmp_path):
    texts = _texts()
    tok = HFTokenizer(_bpe(tmp_path, texts), EOS)
    batched = tok.encode_batch(texts)
    assert len(batched) == len(texts)
    for text, ids in zip(texts, batched, strict=True):
        assert ids.dtype == np.uint32
        assert np.array_equal(ids, tok.encode(text)), text[:40]
    assert batched[-6].size == 0 and batched[-1].size > 10_000  # the empty and the long document
    assert tok.decode(batched[5]) == texts[5]  # byte-level BPE: lossless


def test_a_task_loads_the_tokenizer_once_per_file_version(tmp_path):
    path = _bpe(tmp_path, _texts(0))
    cfg = TokenizerConfig(kind="file", path=str(path), eos_token=EOS)
    first = task_tokenizer(cfg)
    assert task_tokenizer(TokenizerConfig(kind="file", path=str(path), eos_token=EOS)) is first
    _bpe(tmp_path, _texts(1), vocab_size=300)  # the same path, another tokenizer
    again = task_tokenizer(cfg)
    assert again is not first and again.vocab_size == 300 != first.vocab_size

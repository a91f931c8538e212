"""A run's tokenizer as files in the run dir (`<run>/tokenizer/`), in the Hugging Face layout.

`tokenizer.json` (HF `tokenizers`) + `tokenizer_config.json` load with `transformers.AutoTokenizer`, so the
run's tokenizer travels with its HF export (lm-eval's `hf` model, `tokenizer=<run>/tokenizer`). The byte
tokenizer is written as an equivalent byte-level BPE without merges (ids 0..255 = the bytes, EOS = 256);
`tokenizer_config.json` also records the zaya identity (`zaya_tokenizer`), from which
`load_tokenizer_folder` gives back the very object training used (`ByteTokenizer` or `HFTokenizer`). The
folder and file names are the run dir's contract, in `zaya_config.train_checkpoint.run_dir`.
"""

import json
from pathlib import Path

from zaya_config.atomic import write_text_atomic
from zaya_config.train_checkpoint.run_dir import TOKENIZER_CONFIG, TOKENIZER_DIR, TOKENIZER_JSON

from zaya_train.data.tokenizers import ByteTokenizer, HFTokenizer, Tokenizer
from zaya_train.errors import ZayaTrainError

__all__ = ["TOKENIZER_CONFIG", "TOKENIZER_DIR", "TOKENIZER_JSON", "load_tokenizer_folder", "save_tokenizer_folder"]


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in character for each byte: the alphabet of HF's ByteLevel pre-tokenizer."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def byte_tokenizer_json(eos_token: str) -> str:
    """A HF `tokenizers` tokenizer.json that encodes exactly as `ByteTokenizer` (byte b -> id b, EOS 256)."""
    from tokenizers import AddedToken, decoders, models, pre_tokenizers
    from tokenizers import Tokenizer as HFTokenizerCore

    vocab = {char: b for b, char in _bytes_to_unicode().items()}
    tok = HFTokenizerCore(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(eos_token, special=True, normalized=False)])
    if tok.token_to_id(eos_token) != ByteTokenizer.eos_id:
        raise ZayaTrainError(f"byte tokenizer export: EOS {eos_token!r} did not get id {ByteTokenizer.eos_id}")
    return tok.to_str()


def save_tokenizer_folder(tokenizer: Tokenizer, folder: Path, eos_token: str) -> Path:
    """Write `tokenizer` as tokenizer.json + tokenizer_config.json under `folder` (atomically, file by file)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(tokenizer, HFTokenizer):
        text = tokenizer.path.read_text(encoding="utf-8")
    elif isinstance(tokenizer, ByteTokenizer):
        text = byte_tokenizer_json(eos_token)
    else:
        raise ZayaTrainError(f"cannot save a tokenizer of type {type(tokenizer).__name__}; expected byte or file")
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": eos_token,
        "pad_token": eos_token,
        "clean_up_tokenization_spaces": False,
        "zaya_tokenizer": tokenizer.describe(),
    }
    write_text_atomic(folder / TOKENIZER_JSON, text)
    write_text_atomic(folder / TOKENIZER_CONFIG, json.dumps(config, indent=2) + "\n")
    return folder


def _token_text(value: object) -> str | None:
    """HF writes special tokens as a string or as {"content": ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def load_tokenizer_folder(folder: Path) -> Tokenizer:
    """The tokenizer saved by `save_tokenizer_folder`, or any HF folder with a tokenizer.json and an EOS token."""
    folder = Path(folder)
    if folder.is_file() and folder.name == TOKENIZER_JSON:
        folder = folder.parent
    config_file, json_file = folder / TOKENIZER_CONFIG, folder / TOKENIZER_JSON
    if not json_file.is_file():
        raise ZayaTrainError(
            f"{folder}: no {TOKENIZER_JSON}; point at a run's tokenizer/ folder or a HF folder with {TOKENIZER_JSON}"
        )
    config = json.loads(config_file.read_text(encoding="utf-8")) if config_file.is_file() else {}
    identity = config.get("zaya_tokenizer") or {}
    if identity.get("kind") == "byte":
        return ByteTokenizer()
    eos = _token_text(config.get("eos_token"))
    if eos is None:
        raise ZayaTrainError(
            f"{config_file}: no eos_token; zaya models separate documents with an EOS token, name it there"
        )
    return HFTokenizer(json_file, eos)

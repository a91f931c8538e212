"""A run's tokenizer as HF files: the byte tokenizer's HF twin encodes exactly as training did, BPE files round
trip, transformers loads both, and a folder without what a zaya model needs is refused by name."""

import json

import pytest
from zaya_train.data.corpus import stdlib_root
from zaya_train.data.tokenizer_files import load_tokenizer_folder, save_tokenizer_folder
from zaya_train.data.tokenizers import ByteTokenizer, HFTokenizer, train_bpe
from zaya_train.errors import ZayaTrainError

EOS = "<|endoftext|>"


def _texts() -> list[str]:
    files = sorted((stdlib_root() / "json").glob("*.py")) + sorted((stdlib_root() / "email").glob("*.py"))
    return [p.read_text(encoding="utf-8") for p in files] + ["héllo wörld ✓ \t\r\n", "", "x" * 5000]


def test_byte_tokenizer_files_encode_and_decode_as_training_did(tmp_path):
    from tokenizers import Tokenizer

    folder = save_tokenizer_folder(ByteTokenizer(), tmp_path / "tok", EOS)
    hf = Tokenizer.from_file(str(folder / "tokenizer.json"))
    ours = ByteTokenizer()
    for text in _texts():
        ids = hf.encode(text, add_special_tokens=False).ids
        assert ids == ours.encode(text).tolist()
        assert hf.decode(ids) == ours.decode(ids) == text
    assert hf.token_to_id(EOS) == ours.eos_id == 256
    assert isinstance(load_tokenizer_folder(folder), ByteTokenizer)  # the very object training used


def test_transformers_loads_the_run_tokenizer_with_eos_and_pad(tmp_path):
    transformers = pytest.importorskip("transformers")
    folder = save_tokenizer_folder(ByteTokenizer(), tmp_path / "tok", EOS)
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert tok.eos_token_id == tok.pad_token_id == 256 and tok.bos_token_id is None
    assert tok.encode("def f(x):\n    return x") == ByteTokenizer().encode("def f(x):\n    return x").tolist()
    assert tok.decode([104, 256, 105], skip_special_tokens=True) == "hi"


def test_bpe_tokenizer_round_trips_through_its_folder(tmp_path):
    path = train_bpe(_texts()[:6], 300, EOS, tmp_path / "bpe" / "tokenizer.json")
    trained = HFTokenizer(path, EOS)
    folder = save_tokenizer_folder(trained, tmp_path / "run" / "tokenizer", EOS)
    again = load_tokenizer_folder(folder)
    assert isinstance(again, HFTokenizer) and again.eos_id == trained.eos_id
    assert again.describe()["fingerprint"] == trained.describe()["fingerprint"]
    text = _texts()[0]
    assert again.encode(text).tolist() == trained.encode(text).tolist()
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert config["eos_token"] == EOS and config["zaya_tokenizer"]["kind"] == "file"


def test_folders_without_what_a_zaya_model_needs_are_refused(tmp_path):
    with pytest.raises(ZayaTrainError, match=r"no tokenizer\.json"):
        load_tokenizer_folder(tmp_path)
    save_tokenizer_folder(ByteTokenizer(), tmp_path / "tok", EOS)
    (tmp_path / "tok" / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    with pytest.raises(ZayaTrainError, match="no eos_token"):
        load_tokenizer_folder(tmp_path / "tok")

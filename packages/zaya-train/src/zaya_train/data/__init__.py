"""Data: tokenizers, the embedded stdlib corpus, zarr token shards (prepared on datatrove), the mixture sampler."""

from zaya_train.data.corpus import Document, list_documents, stdlib_root
from zaya_train.data.pipeline import PreparedData, prepare_data
from zaya_train.data.sampler import MixtureSampler, validation_windows
from zaya_train.data.shards import TokenShard, TokenStream
from zaya_train.data.tokenizers import ByteTokenizer, HFTokenizer, Tokenizer, load_tokenizer, train_bpe

__all__ = [
    "ByteTokenizer",
    "Document",
    "HFTokenizer",
    "MixtureSampler",
    "PreparedData",
    "TokenShard",
    "TokenStream",
    "Tokenizer",
    "list_documents",
    "load_tokenizer",
    "prepare_data",
    "stdlib_root",
    "train_bpe",
    "validation_windows",
]

"""zaya's notes beside a Megatron prefix it wrote (`<prefix>.zaya.json`): the zarr dataset's tokenizer and,
when both splits were written, how many documents each has (train first), so a converted prefix keeps its
split and tokenizer identity (Megatron's own files carry neither).
"""

import json
from dataclasses import dataclass
from pathlib import Path

from zaya_config.atomic import write_text_atomic

from zaya_train.data.megatron_indexed import megatron_prefix
from zaya_train.errors import ZayaTrainError

NOTES_FORMAT = "zaya-megatron-notes-v1"


def notes_path(prefix: Path | str) -> Path:
    """`<prefix>.zaya.json`: what zaya knows about a prefix it wrote (tokenizer, split sizes)."""
    return Path(f"{megatron_prefix(prefix)}.zaya.json")


@dataclass(frozen=True)
class MegatronNotes:
    """The zarr dataset's tokenizer description and, when both splits were written, their document counts."""

    tokenizer: dict
    splits: dict[str, int] | None

    def write(self, prefix: Path | str) -> Path:
        """Beside the pair, atomically."""
        body = {"format": NOTES_FORMAT, "tokenizer": self.tokenizer, "splits": self.splits}
        return write_text_atomic(notes_path(prefix), json.dumps(body, indent=1) + "\n")


def read_notes(prefix: Path | str) -> MegatronNotes | None:
    """The notes of a prefix we wrote; None for a prefix Megatron (or anyone else) wrote."""
    path = notes_path(prefix)
    if not path.is_file():
        return None
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        if body.get("format") != NOTES_FORMAT:
            raise ValueError(f"format {body.get('format')!r}, expected {NOTES_FORMAT!r}")
        return MegatronNotes(dict(body["tokenizer"]), body.get("splits"))
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ZayaTrainError(
            f"{path}: not zaya's notes of a Megatron prefix ({err}); delete it or rewrite it"
        ) from None

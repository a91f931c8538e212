"""What every corpus reader yields and how it treats a bad record: one home for `RawDocument`, the
`on_error` policy and the skip count, so each format's reader only says where a record is and what is wrong.
"""

from dataclasses import dataclass, field

from zaya_train.errors import ZayaTrainError

ON_ERROR = ("raise", "skip")


@dataclass(frozen=True)
class RawDocument:
    """One document's text and its stable name (file and line or row): the validation split hashes the name."""

    name: str
    text: str

    def read(self) -> str:
        """The text (the same call as `corpus.Document.read`, so both feed the shard writer)."""
        return self.text


@dataclass
class ReadStats:
    """Counts of one read: documents yielded, empty texts dropped, bad records skipped (first few named)."""

    documents: int = 0
    empty: int = 0
    skipped: int = 0
    examples: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for the CLI: how many were read and skipped, and the first skipped record."""
        line = f"{self.documents} documents"
        if self.empty:
            line += f", {self.empty} empty texts dropped"
        if self.skipped:
            line += f", {self.skipped} bad records skipped (first: {self.examples[0]})"
        return line


class BadRecord:
    """Applies `on_error` to a bad record: raise one `ZayaTrainError` line, or count it and go on."""

    def __init__(self, on_error: str, stats: ReadStats) -> None:
        if on_error not in ON_ERROR:
            raise ZayaTrainError(f"on_error = {on_error!r}; allowed: {', '.join(ON_ERROR)}")
        self.on_error = on_error
        self.stats = stats

    def __call__(self, where: str, problem: str) -> None:
        """`where` is `file, line N` or `file, row N`; `problem` says what is wrong with the record."""
        message = f"{where}: {problem}"
        if self.on_error == "raise":
            raise ZayaTrainError(
                f"{message}; fix the record, or skip bad records with on_error='skip' (--on-error skip)"
            )
        self.stats.skipped += 1
        if len(self.stats.examples) < 5:
            self.stats.examples.append(message)

    def text(self, where: str, value: object, field_name: str) -> str | None:
        """The record's text if `value` is a string (bytes must be UTF-8), else report it and return None."""
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError as err:
                self(where, f"field {field_name!r} is not UTF-8 (byte 0x{value[err.start]:02x} at offset {err.start})")
                return None
        if not isinstance(value, str):
            kind = "null" if value is None else type(value).__name__
            self(where, f"field {field_name!r} is {kind}, not a string")
            return None
        return value

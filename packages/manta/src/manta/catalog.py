"""The catalog: base checkpoints and adapters (LoRAs) with the costs a composition has to respect.

Each record carries what retrieval needs (description, tags, trigger words), what the solver needs
(VRAM, per-step latency on the reference device, price per image) and what generation needs (weight
range, a local weights path). Catalogs load from JSON Lines, CSV or Parquet; every row is validated and
a bad row is named by its line, so a 75k-row file fails at the row that is wrong, not somewhere later.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from importlib.resources import files
from pathlib import Path
from typing import Any

from manta.errors import MantaError

KINDS = ("checkpoint", "lora")
EXAMPLE_CATALOG = "example"
WORLD_CATALOG = "world"  # the tiny world's catalog, shipped with its models (manta.world)
_LIST_FIELDS = ("tags", "trigger_words")
_REQUIRED = ("id", "kind", "base_family", "description")


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One base checkpoint or adapter; latencies are per denoising step on the reference device."""

    id: str
    kind: str
    base_family: str
    description: str
    rank: int = 0
    size_bytes: int = 0
    vram_bytes: int = 0
    step_latency_ms: float = 0.0
    price_per_image: float = 0.0
    licence: str = "unknown"
    tags: tuple[str, ...] = ()
    trigger_words: tuple[str, ...] = ()
    weight_min: float = 0.0
    weight_max: float = 1.0
    quality: float = 0.5
    path: str | None = None

    @property
    def is_adapter(self) -> bool:
        return self.kind != "checkpoint"

    def embedding_text(self) -> str:
        """The text embedded for retrieval: description, then tags (what the adapter is for)."""
        tags = ", ".join(self.tags)
        return f"{self.description} Tags: {tags}." if tags else self.description

    def to_row(self) -> dict[str, Any]:
        """A JSON-ready dict (lists instead of tuples)."""
        row = asdict(self)
        for name in _LIST_FIELDS:
            row[name] = list(row[name])
        return row


def _as_list(value: Any) -> tuple[str, ...]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ()
    if isinstance(value, str):
        parts = value.replace(";", "|").split("|")
        return tuple(p.strip() for p in parts if p.strip())
    return tuple(str(v).strip() for v in value if str(v).strip())


def _number(row: Mapping[str, Any], name: str, kind: type, default: float) -> float:
    value = row.get(name)
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return default
    if isinstance(value, bool):
        raise ValueError(f"{name} = {value!r} is not a number")
    try:
        number = kind(float(value)) if kind is int else float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} = {value!r} is not a number") from None
    if kind is int and float(value) != int(float(value)):
        raise ValueError(f"{name} = {value!r} is not a whole number")
    return number


def entry_from_row(row: Mapping[str, Any]) -> CatalogEntry:
    """Build and validate one record from a loosely typed row (JSON object, CSV row, Parquet row)."""
    missing = [name for name in _REQUIRED if not str(row.get(name) or "").strip()]
    if missing:
        raise ValueError(f"missing required field(s) {', '.join(missing)}")
    kind = str(row["kind"]).strip().lower()
    if kind not in KINDS:
        raise ValueError(f"kind = {row['kind']!r}; allowed: one of {', '.join(KINDS)}")
    weight_range = row.get("weight_range")
    lo_default, hi_default = (
        weight_range if isinstance(weight_range, list | tuple) and len(weight_range) == 2 else (0.0, 1.0)
    )
    path = row.get("path")
    entry = CatalogEntry(
        id=str(row["id"]).strip(),
        kind=kind,
        base_family=str(row["base_family"]).strip().lower(),
        description=str(row["description"]).strip(),
        rank=int(_number(row, "rank", int, 0)),
        size_bytes=int(_number(row, "size_bytes", int, 0)),
        vram_bytes=int(_number(row, "vram_bytes", int, 0)),
        step_latency_ms=_number(row, "step_latency_ms", float, 0.0),
        price_per_image=_number(row, "price_per_image", float, 0.0),
        licence=str(row.get("licence") or "unknown").strip(),
        tags=_as_list(row.get("tags")),
        trigger_words=_as_list(row.get("trigger_words")),
        weight_min=_number(row, "weight_min", float, float(lo_default)),
        weight_max=_number(row, "weight_max", float, float(hi_default)),
        quality=_number(row, "quality", float, 0.5),
        path=str(path).strip()
        if path not in (None, "") and not (isinstance(path, float) and math.isnan(path))
        else None,
    )
    for name in ("size_bytes", "vram_bytes", "step_latency_ms", "price_per_image", "rank"):
        if getattr(entry, name) < 0:
            raise ValueError(f"{name} = {getattr(entry, name)!r}; allowed: a number >= 0")
    if entry.is_adapter and entry.rank <= 0:
        raise ValueError(f"rank = {entry.rank!r}; allowed: an integer > 0 for an adapter")
    if not entry.weight_min <= entry.weight_max:
        raise ValueError(
            f"weight range [{entry.weight_min}, {entry.weight_max}] is empty; need weight_min <= weight_max"
        )
    if not 0.0 <= entry.quality <= 1.0:
        raise ValueError(f"quality = {entry.quality!r}; allowed: a number in [0, 1]")
    return entry


@dataclass(frozen=True)
class Catalog:
    """A validated set of checkpoints and adapters, in file order; `source` names where it came from."""

    entries: tuple[CatalogEntry, ...]
    source: str = "<memory>"
    _by_id: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for position, entry in enumerate(self.entries):
            if entry.id in self._by_id:
                raise MantaError(
                    f"catalog {self.source}: duplicate id {entry.id!r} (rows {self._by_id[entry.id] + 1} "
                    f"and {position + 1}); every record needs its own id"
                )
            self._by_id[entry.id] = position
        families = {e.base_family for e in self.entries if not e.is_adapter}
        if not families:
            raise MantaError(f"catalog {self.source} has no base checkpoint (kind = 'checkpoint'); add at least one")
        for position, entry in enumerate(self.entries):
            if entry.is_adapter and entry.base_family not in families:
                raise MantaError(
                    f"catalog {self.source}, record {position + 1} ({entry.id!r}): adapter for base family "
                    f"{entry.base_family!r}, but the catalog has no checkpoint of that family (families: "
                    f"{', '.join(sorted(families))}); add such a checkpoint or drop the adapter"
                )

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._by_id

    def __getitem__(self, entry_id: str) -> CatalogEntry:
        try:
            return self.entries[self._by_id[entry_id]]
        except KeyError:
            raise MantaError(f"catalog {self.source} has no record with id {entry_id!r}") from None

    def position(self, entry_id: str) -> int:
        """Row position of `entry_id` (the order embeddings are stored in)."""
        self[entry_id]
        return self._by_id[entry_id]

    @cached_property
    def checkpoints(self) -> tuple[CatalogEntry, ...]:
        return tuple(e for e in self.entries if not e.is_adapter)

    @cached_property
    def adapters(self) -> tuple[CatalogEntry, ...]:
        return tuple(e for e in self.entries if e.is_adapter)

    @cached_property
    def content_hash(self) -> str:
        """SHA-256 of the records' canonical JSON: the key of the embedding cache."""
        digest = hashlib.sha256()
        for entry in self.entries:
            digest.update(json.dumps(entry.to_row(), sort_keys=True, separators=(",", ":")).encode())
            digest.update(b"\n")
        return digest.hexdigest()


def _rows_jsonl(path: Path) -> Iterable[tuple[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield f"line {number}", json.loads(line)
            except json.JSONDecodeError as err:
                raise MantaError(
                    f"catalog {path}, line {number}: not valid JSON ({err.msg}); each line must be one JSON object"
                ) from None


def _rows_csv(path: Path) -> Iterable[tuple[str, Any]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        for row in reader:
            if None in row:
                raise MantaError(f"catalog {path}, line {reader.line_num}: more cells than the header has columns")
            yield f"line {reader.line_num}", row


def _rows_parquet(path: Path) -> Iterable[tuple[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MantaError("reading Parquet catalogs needs pyarrow: pip install 'manta[parquet]'") from None
    for number, row in enumerate(pq.read_table(path).to_pylist(), start=1):
        yield f"row {number}", row


_READERS = {".jsonl": _rows_jsonl, ".ndjson": _rows_jsonl, ".csv": _rows_csv, ".parquet": _rows_parquet}


def example_catalog_path() -> Path:
    """The small hand-written catalog shipped with the package."""
    return Path(str(files("manta.data").joinpath("example_catalog.jsonl")))


# Catalogs shipped with the package, by name: the art-style example, everyday subjects (COCO's kinds of
# scenes: animals, vehicles, sports, food, rooms, streets; hand-written like the example), the tiny world.
SHIPPED_CATALOGS = {
    EXAMPLE_CATALOG: ("example_catalog.jsonl",),
    "everyday": ("everyday_catalog.jsonl",),
    WORLD_CATALOG: ("world", "catalog.jsonl"),
}


def load_catalog(path: str | Path) -> Catalog:
    """Load and validate a catalog from .jsonl, .csv or .parquet, or a shipped one by name (`example`,
    `everyday`, `world`); relative entry paths are taken relative to the catalog file's folder."""
    if str(path) in SHIPPED_CATALOGS:
        path = Path(str(files("manta.data").joinpath(*SHIPPED_CATALOGS[str(path)])))
    path = Path(path)
    if not path.is_file():
        raise MantaError(
            f"catalog file {path} does not exist; pass a .jsonl, .csv or .parquet file or one of "
            f"{', '.join(SHIPPED_CATALOGS)}"
        )
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise MantaError(f"catalog {path}: unknown format {path.suffix!r}; allowed: {', '.join(_READERS)}")
    entries = []
    for where, row in reader(path):
        if not isinstance(row, Mapping):
            raise MantaError(f"catalog {path}, {where}: expected an object with fields, got {type(row).__name__}")
        try:
            entry = entry_from_row(row)
        except ValueError as err:
            raise MantaError(f"catalog {path}, {where}: {err}") from None
        if entry.path and not Path(entry.path).expanduser().is_absolute():
            entry = replace(entry, path=str(path.parent.resolve() / entry.path))  # relative to the catalog file
        entries.append(entry)
    if not entries:
        raise MantaError(f"catalog {path} has no records")
    return Catalog(tuple(entries), source=str(path))


def write_catalog(entries: Sequence[CatalogEntry], path: str | Path) -> Path:
    """Write records as JSON Lines or CSV, atomically; the format follows the suffix."""
    from zaya_config.atomic import write_text_atomic

    path = Path(path)
    if path.suffix.lower() == ".csv":
        import io

        buffer = io.StringIO()
        names = list(CatalogEntry.__dataclass_fields__)
        writer = csv.DictWriter(buffer, fieldnames=names)
        writer.writeheader()
        for entry in entries:
            row = entry.to_row()
            for name in _LIST_FIELDS:
                row[name] = "|".join(row[name])
            writer.writerow(row)
        text = buffer.getvalue()
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        text = "".join(json.dumps(e.to_row(), sort_keys=True) + "\n" for e in entries)
    else:
        raise MantaError(f"cannot write catalog {path}: use a .jsonl or .csv suffix")
    write_text_atomic(path, text)
    return path


def with_prices(catalog: Catalog, prices: dict[str, float]) -> Catalog:
    """The catalog with the user's price per image for the ids in `prices` (a shipped catalog carries no prices:
    what a model costs to run is the user's to say); an unknown id or a negative price is an error."""
    from dataclasses import replace

    for entry_id, price in prices.items():
        if entry_id not in catalog:
            raise MantaError(f"price for {entry_id!r}: no such id in catalog {catalog.source}")
        if not float(price) >= 0:
            raise MantaError(f"price for {entry_id!r} is {price}; a price per image is 0 or more")
    entries = tuple(replace(e, price_per_image=float(prices[e.id])) if e.id in prices else e for e in catalog.entries)
    return Catalog(entries, catalog.source)

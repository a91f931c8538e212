"""The measured study's per-candidate results and the re-run cache: each candidate saved as it finishes
(`candidates/<name>.json`, atomically) with the settings it was measured under; a re-run reuses only results
whose settings match exactly.
"""

import dataclasses
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from zaya_config import HardwareProfile
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig

from collbench.config import SizingConfig
from collbench.sizing.measure_decode import DecodeMeasurement, DecodeSetup
from collbench.sizing.measure_train import TrainMeasurement, TrainSetup

MOE_SHAPE = ("num_experts", "moe_intermediate_size", "num_experts_per_tok", "name")  # what a candidate changes


@dataclass
class Measured:
    """One candidate and what was measured on it."""

    name: str
    point: tuple[int, int, int]
    train: TrainMeasurement
    decode: list[DecodeMeasurement]

    def decode_ms(self) -> dict[int, float]:
        """Batch -> measured ms per step."""
        return {d.batch: d.ms for d in self.decode}


def candidate_name(point: tuple[int, int, int]) -> str:
    """E16-F2048-k1."""
    e, f, k = point
    return f"E{e}-F{f}-k{k}"


def settings_key(
    sizing: SizingConfig, base: ZayaConfig, setup: TrainSetup, decode: DecodeSetup, hw: HardwareProfile
) -> dict:
    """What a saved candidate result must match to be reused by a re-run."""
    train = setup.train
    key = {
        "hardware": hw.name,
        "base_model": {k: v for k, v in dataclasses.asdict(base).items() if k not in MOE_SHAPE},
        "train": [train.optimizer.name, train.precision, train.compile, train.activation_checkpointing, train.seed],
        "decode_compile": decode.compile,
        "warmup": [sizing.measurement.warmup_steps, decode.warmup],
        "layers": sizing.measurement.layers,
        "steps": sizing.measurement.steps,
        "seq_len": setup.seq_len,
        "global_batch": setup.global_batch,
        "micro_batch": setup.micro_batch,
        "decode_batches": list(sizing.decode_batches),
        "prompt_len": decode.prompt_len,
        "decode_tokens": decode.tokens,
        "device": str(decode.device),
    }
    return json.loads(json.dumps(key))  # as it reads back from the saved file (lists, not tuples)


def load_saved(path: Path, key: dict) -> Measured | None:
    """A candidate measured by an earlier run with the same settings, else None."""
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    if data.get("settings") != key:
        return None
    return Measured(
        data["name"],
        tuple(data["point"]),
        TrainMeasurement(**data["train"]),
        [DecodeMeasurement(**d) for d in data["decode"]],
    )


def save_measured(m: Measured, path: Path, key: dict) -> Path:
    """Write one candidate's result atomically (the re-run's cache)."""
    data = {"name": m.name, "point": list(m.point), "settings": key, "train": asdict(m.train)}
    data["decode"] = [asdict(d) for d in m.decode]
    return write_text_atomic(path, json.dumps(data, indent=1) + "\n")

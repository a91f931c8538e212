"""The GEMM sweep the measured mode calibrates on when no characterize run is given (`sizing.measured_dir`).

Two families, timed by `collbench.gemm.run_gemm_sweep` on the device the candidates train on (bf16 on CUDA with
the GPU timing policy and the L2-defeating operand rotation of the device benchmark; fp32 on a CPU, as the CPU
trainer computes):
- every candidate's own forward GEMMs (`transformer_shapes` at the trainer's micro-batch tokens and tokens per
  expert), with expert widths one datasheet tile either side, so expert-width choices read measured rates;
- an N sweep at M = micro-batch tokens, K = hidden, N from hidden to hidden + 512 in steps of 8: misaligned
  and aligned widths side by side, from which `tile_evidence.derive_tile` reads the tile step.
It is written as `gemm.csv` in the run folder, the table format `sizing.measured_dir` reads, and reused by a
re-run in the same folder.
"""

from pathlib import Path

import torch
from zaya_config import HardwareProfile
from zaya_model import ZayaConfig

from collbench.gemm import (
    GemmResult,
    GemmShape,
    quantization_shapes,
    run_gemm_sweep,
    sustain_matmul,
    transformer_shapes,
)
from collbench.sizing.estimator import load_gemm_table
from collbench.tables import write_rows
from collbench.timing import TimingPolicy

N_SWEEP_SPAN = 512  # twice the largest granule derive_tile tries
N_SWEEP_STEP = 8


def sweep_shapes(cands: list[ZayaConfig], micro_tokens: int, tile: int) -> list[GemmShape]:
    """The candidates' GEMMs (expert widths +- one tile too) and the N sweep, without repeats."""
    shapes: dict[tuple[int, int, int], GemmShape] = {}
    for cfg in cands:
        tpe = max(1, round(micro_tokens * cfg.num_experts_per_tok / cfg.num_experts))
        for width in (cfg.moe_intermediate_size - tile, cfg.moe_intermediate_size, cfg.moe_intermediate_size + tile):
            if width <= 0:
                continue
            vocab = cfg.vocab_size if width == cfg.moe_intermediate_size else 0
            for s in transformer_shapes(cfg.hidden_size, cfg.q_size, cfg.kv_size, width, micro_tokens, tpe, vocab):
                label = s.label if s.family != "expert" else f"{s.label} F={width} E={cfg.num_experts}"
                shapes.setdefault((s.m, s.n, s.k), GemmShape(s.m, s.n, s.k, s.family, label))
    hidden = cands[0].hidden_size
    for s in quantization_shapes(micro_tokens, hidden, hidden, hidden + N_SWEEP_SPAN, N_SWEEP_STEP):
        shapes.setdefault((s.m, s.n, s.k), s)
    return list(shapes.values())


def run_candidate_gemm_sweep(
    cands: list[ZayaConfig],
    micro_tokens: int,
    hw: HardwareProfile,
    device: torch.device,
    out_dir: Path,
    iters: int,
    warmup: int,
    progress: bool = True,
) -> tuple[list[GemmResult], Path]:
    """Time the sweep on `device`; the rows and the `gemm.csv` they were written to. A `gemm.csv` already in
    `out_dir` from the same device that holds every shape is reused (a re-run of an interrupted study)."""
    shapes = sweep_shapes(cands, micro_tokens, hw.matmul_tile)
    path = Path(out_dir) / "gemm.csv"
    if path.is_file():
        rows = load_gemm_table(path)
        if {(s.m, s.n, s.k) for s in shapes} <= {(r.m, r.n, r.k) for r in rows} and {r.device for r in rows} == {
            str(device)
        }:
            return rows, path
    if device.type == "cuda":
        sustain_matmul(device, 2.0)  # the clock ramps up before anything is timed
        policy, rotate, dtype = TimingPolicy.gpu(), 2 * hw.l2_cache_bytes, "bfloat16"
    else:
        # median of 3 batches of >= `iters` calls and >= 5 ms each: a CPU's tiny GEMMs scatter call to call
        policy, rotate, dtype = (
            TimingPolicy(min_calls=iters, batches=3, batch_s=0.005, warmup_calls=warmup),
            0,
            "float32",
        )
    rows = run_gemm_sweep(shapes, dtype, device, iters, warmup, hw.compute_units, str(device), progress, policy, rotate)
    return rows, write_rows([r.as_row() for r in rows], path)

"""benchmarks/layer_mfu.py --smoke: both paths at two depths on CPU, the marginal arithmetic, the files it writes."""

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.slow
def test_layer_mfu_smoke_measures_both_paths_and_derives_the_per_layer_rate(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import layer_mfu

    rows = layer_mfu.main(["--smoke", "--out", str(tmp_path), "--profile"])
    written = json.loads((tmp_path / "layer_mfu.json").read_text())
    assert written["rows"] == rows and [r["path"] for r in rows] == ["model", "Trainer"]
    for r in rows:
        assert (r["layers_a"], r["layers_b"], r["kernels"], r["precision"]) == (1, 2, "torch", "bf16")
        # the marginal layer time is the difference of the two depths' times per token, per added layer
        per_token = 1 / r["tokens_per_s_b"] - 1 / r["tokens_per_s_a"]
        assert r["layer_ms_per_micro_batch"] == pytest.approx(per_token * 2 * 32 * 1e3)
        if per_token > 0:
            assert r["layer_mfu"] == pytest.approx(r["layer_gflop_per_token"] * 1e9 / per_token / r["peak_flops"])
    assert "model alone, 1 layers" in (tmp_path / "layer_mfu_kernels.txt").read_text()
    assert (tmp_path / "layer_mfu.png").stat().st_size > 1000


def test_layer_mfu_refuses_bad_depths_and_kernels(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import layer_mfu
    from zaya_model.errors import ZayaModelConfigError

    with pytest.raises(SystemExit):
        layer_mfu.main(["--smoke", "--out", str(tmp_path), "--layers", "8", "4"])
    assert "--layers A B needs 0 < A < B, got 8 4" in capsys.readouterr().err
    with pytest.raises(ZayaModelConfigError, match="kernels = 'fast'"):
        layer_mfu.main(["--smoke", "--out", str(tmp_path), "--kernels", "torch", "fast"])
    assert not (tmp_path / "layer_mfu.json").exists() and sys.modules["layer_mfu"] is layer_mfu

"""No import cycle among ckpt_reshape's modules (the formats and the ZAYA bridge import downward only: the
bridge finds a run's step folder through `train_root`, not through the formats that import it)."""

from pathlib import Path

from import_cycles import assert_no_import_cycles, import_graph

SRC = Path(__file__).resolve().parents[1] / "src"


def test_no_module_of_ckpt_reshape_imports_itself_through_others() -> None:
    assert_no_import_cycles(SRC, "ckpt_reshape")
    graph = import_graph(SRC, "ckpt_reshape")
    assert "ckpt_reshape.zaya_names" in graph["ckpt_reshape.formats.hf"]  # inside HfReader: still seen
    assert "ckpt_reshape.formats" not in graph["ckpt_reshape.zaya_run"]

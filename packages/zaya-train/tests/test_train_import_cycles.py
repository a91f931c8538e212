"""No import cycle among zaya_train's modules: each concept's home imports downward only, so any module loads
alone and the order the package's parts are imported in never matters."""

from pathlib import Path

from import_cycles import assert_no_import_cycles, import_graph

SRC = Path(__file__).resolve().parents[1] / "src"


def test_no_module_of_zaya_train_imports_itself_through_others() -> None:
    assert_no_import_cycles(SRC, "zaya_train")


def test_the_graph_sees_imports_inside_functions_and_skips_type_checking_ones() -> None:
    graph = import_graph(SRC, "zaya_train")
    assert "zaya_train.metrics.downstream_plot" in graph["zaya_train.metrics.plots"]  # inside plot_run
    assert "zaya_train.trainer" not in graph["zaya_train.router_balancing"]  # only under TYPE_CHECKING
    assert "zaya_train.distributed.mesh" in graph["zaya_train.distributed"]  # the package re-exports it

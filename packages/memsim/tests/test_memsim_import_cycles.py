"""No import cycle among memsim's modules (issue 37: trace <-> compiled.bridge <-> trace_formats was one): the
trace readers, the engines and the native build each import downward only."""

from pathlib import Path

from import_cycles import assert_no_import_cycles, import_graph

SRC = Path(__file__).resolve().parents[1] / "src"


def test_no_module_of_memsim_imports_itself_through_others() -> None:
    assert_no_import_cycles(SRC, "memsim")


def test_the_trace_readers_and_the_compiled_engine_share_trace_data_only() -> None:
    graph = import_graph(SRC, "memsim")
    assert "memsim.trace_data" in graph["memsim.trace_formats"] and "memsim.trace" not in graph["memsim.trace_formats"]
    assert "memsim.trace" not in graph["memsim.compiled.bridge"]
    assert "memsim.compiled.bridge" in graph["memsim.trace"]

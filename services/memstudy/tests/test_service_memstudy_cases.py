"""memstudy's step cases come from zaya-model's `step_traffic` and equal, number for number, what memstudy
computed itself before the arithmetic moved there (`data/study_cases_v1.json`, recorded at 0b70803)."""

import dataclasses
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from zaya_model import ZayaConfig

HERE = Path(__file__).resolve().parent
RECORDED = json.loads((HERE / "data" / "study_cases_v1.json").read_text())


def _memstudy_main():
    spec = importlib.util.spec_from_file_location("memstudy_main", HERE.parent / "main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("preset", sorted({r["preset"] for r in RECORDED}))
def test_study_cases_are_identical_to_the_recorded_ones(preset):
    main, cfg = _memstudy_main(), ZayaConfig.from_preset(preset)
    records = [r for r in RECORDED if r["preset"] == preset]
    assert len(records) == 48  # 3 batch sizes x 4 contexts x 2 dtypes x 2 phases
    for r in records:
        study = SimpleNamespace(batch_size=r["batch"], context_len=r["ctx"], prompt_len=r["ctx"],
                                dtype_bytes=r["dtype_bytes"])  # fmt: skip
        case = main.study_case(cfg, study, r["phase"])
        got = {"shape": dataclasses.asdict(case.shape), "accounting_bytes": case.accounting_bytes,
               "flops": case.flops, "labels": case.labels}  # fmt: skip
        assert json.loads(json.dumps(got)) == {key: r[key] for key in got}, (r["phase"], r["batch"], r["ctx"])

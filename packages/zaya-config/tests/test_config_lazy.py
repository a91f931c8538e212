"""A package with lazy exports pickles by name like any module (cloudpickle ships submitit's task functions by
value, with the modules among their globals: hydra-submitit-launcher failed with "cannot pickle
'LazyExportsModule' object" before)."""

import pickle
import sys
import types

import pytest
from zaya_config.lazy import LazyExportsModule, lazy_exports


def test_lazy_package_pickles_by_name(monkeypatch):
    package = types.ModuleType("zaya_lazy_demo")
    monkeypatch.setitem(sys.modules, "zaya_lazy_demo", package)
    lazy_exports("zaya_lazy_demo", {"dumps": "json"})
    assert isinstance(package, LazyExportsModule) and package.dumps([1]) == "[1]"
    assert pickle.loads(pickle.dumps(package)) is package
    cloudpickle = pytest.importorskip("cloudpickle")

    def task() -> str:
        return package.dumps({"a": 1})

    assert cloudpickle.loads(cloudpickle.dumps(task))() == '{"a": 1}'

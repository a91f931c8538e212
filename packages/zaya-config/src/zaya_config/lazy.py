"""Package exports that load on first use (PEP 562), so importing a package (or one of its light modules,
such as a CLI) does not pull in torch, numpy or Hydra through its `__init__`.

Stdlib only: packages that must stay importable without Hydra (GPU benchmark scripts) can use it.
"""

import sys
import types
from importlib import import_module

_EXPORTS_KEY = "_lazy_exports"


class LazyExportsModule(types.ModuleType):
    """A package module whose exported names are imported from their submodule when first read.

    An exported name wins over a same-named submodule (`ckpt_reshape.convert` the function, not the module),
    as it did when `__init__` imported it eagerly: the import system's binding of the submodule is dropped.
    """

    def __getattr__(self, name: str) -> object:
        exports: dict[str, str] = self.__dict__.get(_EXPORTS_KEY, {})
        if name not in exports:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(import_module(exports[name]), name)
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: object) -> None:
        exports = self.__dict__.get(_EXPORTS_KEY, {})
        if name in exports and isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            return
        super().__setattr__(name, value)

    def __reduce__(self) -> tuple:
        """Pickled by name, as pickle does any module: cloudpickle (submitit, hydra-submitit-launcher) ships a
        service's task function by value and meets this module among its globals."""
        return import_module, (self.__name__,)

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(self.__dict__.get(_EXPORTS_KEY, {})))


def lazy_exports(package: str, exports: dict[str, str]) -> list[str]:
    """Make `package` (call with `__name__` from its `__init__`) export `name -> module` lazily; returns the
    sorted names for `__all__`."""
    module = sys.modules[package]
    module.__dict__[_EXPORTS_KEY] = dict(exports)
    module.__class__ = LazyExportsModule
    return sorted(exports)

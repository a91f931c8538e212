"""Hydra SearchPathPlugin: every installed zaya package's config groups join every Hydra app's path."""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class ZayaSearchPathPlugin(SearchPathPlugin):
    """Append `pkg://<module>` for each `zaya.conf` entry point, so `model=zaya1-base` just works."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from zaya_config.registry import conf_modules, schemas

        present = {element.path for element in search_path.get_path()}
        for provider, module in conf_modules().items():
            path = f"pkg://{module}"
            if path not in present:
                search_path.append(provider=provider, path=path)
        schemas()  # registers every structured config in Hydra's ConfigStore

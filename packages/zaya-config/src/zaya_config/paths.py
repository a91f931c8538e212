"""Where runs, data and caches go; everything relative resolves against the working directory."""

from dataclasses import dataclass

from zaya_config.validated import ValidatedConfig


@dataclass
class PathsConfig(ValidatedConfig):
    """Folders shared by every service (run dirs live under `output_dir`)."""

    root_dir: str = "."
    output_dir: str = "outputs"
    data_dir: str = "data"
    cache_dir: str = ".cache/zaya"

    def validate_fields(self) -> None:
        """Paths are non-empty strings."""
        from zaya_config.errors import invalid

        for name in ("root_dir", "output_dir", "data_dir", "cache_dir"):
            if not getattr(self, name):
                raise invalid(name, getattr(self, name), "a non-empty path")

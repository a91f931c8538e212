"""manta: model-adapter composition (a base checkpoint + LoRAs per image) under hardware and cost limits.

`build_composer(MantaConfig(...))` loads a catalog, embeds it (cached) with a local sentence-transformers
model and returns a `Composer`; `Composer.compose(prompt, limits, batch)` returns `CompositionPlan`s that
fit the limits (`limits_from_config("laptop-8gb")`), solved exactly and as diverse as possible.
"""

from manta.catalog import Catalog, CatalogEntry, load_catalog, write_catalog
from manta.composer import Composer, build_composer, build_index, limits_from_config
from manta.concepts import Concept, KeywordDecomposer, LLMDecomposer, TokenUsage
from manta.config import MantaConfig, RenderConfig
from manta.embedding import TextEmbedder, default_model_path
from manta.errors import MantaError
from manta.limits import HardwareLimits, ResolvedLimits
from manta.plan import AdapterChoice, CompositionPlan
from manta.synthetic import synthetic_catalog

__all__ = [
    "AdapterChoice",
    "Catalog",
    "CatalogEntry",
    "Composer",
    "CompositionPlan",
    "Concept",
    "HardwareLimits",
    "KeywordDecomposer",
    "LLMDecomposer",
    "MantaConfig",
    "MantaError",
    "RenderConfig",
    "ResolvedLimits",
    "TextEmbedder",
    "TokenUsage",
    "build_composer",
    "build_index",
    "default_model_path",
    "limits_from_config",
    "load_catalog",
    "synthetic_catalog",
    "write_catalog",
]

"""manta: model-adapter composition (a base checkpoint + LoRAs per image) under hardware and cost limits.

`build_composer(MantaConfig(...))` loads a catalog, embeds it (cached) with a local sentence-transformers
model and returns a `Composer`; `Composer.compose(prompt, limits, batch)` returns `CompositionPlan`s that
fit the limits (`limits_from_config("laptop-8gb")`), solved exactly and as diverse as possible.
"""

from zaya_config.lazy import lazy_exports

# Names load on first use, so `import manta.cli` (and `zaya manta --help`) stays light.
_EXPORTS = {
    "Catalog": "manta.catalog",
    "CatalogEntry": "manta.catalog",
    "load_catalog": "manta.catalog",
    "write_catalog": "manta.catalog",
    "Composer": "manta.composer",
    "build_composer": "manta.composer",
    "build_index": "manta.composer",
    "limits_from_config": "manta.composer",
    "Concept": "manta.concepts",
    "KeywordDecomposer": "manta.concepts",
    "LLMDecomposer": "manta.concepts",
    "TokenUsage": "manta.concepts",
    "MantaConfig": "manta.config",
    "RenderConfig": "manta.config",
    "TextEmbedder": "manta.embedding",
    "default_model_path": "manta.embedding",
    "MantaError": "manta.errors",
    "HardwareLimits": "manta.limits",
    "ResolvedLimits": "manta.limits",
    "AdapterChoice": "manta.plan",
    "CompositionPlan": "manta.plan",
    "synthetic_catalog": "manta.synthetic",
}
__all__ = lazy_exports(__name__, _EXPORTS)

"""manta's composition settings (config key `manta`), validated at start like every zaya config."""

from __future__ import annotations

from dataclasses import dataclass, field

from zaya_config.checks import in_range, non_negative, positive
from zaya_config.validated import ValidatedConfig


@dataclass
class MantaConfig(ValidatedConfig):
    """Which catalog and embedding model to use, and the knobs of retrieval, solving and diversity."""

    catalog: str = "example"
    model_path: str | None = None
    cache_dir: str | None = None
    max_concepts: int = 4
    candidates_per_concept: int = 16  # cosine top-k per concept and base family fed to the solver
    adapters_per_concept: int = 2  # k: at most this many adapters serve one concept
    min_relevance: float = 0.3  # candidates below this cosine to their concept are dropped
    separation_weight: float = 0.5  # triplet term: penalty x max cosine to the other concepts
    coverage_bonus: float = 0.25  # objective reward for each concept served by at least one adapter
    adapter_penalty: float = 0.1  # objective cost of each adapter (stacking LoRAs degrades images)
    base_prompt_weight: float = 1.0
    base_quality_weight: float = 0.3
    cost_budget: float | None = None
    prices: dict[str, float] = field(default_factory=dict)  # price per image by catalog id: the user's input
    batch: int = 4
    seed: int = 0
    mask_probability: float = 0.5  # per-concept candidate masking when sampling the batch's plans
    pool_factor: int = 3  # candidate plans solved per image of the batch
    min_relative_relevance: float = 0.6  # batch plans keep at least this share of the best plan's relevance
    concept_relevance_floor: float = 0.9  # every pick for a concept is within this share of its best relevance
    style_fit_floor: float = 0.9  # with a style in the prompt, checkpoints within this share of the best style fit

    def validate_fields(self) -> None:
        """Every knob in its meaningful range."""
        if not self.catalog:
            from zaya_config.errors import invalid

            raise invalid("catalog", self.catalog, "a catalog file path or 'example'")
        for name in ("max_concepts", "candidates_per_concept", "batch", "pool_factor"):
            positive(name, getattr(self, name))
        non_negative("adapters_per_concept", self.adapters_per_concept)
        in_range("min_relevance", self.min_relevance, -1.0, 1.0)
        for name in (
            "separation_weight",
            "coverage_bonus",
            "adapter_penalty",
            "base_prompt_weight",
            "base_quality_weight",
        ):
            non_negative(name, getattr(self, name))
        if self.cost_budget is not None:
            non_negative("cost_budget", self.cost_budget)
        for entry_id, price in self.prices.items():
            non_negative(f"prices.{entry_id}", price)
        in_range("mask_probability", self.mask_probability, 0.0, 1.0)
        in_range("min_relative_relevance", self.min_relative_relevance, 0.0, 1.0)
        in_range("concept_relevance_floor", self.concept_relevance_floor, 0.0, 1.0)
        in_range("style_fit_floor", self.style_fit_floor, 0.0, 1.0)


@dataclass
class RenderConfig(ValidatedConfig):
    """Whether and how the compose service renders its plans with the diffusers backend."""

    enabled: bool = False
    device: str = "cpu"
    num_steps: int = 20
    height: int = 512
    width: int = 512
    guidance_scale: float = 7.5

    def validate_fields(self) -> None:
        """Sizes the VAE can handle (multiples of 8) and a positive step count."""
        from zaya_config.errors import invalid

        positive("num_steps", self.num_steps)
        for name in ("height", "width"):
            value = getattr(self, name)
            if value <= 0 or value % 8:
                raise invalid(name, value, "a positive multiple of 8")
        non_negative("guidance_scale", self.guidance_scale)

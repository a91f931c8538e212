"""Cluster shape: how many nodes, GPUs per node, and the links between them."""

from dataclasses import dataclass, field

from zaya_config.checks import positive
from zaya_config.validated import ValidatedConfig


@dataclass
class LinkConfig(ValidatedConfig):
    """One class of link; bandwidth per GPU, one direction, in GB/s (1e9 bytes/s)."""

    name: str = "loopback"
    bw_gbps: float = 10.0
    latency_us: float = 5.0

    def validate_fields(self) -> None:
        """A link has positive bandwidth and non-zero latency."""
        positive("bw_gbps", self.bw_gbps)
        positive("latency_us", self.latency_us)


@dataclass
class ClusterConfig(ValidatedConfig):
    """Nodes x GPUs per node, joined by an intra-node and an inter-node link."""

    name: str = "local"
    nodes: int = 1
    gpus_per_node: int = 1
    intra_node: LinkConfig = field(default_factory=LinkConfig)
    inter_node: LinkConfig = field(default_factory=lambda: LinkConfig(name="none", bw_gbps=1.0))

    def validate_fields(self) -> None:
        """Counts are positive; links are physical."""
        positive("nodes", self.nodes)
        positive("gpus_per_node", self.gpus_per_node)

    @property
    def world_size(self) -> int:
        """Total number of GPUs (ranks) in the cluster."""
        return self.nodes * self.gpus_per_node

"""Hardware-aware sizing: dimension rules and the MoE width study (train throughput vs decode latency)."""

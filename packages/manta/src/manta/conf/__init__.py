"""manta's Hydra config groups: manta/, manta_hardware/, manta_render/ (found through zaya.conf)."""

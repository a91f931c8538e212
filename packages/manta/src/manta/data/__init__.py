"""Data shipped with manta: the example catalog and the evaluation prompts."""

"""Evaluation: plan metrics, judges (offline and VLM), the Stylus-like baseline, win rates, prompt sets."""

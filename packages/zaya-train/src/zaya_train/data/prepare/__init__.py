"""Tokenizing text into a prepared dataset in parallel on datatrove's executors (issue 39).

`prepare_dataset` is the one engine: `zaya data prepare` and a training run's data preparation both call it.
"""

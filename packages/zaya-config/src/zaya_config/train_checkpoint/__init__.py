"""The on-disk contract of a zaya-train checkpoint root, shared by zaya-train (which writes and resumes it)
and ckpt-reshape (which reads, reshapes and rewrites it): folder and file names (`layout`), the
`manifest.json` that proves a step folder whole (`manifest`), the model each step holds as trained
(`trained_model`), which step folder of a run to read and the record derived for older runs (`run_dir`), and
reading its pickles without running code (`train_state`, `dcp_metadata`). Stdlib only at import, like
`zaya_config.atomic` (numpy, torch and OmegaConf are imported when a file needs them).
"""

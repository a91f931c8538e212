"""The on-disk contract of a zaya-train checkpoint root, shared by zaya-train (which writes and resumes it)
and ckpt-reshape (which reads, reshapes and rewrites it): folder and file names (`layout`) and the
`manifest.json` that proves a step folder whole (`manifest`). Stdlib only, like `zaya_config.atomic`.
"""

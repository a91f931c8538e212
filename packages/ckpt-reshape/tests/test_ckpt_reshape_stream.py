"""Byte-range streaming: which boxes are one row-major run, and the copier moves and hashes exactly the bytes
of every extent into every target whatever the block, extent and target boundaries (kernel copy in 64-byte calls
with writeback or one call per range, and pwrite); a source that ends early is an error naming file and tensor."""

import itertools
import os
from pathlib import Path

import pytest
import torch
from ckpt_reshape.byte_ranges import Extent, Target, contiguous_start
from ckpt_reshape.checksums import tensor_checksum
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.index import TensorMeta
from ckpt_reshape.stream_copy import StreamCopier
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_contiguous_start_matches_brute_force(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=0, max_size=3)))
    offsets = tuple(data.draw(st.integers(0, s - 1)) for s in shape)
    sizes = tuple(data.draw(st.integers(1, s - o)) for s, o in zip(shape, offsets, strict=True))
    index = torch.arange(max(1, torch.Size(shape).numel())).reshape(shape)
    region = index[tuple(slice(o, o + s) for o, s in zip(offsets, sizes, strict=True))].reshape(-1)
    is_run = bool((region == torch.arange(int(region[0]), int(region[0]) + region.numel())).all())
    assert contiguous_start(shape, offsets, sizes) == (int(region[0]) if is_run else None)


@pytest.mark.parametrize("writeback", [True, False], ids=["chunked+writeback", "whole-range"])
@pytest.mark.parametrize("kernel_copy", [True, False], ids=["copy_file_range", "pwrite"])
def test_copier_moves_and_hashes_every_byte(tmp_path: Path, kernel_copy: bool, writeback: bool):
    data = torch.randint(0, 256, (1000,), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    cuts = [0, 7, 300, 301, 1000]  # source extents of uneven sizes, stored out of order with gaps around them
    src = tmp_path / "src.bin"
    layout, blob = {}, bytearray()
    for lo, hi in reversed(list(itertools.pairwise(cuts))):
        blob += b"\xee" * 13
        layout[lo] = len(blob)
        blob += bytes(data[lo:hi].tolist())
    src.write_bytes(bytes(blob))
    dst = tmp_path / "dst.bin"
    fd_src = os.open(src, os.O_RDONLY)
    fd_dst = os.open(dst, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        extents = [Extent(fd_src, layout[lo], hi - lo, src) for lo, hi in itertools.pairwise(cuts)]
        pieces = [(0, 450), (450, 999), (999, 1000)]  # targets at scattered offsets of one file
        targets = [Target(fd_dst, 5000 - 3 * lo, lo, hi - lo) for lo, hi in pieces]
        copier = StreamCopier(copy_chunk=64, hash_window=100, writeback=writeback)
        copier.kernel_copy = kernel_copy
        digest = copier.copy(TensorMeta("t", (1000,), torch.uint8), extents, targets)
        copier.close()
    finally:
        os.close(fd_src)
        os.close(fd_dst)
    assert digest == tensor_checksum(data)
    out = dst.read_bytes()
    for (lo, hi), target in zip(pieces, targets, strict=True):
        assert out[target.offset : target.offset + hi - lo] == bytes(data[lo:hi].tolist())


@pytest.mark.parametrize("writeback", [True, False], ids=["chunked+writeback", "whole-range"])
def test_copier_names_a_truncated_source(tmp_path: Path, writeback: bool):
    src, dst = tmp_path / "short.bin", tmp_path / "dst.bin"
    src.write_bytes(bytes(100))
    fd_src = os.open(src, os.O_RDONLY)
    fd_dst = os.open(dst, os.O_RDWR | os.O_CREAT, 0o644)
    copier = StreamCopier(copy_chunk=64, writeback=writeback)
    try:
        # copy() refuses extents past the end up front; this is the copy loop's own guard, for a file that
        # shrinks after that check
        with pytest.raises(ReshapeError, match=r"short\.bin.*'w'.*truncated"):
            copier._copy_range("w", Extent(fd_src, 0, 200, src), 0, fd_dst, 0, 200)
    finally:
        copier.close()
        os.close(fd_src)
        os.close(fd_dst)

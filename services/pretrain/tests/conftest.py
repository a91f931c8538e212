"""Shared settings of the pretrain service's tests."""

import pytest


@pytest.fixture(autouse=True)
def one_intra_op_thread(monkeypatch):
    """The service processes these tests start run one intra-op thread each, as torchrun gives its ranks: the
    tiny models gain nothing from a second thread, and where every core already runs a test it only spins.
    Their results do not depend on it."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")

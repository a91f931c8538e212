"""train.data.document_masking: the sampler hands out each token's document (from doc_offsets) and the trainer's
loss on a packed batch is the loss of its documents run alone."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from zaya_config.errors import ZayaConfigError
from zaya_train.build import check_recipe
from zaya_train.config import DataConfig, DistributedConfig, SourceConfig, TrainConfig
from zaya_train.data.shards import TokenStream
from zaya_train.errors import ZayaTrainError
from zaya_train.recipe import PhaseConfig, RecipeConfig, ScheduleConfig


def test_window_documents_come_from_doc_offsets():
    stream = TokenStream(np.arange(20, dtype=np.uint32), np.array([0, 3, 4, 11, 20], dtype=np.uint64))
    assert stream.window_documents(0, 5).tolist() == [0, 0, 0, 1, 2, 2]
    assert stream.window_documents(2, 5).tolist() == [2, 3, 3, 3, 3, 3]


def _short_documents(folder, word, count=60):
    """Documents of 8 to 20 bytes: a 32-token window packs two to four of them."""
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"{i:03d}.txt").write_text(f"{word} {i} " * (1 + i % 3))
    return SourceConfig(path=str(folder), glob="*.txt", exclude=[])


@pytest.mark.slow
def test_masked_loss_of_a_packed_batch_is_that_of_its_documents_alone(make_trainer, tmp_path):
    """The trainer's masked loss on sampled windows equals the token-weighted loss of every document piece run
    alone (fp32, 1e-5); a document ends at its EOS, whose target, the next document's first token, is kept.
    Then a masked training step and evaluation run."""
    sources = {name: _short_documents(tmp_path / name, name) for name in ("ab", "cd")}
    phase = PhaseConfig(name="p0", tokens=10**6, seq_len=32, mixture={"ab": 1.0, "cd": 1.0},
                        schedule=ScheduleConfig(kind="constant", peak_lr=1e-3, warmup_fraction=0.0))  # fmt: skip
    data = DataConfig(sources=sources, val_fraction=0.2, document_masking=True)
    trainer = make_trainer(phases=[phase], data=data)
    trainer.enter_phase(0)
    state = trainer.sampler.state_dict()
    batch, documents = trainer.next_batch()
    trainer.sampler.load_state_dict(state)
    assert np.array_equal(batch, trainer.sampler.next_batch(trainer.global_batch_size()))  # the same rows
    eos = trainer.data.tokenizer.eos_id
    assert np.array_equal(np.diff(documents, axis=1) == 1, batch[:, :-1] == eos)  # a new document after each EOS
    assert (np.diff(documents, axis=1) == 1).sum() >= 2  # the batch does pack several documents
    model = trainer.model.eval()
    tokens, docs = torch.from_numpy(batch), torch.from_numpy(documents)
    with torch.no_grad():
        masked = trainer._loss(model, tokens, docs)
        unmasked = trainer._loss(model, tokens)
        total, count = torch.zeros((), dtype=torch.float64), 0
        for row, row_docs in zip(tokens, docs[:, :-1], strict=True):
            for doc in row_docs.unique():
                where = (row_docs == doc).nonzero().flatten()
                start, end = int(where[0]), int(where[-1]) + 1
                loss = model(row[None, start:end], labels=row[None, start + 1 : end + 1])
                total += loss.double() * (end - start)
                count += end - start
    torch.testing.assert_close(masked.double(), total / count, atol=1e-5, rtol=0)
    assert abs(float(unmasked) - float(masked)) > 1e-4  # masking does change what the model sees
    model.train()
    assert trainer.val_documents and set(trainer.val_documents) == set(trainer.val_windows)
    metrics = trainer.train_step(*trainer.next_batch())
    assert np.isfinite(metrics["loss"]) and np.isfinite(trainer.evaluate()["val_loss"])


def test_document_masking_with_context_parallel_is_refused():
    with pytest.raises(ZayaConfigError, match=r"data\.document_masking.*distributed\.context_parallel"):
        TrainConfig(
            data=DataConfig(document_masking=True), distributed=DistributedConfig(context_parallel=2)
        ).validate()
    train = TrainConfig(data=DataConfig(document_masking=True))
    phase = PhaseConfig(name="long", tokens=10**6, seq_len=64, mixture={"a": 1.0}, context_parallel=2,
                        schedule=ScheduleConfig(kind="constant", peak_lr=1e-3, warmup_fraction=0.0))  # fmt: skip
    with pytest.raises(ZayaTrainError, match=r"document_masking.*recipe\.phases\[0\]\.context_parallel = 2"):
        check_recipe(RecipeConfig(name="r", phases=[phase]), train, max_positions=1024, world_size=2)


@pytest.mark.slow
def test_document_masking_benchmark_smoke(tmp_path):
    """benchmarks/document_masking.py runs end to end (BENCHMARKS.md's figures come from it)."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "document_masking.py"
    proc = subprocess.run([sys.executable, str(script), "--smoke", "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (row,) = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert row["seq_len"] == 32 and row["masked_step_ms"] > 0 and row["unmasked_step_ms"] > 0

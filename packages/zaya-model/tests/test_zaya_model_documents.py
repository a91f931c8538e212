"""Document masking: a packed window with `document_ids` computes every document as if it ran alone."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from zaya_model import ZayaConfig, ZayaModelError
from zaya_model.documents import document_attention, document_layout, document_positions
from zaya_model.layers import rope_cos_sin

REPO = Path(__file__).resolve().parents[3]
BEFORE = "705099e"  # the last commit before document masking: its model is "today's" unmasked function


def _packed(lengths_per_row, vocab, seed=0):
    """Token ids [B, T + 1] and document ids [B, T + 1] of rows packed from documents of the given lengths."""
    gen = torch.Generator().manual_seed(seed)
    rows, docs = [], []
    for lengths in lengths_per_row:
        rows.append(torch.randint(0, vocab, (sum(lengths),), generator=gen))
        docs.append(torch.cat([torch.full((n,), 10 * i + 7) for i, n in enumerate(lengths)]))
    return torch.stack(rows), torch.stack(docs)


def _token_losses(logits, labels):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none").view(labels.shape)


@pytest.mark.parametrize("kernels", [(3, 2), (4, 3)])
def test_packed_documents_match_each_document_alone(small_config, randomized_model, kernels):
    """fp32 per-token losses within 1e-5 of each document run alone, the last token's target (the next
    document's first token, the EOS prediction) included; one-token documents and documents shorter than the
    conv kernels too; the fused loss path agrees."""
    model = randomized_model(small_config(cca_time0=kernels[0], cca_time1=kernels[1], attention_bias=True))
    layouts = [[5, 1, 7, 2, 2], [2, 9, 1, 1, 4]]  # 17 tokens a row: 16 inputs + the last target
    window, doc = _packed(layouts, model.config.vocab_size)
    inputs, labels, doc_ids = window[:, :-1], window[:, 1:], doc[:, :-1]
    with torch.no_grad():
        packed = _token_losses(model(inputs, document_ids=doc_ids), labels)
        alone = torch.empty_like(packed)
        for b, lengths in enumerate(layouts):
            start = 0
            for n in lengths:
                end = min(start + n, inputs.shape[1])
                if end > start:
                    logits = model(inputs[b : b + 1, start:end])
                    alone[b, start:end] = _token_losses(logits, labels[b : b + 1, start:end])[0]
                start += n
        unmasked = _token_losses(model(inputs), labels)
        fused = model(inputs, labels=labels, document_ids=doc_ids)
    torch.testing.assert_close(packed, alone, atol=1e-5, rtol=0)
    assert (unmasked - alone).abs().max() > 1e-2  # without the ids the documents do see each other
    torch.testing.assert_close(fused, alone.mean(), atol=1e-5, rtol=0)


def test_positions_and_masks_follow_the_runs():
    ids = torch.tensor([[4, 4, 4, 9, 2, 2], [1, 1, 1, 1, 1, 1]])
    assert document_positions(ids).tolist() == [[0, 1, 2, 0, 0, 1], [0, 1, 2, 3, 4, 5]]
    layout = document_layout(ids, 3, 2)
    assert layout.starts_BT.tolist()[0] == [True, False, False, True, True, False]
    assert layout.attention_B1TT[0, 0, 5].tolist() == [False, False, False, False, True, True]
    assert torch.equal(layout.attention_B1TT[1, 0], torch.ones(6, 6, dtype=torch.bool).tril())
    assert layout.grouped_keep_BTk[0, 3].tolist() == [False, True]  # a document start: its grouped tap before
    assert layout.depthwise_keep_BMk.shape == (2, 7, 3)


def test_document_ids_refused_where_they_cannot_hold(small_config, randomized_model):
    model = randomized_model(small_config())
    ids = torch.zeros(1, 6, dtype=torch.long)
    with pytest.raises(ZayaModelError, match="decoding with a cache"):
        model(ids, cache=model.new_cache(1, 8), document_ids=ids)
    with pytest.raises(ZayaModelError, match="leave position_ids out"):
        model(ids, position_ids=torch.arange(6), document_ids=ids)
    with pytest.raises(ZayaModelError, match=r"document_ids must be \[batch, seq\]"):
        model(ids, document_ids=ids[:, :4])


@pytest.mark.slow
def test_block_with_documents_compiles_fullgraph(small_config, randomized_model):
    """The masked block traces into one graph (no break) and computes what it computes eagerly."""
    torch._dynamo.reset()
    model = randomized_model(small_config())
    block = model.layers[1]
    _, doc = _packed([[3, 1, 4]], model.config.vocab_size)
    layout = document_layout(doc, model.config.cca_time0, model.config.cca_time1)
    gen = torch.Generator().manual_seed(1)
    resid = torch.randn(1, 8, model.config.hidden_size, generator=gen)
    prev = torch.randn(1, 8, model.config.router_hidden_size, generator=gen)
    rope = rope_cos_sin(document_positions(doc), model.rope_inv_freq)
    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    eager = block(resid, prev, rope, layout.attention_B1TT, None, None, layout)[0]
    traced = compiled(resid, prev, rope, layout.attention_B1TT, None, None, layout)[0]
    torch.testing.assert_close(traced, eager, atol=1e-5, rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_compiled_blocks_on_cuda_attend_through_flex_and_match_documents_alone(small_config, randomized_model):
    """On CUDA the compiled blocks take flex attention on the BlockMask: the same attention as SDPA's boolean
    mask, and per-token losses of packed windows within 1e-4 of each document run alone (eager, fp32)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    layout = document_layout(torch.tensor([[3] * 50 + [4] * 90 + [5] * 60]).cuda(), 3, 2)
    assert layout.block_mask is not None
    q, k, v = torch.randn(1, 8, 200, 32).cuda(), torch.randn(1, 2, 200, 32).cuda(), torch.randn(1, 2, 200, 32).cuda()
    compiled = torch.compile(document_attention, fullgraph=True)
    flex = compiled(q, k, v, layout.attention_B1TT, layout)
    sdpa = document_attention(q, k, v, layout.attention_B1TT, layout)
    torch.testing.assert_close(flex, sdpa, atol=1e-5, rtol=1e-5)
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    other = document_layout(torch.tensor([[1] * 120 + [2] * 80]).cuda(), 3, 2)  # other documents, same shape
    torch.testing.assert_close(
        compiled(q, k, v, other.attention_B1TT, other),
        document_attention(q, k, v, other.attention_B1TT, other),
        atol=1e-5,
        rtol=1e-5,
    )
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs  # a new BlockMask compiles nothing

    model = randomized_model(small_config(attention_bias=True)).cuda()
    layouts = [[40, 1, 70, 2, 16], [2, 99, 1, 1, 26]]
    window, doc = _packed(layouts, model.config.vocab_size)
    inputs, labels, doc_ids = window[:, :-1].cuda(), window[:, 1:].cuda(), doc[:, :-1].cuda()
    with torch.no_grad():
        alone = torch.empty(labels.shape, device="cuda")
        for b, lengths in enumerate(layouts):
            start = 0
            for n in lengths:
                end = min(start + n, inputs.shape[1])
                one = _token_losses(model(inputs[b : b + 1, start:end]), labels[b : b + 1, start:end])
                alone[b, start:end] = one[0]
                start += n
        model.compile_blocks()
        packed = _token_losses(model(inputs, document_ids=doc_ids), labels)
        with torch.autocast("cuda", dtype=torch.bfloat16):  # as training runs: q, k fp32 after the norm, v bf16
            bf16 = model(inputs, labels=labels, document_ids=doc_ids)
    torch.testing.assert_close(packed, alone, atol=1e-4, rtol=0)
    assert abs(float(bf16) - float(alone.mean())) < 0.05


_BEFORE_SCRIPT = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import zaya_model
assert zaya_model.__file__.startswith(sys.argv[1]), zaya_model.__file__
import dataclasses
saved = torch.load(sys.argv[2])
known = {f.name for f in dataclasses.fields(zaya_model.ZayaConfig)}
dropped = sorted(set(saved["config"]) - known)  # keys added since (the test checks they are at their defaults)
model = zaya_model.build_model({k: v for k, v in saved["config"].items() if k in known}).eval()
model.load_state_dict(saved["state"])
with torch.no_grad():
    out = {"logits": model(saved["inputs"]), "loss": model(saved["inputs"], labels=saved["labels"]), "dropped": dropped}
torch.save(out, sys.argv[3])
"""


@pytest.mark.slow
def test_without_document_ids_outputs_are_bitwise_those_before(small_config, randomized_model, tmp_path):
    """Off, nothing changed: logits and the fused loss equal, bit for bit, those of the model at BEFORE."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", BEFORE, "packages/zaya-model/src"], capture_output=True, check=False
    )
    if archive.returncode != 0:
        pytest.skip(f"commit {BEFORE} is not in this checkout's history")
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive.stdout, check=True)
    model = randomized_model(small_config(attention_bias=True))
    window, _ = _packed([[17], [17]], model.config.vocab_size, seed=3)
    saved = {
        "config": model.config.to_dict(),
        "state": model.state_dict(),
        "inputs": window[:, :-1],
        "labels": window[:, 1:],
    }
    torch.save(saved, tmp_path / "in.pt")
    old_src = tmp_path / "packages/zaya-model/src"
    subprocess.run(
        [sys.executable, "-c", _BEFORE_SCRIPT, str(old_src), str(tmp_path / "in.pt"), str(tmp_path / "out.pt")],
        check=True,
    )
    before = torch.load(tmp_path / "out.pt")
    defaults = ZayaConfig()
    for key in before["dropped"]:  # a key the model at BEFORE did not have takes its default here, so "off"
        assert getattr(model.config, key) == getattr(defaults, key), key
    with torch.no_grad():
        assert torch.equal(model(saved["inputs"]), before["logits"])
        assert torch.equal(model(saved["inputs"], labels=saved["labels"]), before["loss"])

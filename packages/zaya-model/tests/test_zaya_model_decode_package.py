"""The decode subpackage: importing the model leaves it unloaded, every module of it imports, and the request
checks and the EOS fill (one home each) give every decode path the same answer."""

import importlib.util
import json
import subprocess
import sys

import pytest
import torch
from zaya_model import ZayaDecoder, ZayaModelError
from zaya_model.decode.eos import all_finished, fill_after_eos, kept_columns
from zaya_model.decode.generation import _generate_through_forward
from zaya_model.decode.request import check_request, prompt_mask, prompt_positions

# In a fresh process: what importing the model (and building and running it) loads of zaya_model.decode, then
# every module of the subpackage imported (the Triton kernels only where triton is installed).
IMPORTS = """
import importlib, json, pkgutil, sys
import zaya_model
import zaya_model.model
from zaya_model.model import build_model
from zaya_model import ZayaConfig, ZayaForCausalLM
import torch
model = build_model(ZayaConfig.from_preset("zaya1-tiny", num_hidden_layers=1))
model(torch.zeros(1, 3, dtype=torch.long))
loaded = sorted(m for m in sys.modules if m == "zaya_model.decode" or m.startswith("zaya_model.decode."))
import zaya_model.decode
skip = set() if importlib.util.find_spec("triton") else {"zaya_model.decode.kernels"}
modules = [m.name for m in pkgutil.iter_modules(zaya_model.decode.__path__, "zaya_model.decode.")]
for name in modules:
    if name not in skip:
        importlib.import_module(name)
print(json.dumps({"loaded_by_model": loaded, "modules": modules, "skipped": sorted(skip)}))
"""


def test_importing_the_model_leaves_the_decode_stack_unloaded_and_every_decode_module_imports():
    done = subprocess.run([sys.executable, "-c", IMPORTS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["loaded_by_model"] == []
    names = {name.rsplit(".", 1)[1] for name in got["modules"]}
    assert {"request", "eos", "sampling", "static_cache", "step", "decoder", "fused", "kernels", "aot"} <= names
    assert got["skipped"] == ([] if importlib.util.find_spec("triton") else ["zaya_model.decode.kernels"])


def test_the_eos_fill_repeats_eos_in_finished_rows_and_keeps_columns_up_to_the_last_eos():
    finished = torch.tensor([True, False, False])
    token = fill_after_eos(torch.tensor([4, 9, 7]), finished, eos_token_id=9)
    assert token.tolist() == [9, 9, 7]  # row 0 was finished: EOS again; row 1 emits EOS now
    assert finished.tolist() == [True, True, False] and not all_finished(finished, 9)
    unchanged = torch.tensor([False])
    assert fill_after_eos(torch.tensor([9]), unchanged, None).tolist() == [9] and not unchanged.any()
    assert not all_finished(torch.tensor([True]), None)  # no EOS: never finished
    new = torch.tensor([[1, 9, 9, 9], [2, 3, 9, 9]])
    assert kept_columns(new, 9) == 3 and kept_columns(new, None) == 4
    assert kept_columns(torch.tensor([[1, 9], [2, 3]]), 9) == 2  # a row without EOS keeps everything


def test_request_checks_name_what_is_wrong():
    ids = torch.ones(2, 4, dtype=torch.long)
    with pytest.raises(ZayaModelError, match="max_new_tokens must be >= 0, got -1"):
        check_request(ids, -1)
    with pytest.raises(ZayaModelError, match=r"input_ids must be \[batch, seq\], got shape \(4,\)"):
        check_request(ids[0], 1)
    with pytest.raises(ZayaModelError, match=r"input_ids must be \[batch_size=3, seq\], got shape \(2, 4\)"):
        check_request(ids, 1, max_len=8, batch_size=3)
    with pytest.raises(ZayaModelError, match=r"a prompt of 4 tokens \+ max_new_tokens \(5\) exceed .* max_len 8"):
        check_request(ids, 5, max_len=8)
    check_request(ids, 4, max_len=8, batch_size=2)  # exactly fits
    with pytest.raises(ZayaModelError, match=r"attention_mask shape \(2, 3\) differs from input_ids \(2, 4\)"):
        prompt_mask(ids, torch.ones(2, 3))
    mask = prompt_mask(ids, torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]]))
    assert mask.dtype == ids.dtype and prompt_positions(mask).tolist() == [[0, 0, 0, 1], [0, 1, 2, 3]]


@pytest.fixture
def model(small_config, randomized_model):
    return randomized_model(small_config(), seed=3)


def test_every_decode_path_rejects_a_bad_request_alike(model):
    """model.generate, the decoder's generate and stream, the sharded models' forward path: the same message
    for the same mistake."""
    ids = torch.ones(2, 4, dtype=torch.long)
    decoder = ZayaDecoder(model, 2, 8)
    paths = {
        "model.generate": lambda ids, n, mask=None: model.generate(ids, n, attention_mask=mask),
        "decoder.generate": decoder.generate,
        "decoder.stream": lambda ids, n, mask=None: list(decoder.stream(ids, n, mask)),
    }
    for name, path in paths.items():
        with pytest.raises(ZayaModelError, match="max_new_tokens must be >= 0, got -1"):
            path(ids, -1)
        with pytest.raises(ZayaModelError, match=r"input_ids must be \[batch"):
            path(ids[0], 1)
        with pytest.raises(ZayaModelError, match=r"attention_mask shape \(2, 3\) differs"):
            path(ids, 1, torch.ones(2, 3))
        if name != "model.generate":  # that one sizes its decoder to the request
            with pytest.raises(ZayaModelError, match=r"a prompt of 4 tokens \+ max_new_tokens \(5\) exceed"):
                path(ids, 5)
    with pytest.raises(ZayaModelError, match=r"attention_mask shape \(2, 3\) differs"):
        _generate_through_forward(model, ids, 1, 0.0, 1.0, torch.ones(2, 3), None, None)


def test_the_stream_stops_where_generate_does_with_eos(model):
    """With EOS, the streamed tokens are generate's new columns: finished rows repeat EOS, and both stop once
    every row has finished."""
    ids = torch.randint(1, model.config.vocab_size, (2, 4), generator=torch.Generator().manual_seed(2))
    free = ZayaDecoder(model, 2, 12).generate(ids, 6)[:, 4:]
    eos = int(free[0, 1])
    decoder = ZayaDecoder(model, 2, 12, eos_token_id=eos)
    out = decoder.generate(ids, 6)[:, 4:]
    streamed = torch.stack(list(decoder.stream(ids, 6)), 1)
    assert torch.equal(streamed, out)
    assert (out[0, 1:] == eos).all()

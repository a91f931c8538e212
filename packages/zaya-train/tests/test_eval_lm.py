"""lm-eval's `zaya` model on a real trained run dir: what it loads (weights, phase, tokenizer), what it scores
(against direct forwards and a greedy loop of plain forwards), batching, and the errors it gives."""

import json

import numpy as np
import pytest
import torch

pytest.importorskip("lm_eval")
from lm_eval.api.instance import Instance
from zaya_train.errors import ZayaTrainError
from zaya_train.evals.lm import ZayaLM
from zaya_train.evals.loading import load_subject

CONTEXTS = [
    "import json\n\n\ndef dumps(obj",
    "class JSONDecodeError(ValueError):\n    ",
    'def _decode_uXXXX(s, pos):\n    esc = s[pos + 1:pos + 5]\n    if len(esc) == 4 and esc[1] not in "xX":\n',
    "from email import errors\n" * 12,  # longer than max_length below: cut from the left
    "x = 1\n\n",  # trailing whitespace moves into the continuation (lm-eval's rule)
]
CONTINUATIONS = [", *, skipkeys=False", "pass", "        try:", "from email import", "import os"]


def _requests(kind: str, args: list[tuple]) -> list[Instance]:
    return [Instance(request_type=kind, doc={}, arguments=a, idx=0) for a in args]


@pytest.fixture(scope="module")
def lm(eval_run):
    return ZayaLM(str(eval_run), device="cpu", batch_size=4, progress=False)


def _tokens(lm, text: str) -> list[int]:
    return [int(t) for t in lm.tok.encode(text)]


def test_the_latest_checkpoint_loads_in_its_phase_with_the_runs_tokenizer(eval_run):
    subject = load_subject(eval_run)
    assert (subject.step, subject.phase, subject.tokens) == (32, "long", 8 * 64 * 16 + 8 * 128 * 16)
    assert subject.model.config.rope_theta == 1e5 and not subject.model.training
    assert subject.tokenizer.describe()["kind"] == "byte"
    earlier = load_subject(eval_run / "checkpoints" / "step_00000016")  # a step folder names its step
    assert (earlier.step, earlier.phase, earlier.model.config.rope_theta) == (16, "short", 1e4)


def test_the_loaded_model_reproduces_the_trainers_validation_loss(eval_run):
    """Weights and RoPE theta as trained: the held-out loss the trainer logged at each checkpoint, recomputed."""
    from omegaconf import OmegaConf
    from zaya_config import validate_config
    from zaya_train.data.pipeline import prepare_data
    from zaya_train.data.sampler import validation_windows

    train = validate_config(OmegaConf.load(eval_run / "config.yaml"))["train"]
    data = prepare_data(train.data, train.data.cache_dir, progress=False)
    logged = {
        r["step"]: r["val_loss"] for r in map(json.loads, (eval_run / "metrics.jsonl").open()) if r["kind"] == "val"
    }
    for step, seq_len in ((16, 64), (32, 128)):
        model = load_subject(eval_run, step=step).model
        total, count = 0.0, 0
        for windows in validation_windows(data.val, seq_len, train.eval.sequences).values():
            ids = torch.from_numpy(windows.astype(np.int64))
            with torch.no_grad():
                logits = model(ids[:, :-1])
            total += float(
                torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten(), reduction="sum")
            )
            count += ids[:, 1:].numel()
        assert total / count == pytest.approx(logged[step], rel=1e-5)


def test_loglikelihood_equals_a_direct_forward(lm):
    short = ZayaLM(model=lm.model, tokenizer=lm.tok, max_length=64, batch_size=3, progress=False)
    got = short.loglikelihood(_requests("loglikelihood", list(zip(CONTEXTS, CONTINUATIONS, strict=True))))
    for (context, continuation), (logprob, greedy) in zip(zip(CONTEXTS, CONTINUATIONS, strict=True), got, strict=True):
        moved = context[len(context.rstrip()) :]  # trailing whitespace belongs to the continuation
        ctx, cont = _tokens(lm, context.rstrip()), _tokens(lm, moved + continuation)
        ids = torch.tensor([(ctx + cont)[-65:]])
        with torch.no_grad():
            logp = torch.log_softmax(lm.model(ids[:, :-1])[0], -1)[-len(cont) :]
        assert logprob == pytest.approx(float(logp.gather(1, torch.tensor(cont)[:, None]).sum()), abs=1e-4)
        assert greedy == bool((logp.argmax(-1) == torch.tensor(cont)).all())


def test_empty_context_is_the_eos_the_run_put_between_documents(lm):
    ((logprob, _),) = lm.loglikelihood(_requests("loglikelihood", [("", "import os\n")]))
    ((rolling),) = lm.loglikelihood_rolling(_requests("loglikelihood_rolling", [("import os\n",)]))
    ids = torch.tensor([[256, *_tokens(lm, "import os\n")]])
    with torch.no_grad():
        logp = torch.log_softmax(lm.model(ids[:, :-1])[0], -1).gather(1, ids[0, 1:, None]).sum()
    assert logprob == pytest.approx(float(logp), abs=1e-4) and rolling == pytest.approx(float(logp), abs=1e-4)


def _greedy(model, ids: list[int], n: int) -> list[int]:
    """Plain forwards of the whole sequence, argmax each time: no cache, no padding."""
    out = list(ids)
    with torch.no_grad():
        for _ in range(n):
            out.append(int(model(torch.tensor([out]))[0, -1].argmax()))
    return out[len(ids) :]


def test_generate_until_is_greedy_and_stops_at_the_stop_string(lm):
    args = [(c, {"until": ["\n"], "max_gen_toks": 24, "do_sample": False}) for c in CONTEXTS[:3]]
    got = lm.generate_until(_requests("generate_until", args))
    for context, text in zip(CONTEXTS[:3], got, strict=True):
        expected = lm.tok.decode(_greedy(lm.model, _tokens(lm, context), 24)).split("\n")[0]
        assert text == expected
    rounds = ZayaLM(model=lm.model, tokenizer=lm.tok, batch_size=2, gen_chunk_tokens=5, progress=False)
    assert rounds.generate_until(_requests("generate_until", args)) == got  # rounds of 5 new tokens, batches of 2


def test_batch_size_does_not_change_any_score(lm):
    pairs = [(c, k) for c in CONTEXTS for k in CONTINUATIONS]
    one = ZayaLM(model=lm.model, tokenizer=lm.tok, batch_size=1, progress=False)
    a = np.array([s for s, _ in one.loglikelihood(_requests("loglikelihood", pairs))])
    b = np.array([s for s, _ in lm.loglikelihood(_requests("loglikelihood", pairs))])
    np.testing.assert_allclose(a, b, atol=1e-4)
    docs = [(c * 20,) for c in CONTEXTS]  # several windows each
    np.testing.assert_allclose(
        one.loglikelihood_rolling(_requests("loglikelihood_rolling", docs)),
        lm.loglikelihood_rolling(_requests("loglikelihood_rolling", docs)),
        rtol=1e-5,
    )


def test_lm_eval_finds_the_model_by_name():
    from lm_eval.api.registry import get_model

    assert get_model("zaya") is ZayaLM


def test_bad_arguments_are_refused_by_name(eval_run, tmp_path):
    with pytest.raises(ZayaTrainError, match=r"unknown argument.*bogus"):
        ZayaLM(str(eval_run), bogus=1)
    with pytest.raises(ZayaTrainError, match="batch_size 'auto' is not supported"):
        ZayaLM(str(eval_run), batch_size="auto")
    with pytest.raises(ZayaTrainError, match=r"no checkpoint for step 7; there are steps \[16, 32\]"):
        ZayaLM(str(eval_run), step=7)
    with pytest.raises(ZayaTrainError, match="neither a zaya-train run dir"):
        ZayaLM(str(tmp_path))
    with pytest.raises(ZayaTrainError, match="max_length=999 exceeds the model's 256 positions"):
        ZayaLM(str(eval_run), max_length=999)
    lm = ZayaLM(str(eval_run), progress=False)
    with pytest.raises(ZayaTrainError, match="top_k are not supported"):
        lm.generate_until(_requests("generate_until", [("x", {"until": ["\n"], "top_k": 5})]))


@pytest.mark.gpu
def test_scores_on_a_gpu_equal_those_on_the_cpu(eval_run, lm):
    gpu = ZayaLM(str(eval_run), device="cuda", batch_size=4, progress=False)
    pairs = list(zip(CONTEXTS, CONTINUATIONS, strict=True))
    np.testing.assert_allclose(
        [s for s, _ in gpu.loglikelihood(_requests("loglikelihood", pairs))],
        [s for s, _ in lm.loglikelihood(_requests("loglikelihood", pairs))],
        atol=1e-3,
    )
    args = [(c, {"until": ["\n"], "max_gen_toks": 16}) for c in CONTEXTS[:3]]
    assert gpu.generate_until(_requests("generate_until", args)) == lm.generate_until(_requests("generate_until", args))

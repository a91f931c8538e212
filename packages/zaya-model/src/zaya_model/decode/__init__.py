"""Decoding ZAYA1: everything `ZayaForCausalLM.generate` and `ZayaDecoder` run, apart from the model itself.

Importing the model does not import this package (`model.generate` loads it on its first call), so training
and checkpoint code never pays for the decode stack. One concept per module:
- `request.py`: the checks every generate request passes (prompt shape and length, max_new_tokens, sampling
  settings) and how a left-padded prompt is read (its mask and positions);
- `eos.py`: the end-of-sequence fill (finished rows repeat EOS; when a request stops, what it keeps);
- `sampling.py`: greedy or top-p choice of the next token on the device;
- `static_cache.py`: `ZayaStaticCache`, the fixed-size decode state with its counters on the device;
- `step.py`: the pure functions of one step (inputs, a layer, the head) that the decoder compiles;
- `decoder.py`: `ZayaDecoder`, fixed-shape decoding replayed from one CUDA graph per step;
- `fused.py`: `FusedDecodeLayers`, each layer of a step as seven or eight Triton launches (`kernels.py`, the
  kernels; `aot.py`, their ahead-of-time build for sm_90);
- `generation.py`: `model.generate`'s choice between a `ZayaDecoder` and, for sharded models, the forward.
The public names (`ZayaDecoder`, `ZayaStaticCache`, `sample_tokens`) are exported by `zaya_model`.
"""

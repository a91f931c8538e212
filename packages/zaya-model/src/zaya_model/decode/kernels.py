"""Triton kernels of one fused decode layer: eight launches a layer (seven with the router's down-projection
inside the router kernel) instead of ~38 (issue 17).

A batch-1 decode layer of zaya1-base reads ~37 MB, 9 us at the H200's copy bandwidth; what inductor makes of
the layer is 38 kernels of 1-11 us each (BENCHMARKS.md), so launch latency and the latency of dependent
loads, not bytes, set the step time. These kernels cover the layer in eight launches, and each program
issues the loads of the weights it needs before it waits on anything (on Hopper, before the previous kernel
has finished: programmatic dependent launch, `_dependency_point`):

1. `gemv_kernel` (NORM): attention RMSNorm (each program recomputes the row's statistic) + the q|k|v
   projection;
2. `cca_kernel`: CCA's causal convolutions and q/k residual mixing, a block of output channels a program;
   one program stores the values and the new delayed value in the cache;
3. `attention_kernel`: L2 normalisation, key temperature and partial RoPE of the query head and the key,
   the key stored in the cache and the conv state shifted, then the query against a block of cache slots
   (flash decoding: the last block to finish combines the blocks' online softmax);
4. `gemv_kernel` (RESIDUAL): the output projection and ZAYA's residual scaling, in place on the fp32 stream;
5. `gemv_kernel` (NORM, DEPTH): MoE RMSNorm + the router's down-projection and depth average (it also writes
   the normed input, which the experts read); or this inside `router_kernel` (WITH_DOWN);
6. `router_kernel`: the router MLP over a few dozen programs with one grid barrier, then softmax, biased
   top-1 choice and its weight;
7. `gemv_kernel` (EXPERT, GATE_UP): the chosen expert's gate and up rows, SiLU(gate) * up;
8. `gemv_kernel` (EXPERT, RESIDUAL): its down-projection, the routing weight and the residual scaling.

Each kernel accumulates in fp32 and rounds to the weights' dtype where the eager layer's ops round (their
outputs are bf16 tensors in a bf16 model), so in fp32 they compute the eager step's function and in bf16 they
differ from it by summation order only. A skipped token (class E) loads no expert weights: its branch is 0.
Counters for the router's barrier and the attention's combine are zeroed once per step (`FusedDecodeLayers`).
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

EPILOGUE_STORE, EPILOGUE_RESIDUAL, EPILOGUE_DEPTH = 0, 1, 2


@triton.jit
def _round(x, dtype: tl.constexpr):
    """Round fp32 values to `dtype` and back, as storing an intermediate tensor of that dtype would."""
    return x.to(dtype).to(tl.float32)


@triton.jit
def _rms_normed(x, rstd, weight, dtype: tl.constexpr):
    """RMSNorm's output from fp32 x, its 1 / rms and the norm weight, rounded where the eager norm rounds."""
    return _round(_round(x * rstd, dtype) * weight, dtype)


@triton.jit
def _dependency_point(PDL: tl.constexpr, WAIT_FIRST: tl.constexpr = False):
    """With PDL (programmatic dependent launch, Hopper on): let the next kernel start (it loads its weights while
    this one runs), and wait until the previous kernel has finished and its writes are visible (WAIT_FIRST:
    wait, then release the next). What a kernel loads before this point must be data no kernel of the step
    writes: weights, and cache slots of earlier steps."""
    if PDL:
        if WAIT_FIRST:
            gdc_wait()
            gdc_launch_dependents()
        else:
            gdc_launch_dependents()
            gdc_wait()


@triton.jit
def _weight_tile(w_base, offs_n, offs_k, keep, k_mask, N: tl.constexpr, K: tl.constexpr, GATE_UP: tl.constexpr):
    """W[offs_n, offs_k] (and, with GATE_UP, the up rows N further on) as one load each."""
    rows = w_base + offs_n[:, None].to(tl.int64) * K + offs_k[None, :]
    mask = keep[:, None] & k_mask[None, :]
    w = tl.load(rows, mask=mask, other=0.0)
    up = w
    if GATE_UP:
        up = tl.load(rows + N * K, mask=mask, other=0.0)
    return w, up


@triton.jit
def _input_chunk(x_row, norm_w_ptr, offs_k, k_mask, rstd, NORM: tl.constexpr, dt: tl.constexpr):
    """x[offs_k] in fp32, RMS-normalised (rstd, weight norm_w) and rounded as the eager norm rounds when NORM."""
    xv = tl.load(x_row + offs_k, mask=k_mask, other=0.0).to(tl.float32)
    if NORM:
        nw = tl.load(norm_w_ptr + offs_k, mask=k_mask, other=0.0).to(tl.float32)
        xv = _rms_normed(xv, rstd, nw, dt)
    return xv


@triton.jit
def gemv_kernel(
    x_ptr, w_ptr, bias_ptr, out_ptr,
    norm_w_ptr, xn_ptr,
    choice_ptr, route_w_ptr,
    res_ptr, bb_ptr, bs_ptr, rb_ptr, rs_ptr,
    depth_ptr,
    stride_xb, stride_we, stride_ob, num_experts, eps,
    N: tl.constexpr, K: tl.constexpr, NORM: tl.constexpr, WRITE_XN: tl.constexpr, HAS_BIAS: tl.constexpr, EXPERT: tl.constexpr,
    GATE_UP: tl.constexpr, EPILOGUE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    CHOICE_READY: tl.constexpr, WAIT_FIRST: tl.constexpr, PDL: tl.constexpr,
):  # fmt: skip
    """out[row, n] = W[n, :] @ x[row] for a block of n (W [N, K] row-major; K contiguous).

    The program issues the load of its first [BLOCK_N, BLOCK_K] weight tile (all of its weights when
    BLOCK_K >= K) before anything that waits on memory, so the tile's latency overlaps the input's and the
    norm's. NORM: x is the fp32 residual stream; it is RMS-normalised (weight norm_w) on the fly, and with
    WRITE_XN the normed row is also stored in xn (each program stores some of its chunks). EXPERT: W is
    expert choice[row] of a stack (stride_we apart); class E (skip) reads nothing. With PDL and WAIT_FIRST
    the gate/up GEMV waits for the router before it lets the next kernel start, so the next (CHOICE_READY:
    the down-projection) can read the choice and load its expert's weights while this one runs. GATE_UP: rows n and N + n
    are the gate and up projections, out = SiLU(gate) * up. Epilogues: STORE out (+ bias); RESIDUAL the branch
    (times the routing weight for an expert) through ZAYA's residual scaling into the fp32 stream res;
    DEPTH the router state out = W x + b + out_before * depth (the depth average, in place)."""
    row = tl.program_id(0)
    pid = tl.program_id(1)
    dt = w_ptr.dtype.element_ty
    offs_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    x_row = x_ptr + row * stride_xb
    w_base = w_ptr
    keep = n_mask
    if EXPERT:
        if CHOICE_READY:  # the previous kernel released this one only once the router had finished
            expert = tl.load(choice_ptr + row, cache_modifier=".cg")
        else:  # which weights depends on the router's choice: wait for it
            _dependency_point(PDL, WAIT_FIRST)
            expert = tl.load(choice_ptr + row)
        keep = n_mask & (expert < num_experts)  # the skip class reads no weights
        w_base = w_ptr + tl.minimum(expert, num_experts - 1).to(tl.int64) * stride_we
    offs_k = tl.arange(0, BLOCK_K)
    k_mask = offs_k < K
    w, w_up = _weight_tile(w_base, offs_n, offs_k, keep, k_mask, N, K, GATE_UP)
    if (not EXPERT) or CHOICE_READY:
        _dependency_point(PDL)
    rstd = 1.0
    if NORM:
        squares = tl.zeros([BLOCK_K], dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            xv = tl.load(x_row + k0 + offs_k, mask=k0 + offs_k < K, other=0.0).to(tl.float32)
            squares += xv * xv
        rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / K + eps)
    xv = _input_chunk(x_row, norm_w_ptr, offs_k, k_mask, rstd, NORM, dt)
    if WRITE_XN:  # noqa: SIM102 (a constexpr test, then a runtime one: Triton keeps them apart)
        if pid == 0:
            tl.store(xn_ptr + row * K + offs_k, xv.to(dt), mask=k_mask)
    acc = w.to(tl.float32) * xv[None, :]
    acc_up = w_up.to(tl.float32) * xv[None, :]
    for k0 in range(BLOCK_K, K, BLOCK_K):  # K beyond the first tile (none when BLOCK_K >= K)
        offs = k0 + offs_k
        mask = offs < K
        w, w_up = _weight_tile(w_base, offs_n, offs, keep, mask, N, K, GATE_UP)
        xv = _input_chunk(x_row, norm_w_ptr, offs, mask, rstd, NORM, dt)
        if WRITE_XN:  # noqa: SIM102
            if (k0 // BLOCK_K) % tl.num_programs(1) == pid:
                tl.store(xn_ptr + row * K + offs, xv.to(dt), mask=mask)
        acc += w.to(tl.float32) * xv[None, :]
        acc_up += w_up.to(tl.float32) * xv[None, :]
    y = tl.sum(acc, axis=1)
    if HAS_BIAS:
        y += tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)
    y = _round(y, dt)
    out_row = out_ptr + row * stride_ob + offs_n
    if GATE_UP:
        gate, up = y, _round(tl.sum(acc_up, axis=1), dt)
        act = _round(_round(gate / (1.0 + tl.exp(-gate)), dt) * up, dt)
        tl.store(out_row, act.to(dt), mask=n_mask)
    elif EPILOGUE == 0:
        tl.store(out_row, y.to(dt), mask=n_mask)
    elif EPILOGUE == 1:
        if EXPERT:
            y = _round(y * _round(tl.load(route_w_ptr + row).to(tl.float32), dt), dt)
        bb = tl.load(bb_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)
        bs = tl.load(bs_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)
        rb = tl.load(rb_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)
        rs = tl.load(rs_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)
        res = tl.load(res_ptr + row * N + offs_n, mask=n_mask, other=0.0)
        tl.store(res_ptr + row * N + offs_n, _round(_round(y + bb, dt) * bs, dt) + (res + rb) * rs, mask=n_mask)
    else:
        prev = tl.load(out_row, mask=n_mask, other=0.0).to(tl.float32)
        depth = tl.load(depth_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)
        tl.store(out_row, _round(y + _round(prev * depth, dt), dt).to(dt), mask=n_mask)


@triton.jit
def _grid_barrier(counter_ptr, programs):
    """Wait until `programs` programs have arrived at this counter (zeroed before the launch). Every program of
    the grid must be resident at once: launch at most one program per SM's worth of resources."""
    tl.debug_barrier()  # every thread's stores are issued before the arrival publishes them
    tl.atomic_add(counter_ptr, 1, sem="release")
    while tl.atomic_add(counter_ptr, 0, sem="acquire") < programs:
        pass


@triton.jit
def _last_to_arrive(counter_ptr, programs):
    """True in the last of `programs` programs to arrive at this counter (zeroed before the launch); what the
    others stored before arriving is visible to it."""
    tl.debug_barrier()
    return tl.atomic_add(counter_ptr, 1, sem="acq_rel") == programs - 1


@triton.jit
def cca_kernel(
    qkv_ptr, state_ptr, delayed_ptr,
    dw_w_ptr, dw_b_ptr, gw_ptr, gb_ptr,
    mixed_ptr, values_ptr, slot_ptr, max_len,
    H: tl.constexpr, KV: tl.constexpr, D_HEAD: tl.constexpr, K0: tl.constexpr, K1: tl.constexpr,
    BLOCK_O: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K1: tl.constexpr, BLOCK_V: tl.constexpr, PDL: tl.constexpr,
):  # fmt: skip
    """CCA's convolutions and residual mix. Program (row, i): for i < (H + KV) * chunks, BLOCK_O output
    channels of head g = i // chunks (a query head for g < H, key head g - H after); the last i the values.

    A head program loads its rows of the grouped conv weight first, convolves the head's d channels
    depthwise over the last P = (K0 - 1) + (K1 - 1) inputs (the conv state) and the current one (qkv), applies
    the grouped conv for its outputs and adds the residual mix, storing conv + mix in `mixed` [B, (H+KV) d]
    (normalisation, temperature and RoPE need the whole head: `attention_kernel` does them; it also shifts
    the conv state, which every chunk of a head reads here). The values program stores the KV value heads
    ([v_current | previous delayed value]) in the cache at `slot` and the new delayed value."""
    row = tl.program_id(0)
    i = tl.program_id(1)
    dt = qkv_ptr.dtype.element_ty
    G: tl.constexpr = H // KV
    Q_SIZE: tl.constexpr = H * D_HEAD
    C: tl.constexpr = (H + KV) * D_HEAD
    V: tl.constexpr = KV * D_HEAD // 2
    P: tl.constexpr = K0 - 1 + K1 - 1
    CHUNKS: tl.constexpr = (D_HEAD + BLOCK_O - 1) // BLOCK_O
    slot = tl.load(slot_ptr)
    qkv_row = qkv_ptr + row * (C + 2 * V)
    if i == (H + KV) * CHUNKS:
        _dependency_point(PDL)
        offs = tl.arange(0, BLOCK_V)
        v_mask = offs < 2 * V
        is_current = offs < V
        value = tl.where(
            is_current,
            tl.load(qkv_row + C + offs, mask=v_mask & is_current, other=0.0),
            tl.load(delayed_ptr + row * V + offs - V, mask=v_mask & (offs >= V), other=0.0),
        )
        tl.debug_barrier()  # every thread has read the old delayed value before any writes the new one
        head, lane = offs // D_HEAD, offs % D_HEAD
        dest = values_ptr + ((row * KV + head).to(tl.int64) * max_len + slot) * D_HEAD + lane
        tl.store(dest, value, mask=v_mask)
        new_delayed = tl.load(qkv_row + C + V + offs, mask=is_current, other=0.0)
        tl.store(delayed_ptr + row * V + offs, new_delayed, mask=is_current)
    else:
        g = i // CHUNKS
        offs_o = (i % CHUNKS) * BLOCK_O + tl.arange(0, BLOCK_O)
        o_mask = offs_o < D_HEAD
        offs_i = tl.arange(0, BLOCK_D)
        i_mask = offs_i < D_HEAD
        offs_m = tl.arange(0, BLOCK_K1)
        m_mask = offs_m < K1
        # grouped conv weight [C, d, K1]: this program's outputs, every input channel and tap, loaded first
        w = tl.load(
            gw_ptr + (g * D_HEAD + offs_o)[:, None, None] * (D_HEAD * K1) + offs_i[None, :, None] * K1
            + offs_m[None, None, :],
            mask=o_mask[:, None, None] & i_mask[None, :, None] & m_mask[None, None, :],
            other=0.0,
        )  # fmt: skip
        channels = g * D_HEAD + offs_i
        dw_b = tl.load(dw_b_ptr + channels, mask=i_mask, other=0.0).to(tl.float32)
        _dependency_point(PDL)
        # the depthwise conv at times t - (K1 - 1) + m: mid[i, m] = b[i] + sum_j w_dw[i, j] * x[i, t - P + m + j]
        hist_mask = i_mask[:, None] & m_mask[None, :]
        mid = tl.zeros([BLOCK_D, BLOCK_K1], dtype=tl.float32)
        for j in tl.static_range(K0):
            tau = offs_m + j  # P: the current input
            in_state = state_ptr + row * (P * C) + tau[None, :] * C + channels[:, None]
            current = qkv_row + channels[:, None] + 0 * tau[None, :]
            hist = tl.load(tl.where(tau[None, :] < P, in_state, current), mask=hist_mask, other=0.0).to(tl.float32)
            dw = tl.load(dw_w_ptr + channels * K0 + j, mask=i_mask, other=0.0).to(tl.float32)
            mid += _round(dw[:, None] * hist, dt)
        mid = _round(_round(mid, dt) + dw_b[:, None], dt)
        conv = tl.sum(tl.sum(w.to(tl.float32) * mid[None, :, :], axis=2), axis=1)
        kv = tl.where(g < H, g // G, g - H)
        out = _cca_finish(conv, g * D_HEAD + offs_o, offs_o, o_mask, qkv_row, gb_ptr, g < H, kv, G, D_HEAD, Q_SIZE, dt)
        tl.store(mixed_ptr + row * C + g * D_HEAD + offs_o, out.to(dt), mask=o_mask)


@triton.jit
def _cca_finish(
    acc,
    channels,
    lanes,
    mask,
    qkv_row,
    gb_ptr,
    is_query,
    kv,
    G: tl.constexpr,
    D_HEAD: tl.constexpr,
    Q_SIZE: tl.constexpr,
    dt: tl.constexpr,
):
    """conv output (+ bias) + the residual mix, for some lanes of one head.

    Query head h: (q_h + k_kv) / 2. Key head kv: the mean of that over the kv group's G query heads."""
    conv = _round(_round(acc, dt) + tl.load(gb_ptr + channels, mask=mask, other=0.0).to(tl.float32), dt)
    key_raw = tl.load(qkv_row + Q_SIZE + kv * D_HEAD + lanes, mask=mask, other=0.0).to(tl.float32)
    if is_query:
        query_raw = tl.load(qkv_row + channels, mask=mask, other=0.0).to(tl.float32)
        mix = _round(_round(query_raw + key_raw, dt) * 0.5, dt)
    else:
        total = tl.zeros_like(acc)
        for gq in tl.static_range(G):
            query_raw = tl.load(qkv_row + (kv * G + gq) * D_HEAD + lanes, mask=mask, other=0.0).to(tl.float32)
            total += _round(_round(query_raw + key_raw, dt) * 0.5, dt)
        mix = _round(total / G, dt)
    return _round(conv + mix, dt)


@triton.jit
def _finish_head(
    head_ptr, lanes, partners, mask, rotated, sign, cos, sin, temperature, eps, D_HEAD: tl.constexpr, dt: tl.constexpr
):
    """One head of `mixed` L2-normalised to norm sqrt(d), times `temperature` (keys), partial RoPE
    (rotate-half: lane l < ROT/2 pairs with l + ROT/2), each step rounded as the eager ops round it."""
    x = tl.load(head_ptr + lanes, mask=mask, other=0.0).to(tl.float32)
    xp = tl.load(head_ptr + partners, mask=mask, other=0.0).to(tl.float32)
    factor = _round((D_HEAD**0.5) / tl.maximum(_round(tl.sqrt(tl.sum(x * x, axis=0)), dt), eps), dt)
    x, xp = _round(x * factor, dt), _round(xp * factor, dt)
    x, xp = _round(x * temperature, dt), _round(xp * temperature, dt)
    rot = _round(_round(x * cos, dt) + _round(sign * xp * sin, dt), dt)
    return tl.where(rotated, rot, x)


@triton.jit
def _shift_state(qkv_row, state_row, channels, mask, P: tl.constexpr, C: tl.constexpr):
    """Shift some channels of the conv state one step: state[tau] = state[tau + 1], state[P - 1] = qkv."""
    for tau in tl.static_range(P):
        if tau + 1 == P:
            newer = tl.load(qkv_row + channels, mask=mask, other=0.0)
        else:
            newer = tl.load(state_row + (tau + 1) * C + channels, mask=mask, other=0.0)
        tl.debug_barrier()  # read by every thread before any overwrites it
        tl.store(state_row + tau * C + channels, newer, mask=mask)


@triton.jit
def attention_kernel(
    mixed_ptr, qkv_ptr, state_ptr, temp_ptr, cos_ptr, sin_ptr,
    keys_ptr, values_ptr, valid_ptr, slot_ptr,
    part_acc_ptr, part_ml_ptr, counter_ptr, out_ptr, max_len, scale, eps,
    H: tl.constexpr, KV: tl.constexpr, D_HEAD: tl.constexpr, ROT: tl.constexpr, P: tl.constexpr,
    SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_SPLITS: tl.constexpr,
    PDL: tl.constexpr,
):  # fmt: skip
    """Program (row, h, split): query head h against cache slots [split * BLOCK_S, ...) up to `slot` (flash
    decoding; splits past `slot` do nothing). Each finishes its query and this token's key from `mixed`
    (`_finish_head`) and scores the key at `slot` from registers; split 0 of a group's first head stores that
    key in the cache, split 0 of every head shifts its channels of the conv state. With more than one active
    split, each stores its (max, sum, weighted values) and the last to arrive combines them. Softmax and sums
    in fp32; out [B, H * d] in the values' dtype."""
    row = tl.program_id(0)
    h = tl.program_id(1)
    split = tl.program_id(2)
    slot = tl.load(slot_ptr)
    s0 = split * BLOCK_S
    if s0 <= slot:
        dt = values_ptr.dtype.element_ty
        G: tl.constexpr = H // KV
        C: tl.constexpr = (H + KV) * D_HEAD
        HALF: tl.constexpr = ROT // 2
        kv = h // G
        lanes = tl.arange(0, BLOCK_D)
        mask = lanes < D_HEAD
        rotated = lanes < ROT
        partners = tl.where(lanes < HALF, lanes + HALF, tl.where(rotated, lanes - HALF, lanes))
        sign = tl.where(lanes < HALF, -1.0, 1.0)
        cos = _round(tl.load(cos_ptr + row * ROT + lanes, mask=rotated, other=0.0), dt)
        sin = _round(tl.load(sin_ptr + row * ROT + lanes, mask=rotated, other=0.0), dt)
        temperature = _round(tl.load(temp_ptr + kv).to(tl.float32), dt)
        # the slots of earlier steps, loaded before waiting on the previous kernel
        head = (row * KV + kv).to(tl.int64) * max_len * D_HEAD
        offs_s = s0 + tl.arange(0, BLOCK_S)
        is_current = offs_s == slot
        earlier = offs_s < slot
        valid = (tl.load(valid_ptr + row * max_len + offs_s, mask=earlier, other=0) != 0) & earlier
        tile = head + offs_s[:, None] * D_HEAD + lanes[None, :]
        k = tl.load(keys_ptr + tile, mask=valid[:, None] & mask[None, :], other=0.0).to(tl.float32)
        v = tl.load(values_ptr + tile, mask=valid[:, None] & mask[None, :], other=0.0).to(tl.float32)
        _dependency_point(PDL)
        mixed_row = mixed_ptr + row * C
        q = _finish_head(mixed_row + h * D_HEAD, lanes, partners, mask, rotated, sign, cos, sin, 1.0, eps, D_HEAD, dt)
        key = _finish_head(
            mixed_row + (H + kv) * D_HEAD, lanes, partners, mask, rotated, sign, cos, sin, temperature, eps, D_HEAD, dt
        )
        if split == 0:
            qkv_row = qkv_ptr + row * (C + KV * D_HEAD)
            state_row = state_ptr + row * (P * C)
            _shift_state(qkv_row, state_row, h * D_HEAD + lanes, mask, P, C)
            if h % G == 0:
                tl.store(keys_ptr + head + slot * D_HEAD + lanes, key.to(dt), mask=mask)
                _shift_state(qkv_row, state_row, (H + kv) * D_HEAD + lanes, mask, P, C)
        # this token's key from registers, its value as the CCA kernel stored it
        scores = tl.where(is_current, tl.sum(key * q, axis=0), tl.sum(k * q[None, :], axis=1))
        scores = tl.where(valid | is_current, scores * scale, float("-inf"))
        m = tl.maximum(tl.max(scores, axis=0), -1.0e30)  # a split of padding only: weight 0, not NaN
        p = tl.exp(scores - m)
        current = (s0 <= slot) & (slot < s0 + BLOCK_S)
        v_now = tl.load(values_ptr + head + slot * D_HEAD + lanes, mask=mask & current, other=0.0).to(tl.float32)
        p_now = tl.sum(tl.where(is_current, p, 0.0), axis=0)
        acc = tl.sum(p[:, None] * v, axis=0) + p_now * v_now
        total = tl.sum(p, axis=0)
        active = slot // BLOCK_S + 1
        out = out_ptr + (row * H + h) * D_HEAD + lanes
        if active == 1:
            tl.store(out, (acc / total).to(dt), mask=mask)
        else:
            part = (row * H + h) * SPLITS
            tl.store(part_acc_ptr + (part + split) * D_HEAD + lanes, acc, mask=mask)
            tl.store(part_ml_ptr + (part + split) * 2 + tl.arange(0, 2), tl.where(tl.arange(0, 2) == 0, m, total))
            if _last_to_arrive(counter_ptr + row * H + h, active):
                best = tl.full([1], -1.0e30, dtype=tl.float32)
                combined = tl.zeros([BLOCK_D], dtype=tl.float32)
                denominator = tl.zeros([1], dtype=tl.float32)
                for c0 in range(0, active, BLOCK_SPLITS):
                    splits = c0 + tl.arange(0, BLOCK_SPLITS)
                    live = splits < active
                    ms = tl.load(part_ml_ptr + (part + splits) * 2, mask=live, other=-1.0e30, cache_modifier=".cg")
                    ls = tl.load(part_ml_ptr + (part + splits) * 2 + 1, mask=live, other=0.0, cache_modifier=".cg")
                    accs = tl.load(
                        part_acc_ptr + (part + splits)[:, None] * D_HEAD + lanes[None, :],
                        mask=live[:, None] & mask[None, :],
                        other=0.0,
                        cache_modifier=".cg",
                    )
                    new_best = tl.maximum(best, tl.max(ms, axis=0))
                    weights = tl.exp(ms - new_best)
                    rescale = tl.exp(best - new_best)
                    combined = combined * rescale + tl.sum(weights[:, None] * accs, axis=0)
                    denominator = denominator * rescale + tl.sum(weights * ls, axis=0)
                    best = new_best
                tl.store(out, (combined / denominator).to(dt), mask=mask)


@triton.jit
def _gelu(x):
    return 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))


@triton.jit
def router_kernel(
    resid_ptr, moe_norm_w_ptr, normed_ptr, down_w_ptr, down_b_ptr, depth_ptr,
    state_ptr, norm_w_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, wo_ptr, bias_ptr,
    h1_ptr, h2_ptr, counter_ptr, choice_ptr, weight_ptr,
    rows, D, R, CLASSES, num_experts, moe_eps, eps,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, ROWS_PER: tl.constexpr, PROGRAMS: tl.constexpr,
    WITH_DOWN: tl.constexpr, DEPTH: tl.constexpr, BLOCK_DM: tl.constexpr, XN_CHUNK: tl.constexpr,
    PDL: tl.constexpr,
):  # fmt: skip
    """The router for every batch row, spread over PROGRAMS programs of ROWS_PER hidden units each.

    WITH_DOWN: first MoE RMSNorm of the fp32 stream (each program stores its slice of the normed row for the
    experts) and the router's down-projection + depth average (DEPTH) into the router state, then a grid
    barrier (else the state comes from a GEMV launch). Then RMSNorm(state) -> GELU(fc1) -> grid barrier ->
    GELU(fc2) -> the last program to arrive: logits -> softmax (fp32) -> argmax of probs + balancing biases
    (top-1) -> choice [B] (int64) and its probability [B] (0 for the skip class). Every program loads all the
    weights it will use before it waits on anything; at most one program per SM (the barriers need them all
    resident)."""
    p = tl.program_id(0)
    dt = w1_ptr.dtype.element_ty
    offs_r = tl.arange(0, BLOCK_R)
    r_mask = offs_r < R
    mine = p * ROWS_PER + tl.arange(0, ROWS_PER)
    mine_mask = mine < R
    tile_mask = mine_mask[:, None] & r_mask[None, :]
    if WITH_DOWN:
        offs_d = tl.arange(0, BLOCK_DM)
        d_mask = offs_d < D
        wd = tl.load(
            down_w_ptr + mine[:, None] * D + offs_d[None, :], mask=mine_mask[:, None] & d_mask[None, :], other=0.0
        )
        bd = tl.load(down_b_ptr + mine, mask=mine_mask, other=0.0).to(tl.float32)
        if DEPTH:
            depth = tl.load(depth_ptr + mine, mask=mine_mask, other=0.0).to(tl.float32)
        mnw = tl.load(moe_norm_w_ptr + offs_d, mask=d_mask, other=0.0).to(tl.float32)
        my_slice = p * XN_CHUNK + tl.arange(0, XN_CHUNK)
        slice_mask = my_slice < D
        mnw_slice = tl.load(moe_norm_w_ptr + my_slice, mask=slice_mask, other=0.0).to(tl.float32)
    w1 = tl.load(w1_ptr + mine[:, None] * R + offs_r[None, :], mask=tile_mask, other=0.0).to(tl.float32)
    w2 = tl.load(w2_ptr + mine[:, None] * R + offs_r[None, :], mask=tile_mask, other=0.0).to(tl.float32)
    offs_c = tl.arange(0, BLOCK_C)
    c_mask = offs_c < CLASSES
    wo = tl.load(wo_ptr + offs_c[:, None] * R + offs_r[None, :], mask=c_mask[:, None] & r_mask[None, :], other=0.0)
    b1 = tl.load(b1_ptr + mine, mask=mine_mask, other=0.0).to(tl.float32)
    b2 = tl.load(b2_ptr + mine, mask=mine_mask, other=0.0).to(tl.float32)
    nw = tl.load(norm_w_ptr + offs_r, mask=r_mask, other=0.0).to(tl.float32)
    biases = tl.load(bias_ptr + offs_c, mask=c_mask, other=0.0)
    _dependency_point(PDL)
    if WITH_DOWN:
        for row in range(rows):
            x = tl.load(resid_ptr + row * D + offs_d, mask=d_mask, other=0.0)
            rstd_x = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + moe_eps)
            xn = _rms_normed(x, rstd_x, mnw, dt)
            xs = tl.load(resid_ptr + row * D + my_slice, mask=slice_mask, other=0.0)
            tl.store(normed_ptr + row * D + my_slice, _rms_normed(xs, rstd_x, mnw_slice, dt).to(dt), mask=slice_mask)
            y = _round(tl.sum(wd.to(tl.float32) * xn[None, :], axis=1) + bd, dt)
            if DEPTH:
                prev = tl.load(state_ptr + row * R + mine, mask=mine_mask, other=0.0).to(tl.float32)
                y = _round(y + _round(prev * depth, dt), dt)
            tl.store(state_ptr + row * R + mine, y.to(dt), mask=mine_mask)
        _grid_barrier(counter_ptr + 2, PROGRAMS)
    for row in range(rows):
        state = tl.load(state_ptr + row * R + offs_r, mask=r_mask, other=0.0, cache_modifier=".cg").to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(state * state, axis=0) / R + eps)
        normed = _rms_normed(state, rstd, nw, dt)
        h1 = _round(_gelu(_round(tl.sum(w1 * normed[None, :], axis=1) + b1, dt)), dt)
        tl.store(h1_ptr + row * R + mine, h1, mask=mine_mask)
    _grid_barrier(counter_ptr, PROGRAMS)
    for row in range(rows):
        h1 = tl.load(h1_ptr + row * R + offs_r, mask=r_mask, other=0.0, cache_modifier=".cg")
        h2 = _round(_gelu(_round(tl.sum(w2 * h1[None, :], axis=1) + b2, dt)), dt)
        tl.store(h2_ptr + row * R + mine, h2, mask=mine_mask)
    if _last_to_arrive(counter_ptr + 1, PROGRAMS):
        for row in range(rows):
            h2 = tl.load(h2_ptr + row * R + offs_r, mask=r_mask, other=0.0, cache_modifier=".cg")
            logits = tl.sum(wo.to(tl.float32) * h2[None, :], axis=1)
            logits = tl.where(c_mask, _round(logits, dt), float("-inf"))
            e = tl.exp(logits - tl.max(logits, axis=0))
            probs = e / tl.sum(e, axis=0)
            scores = tl.where(c_mask, probs + biases, float("-inf"))
            choice = tl.argmax(scores, axis=0)
            weight = tl.sum(tl.where(offs_c == choice, probs, 0.0), axis=0)
            weight = tl.where(choice == num_experts, 0.0, weight)
            tl.store(choice_ptr + row, choice.to(tl.int64))
            tl.store(weight_ptr + row, weight)

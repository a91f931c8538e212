"""Triton kernels of one fused decode layer: eight launches a layer instead of ~38 (issue 17).

A batch-1 decode layer of zaya1-base reads ~37 MB, 9 us at the H200's copy bandwidth; what inductor makes of
the layer is 38 kernels of 1-11 us each (BENCHMARKS.md), so launch latency and tail effects, not bytes, set
the step time. These kernels cover the layer with the fewest launches its data dependencies allow, each
dependency being a reduction over a whole vector that every program needs:

1. `gemv_kernel` (NORM): attention RMSNorm (each program recomputes the row's statistic) + the q|k|v
   projection;
2. `cca_kernel`: CCA's causal convolutions, the q/k residual mixing, L2 normalisation, key temperature and
   partial RoPE for every head, writing the queries to a buffer and the key, value, conv state and delayed
   value straight into the static cache;
3. `attention_kernel`: one query head against the valid cache slots (online softmax in fp32);
4. `gemv_kernel` (RESIDUAL): the output projection and ZAYA's residual scaling, in place on the fp32 stream;
5. `gemv_kernel` (NORM, DEPTH): MoE RMSNorm + the router's down-projection and depth average (it also writes
   the normed input, which the experts read);
6. `router_kernel`: the router MLP, softmax, biased top-1 choice and its weight, one program a row;
7. `gemv_kernel` (EXPERT, GATE_UP): the chosen expert's gate and up rows, SiLU(gate) * up;
8. `gemv_kernel` (EXPERT, RESIDUAL): its down-projection, the routing weight and the residual scaling.

Each kernel accumulates in fp32 and rounds to the weights' dtype where the eager layer's ops round (their
outputs are bf16 tensors in a bf16 model), so in fp32 they compute the eager step's function and in bf16 they
differ from it by summation order only. A skipped token (class E) loads no expert weights: its branch is 0.
"""

from __future__ import annotations

import triton
import triton.language as tl

EPILOGUE_STORE, EPILOGUE_RESIDUAL, EPILOGUE_DEPTH = 0, 1, 2


@triton.jit
def _round(x, dtype: tl.constexpr):
    """Round fp32 values to `dtype` and back, as storing an intermediate tensor of that dtype would."""
    return x.to(dtype).to(tl.float32)


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
):  # fmt: skip
    """out[row, n] = W[n, :] @ x[row] for a block of n (W [N, K] row-major; K contiguous).

    NORM: x is the fp32 residual stream; it is RMS-normalised (weight norm_w) on the fly, and with WRITE_XN the
    normed row is also stored in xn (each program stores some of its chunks). EXPERT: W is expert
    choice[row] of a stack (stride_we apart); class E (skip) reads nothing. GATE_UP: rows n and N + n are
    the gate and up projections, out = SiLU(gate) * up. Epilogues: STORE out (+ bias); RESIDUAL the branch
    (times the routing weight for an expert) through ZAYA's residual scaling into the fp32 stream res;
    DEPTH the router state out = W x + b + out_before * depth (the depth average, in place)."""
    row = tl.program_id(0)
    pid = tl.program_id(1)
    dt = w_ptr.dtype.element_ty
    offs_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = offs_n < N
    x_row = x_ptr + row * stride_xb
    rstd = 1.0
    if NORM:
        squares = tl.zeros([BLOCK_K], dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            offs_k = k0 + tl.arange(0, BLOCK_K)
            xv = tl.load(x_row + offs_k, mask=offs_k < K, other=0.0).to(tl.float32)
            squares += xv * xv
        rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / K + eps)
    w_base = w_ptr
    keep = n_mask
    if EXPERT:
        expert = tl.load(choice_ptr + row)
        keep = n_mask & (expert < num_experts)  # the skip class reads no weights
        w_base = w_ptr + tl.minimum(expert, num_experts - 1).to(tl.int64) * stride_we
    acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    acc_up = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        k_mask = offs_k < K
        xv = tl.load(x_row + offs_k, mask=k_mask, other=0.0).to(tl.float32)
        if NORM:
            nw = tl.load(norm_w_ptr + offs_k, mask=k_mask, other=0.0).to(tl.float32)
            xv = _round(_round(xv * rstd, dt) * nw, dt)
            if WRITE_XN:  # noqa: SIM102 (a constexpr test, then a runtime one: Triton keeps them apart)
                if (k0 // BLOCK_K) % tl.num_programs(1) == pid:
                    tl.store(xn_ptr + row * K + offs_k, xv.to(dt), mask=k_mask)
        w_mask = keep[:, None] & k_mask[None, :]
        w_rows = w_base + offs_n[:, None].to(tl.int64) * K + offs_k[None, :]
        acc += tl.load(w_rows, mask=w_mask, other=0.0).to(tl.float32) * xv[None, :]
        if GATE_UP:
            acc_up += tl.load(w_rows + N * K, mask=w_mask, other=0.0).to(tl.float32) * xv[None, :]
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
def _history(qkv_row, state_row, channels, mask, tau: tl.constexpr, P: tl.constexpr, C: tl.constexpr):
    """The q|k projection of `channels` at time t - P + tau (tau = P: the current token, from qkv)."""
    if tau == P:
        x = tl.load(qkv_row + channels, mask=mask, other=0.0)
    else:
        x = tl.load(state_row + tau * C + channels, mask=mask, other=0.0)
    return x.to(tl.float32)


@triton.jit
def _grouped_conv_rows(
    gw_ptr, rows, row_mask, offs_i, i_mask, mid, m: tl.constexpr, D_HEAD: tl.constexpr, K1: tl.constexpr
):
    """sum_i conv_grouped_weight[rows, i, m] * mid[i] (fp32)."""
    w = tl.load(
        gw_ptr + rows[:, None] * (D_HEAD * K1) + offs_i[None, :] * K1 + m,
        mask=row_mask[:, None] & i_mask[None, :],
        other=0.0,
    )
    return tl.sum(w.to(tl.float32) * mid[None, :], axis=1)


@triton.jit
def cca_kernel(
    qkv_ptr, state_ptr, delayed_ptr,
    dw_w_ptr, dw_b_ptr, gw_ptr, gb_ptr, temp_ptr, cos_ptr, sin_ptr,
    q_out_ptr, keys_ptr, values_ptr, slot_ptr,
    max_len, eps,
    H: tl.constexpr, KV: tl.constexpr, D_HEAD: tl.constexpr, K0: tl.constexpr, K1: tl.constexpr,
    ROT: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_HALF: tl.constexpr, BLOCK_PASS: tl.constexpr,
    BLOCK_V: tl.constexpr,
):  # fmt: skip
    """Program (row, g): g < H the query head g, H <= g < H + KV key head g - H, g = H + KV the values.

    A head program convolves its d channels over the last P = (K0 - 1) + (K1 - 1) inputs and the current one,
    adds the residual mix, normalises, rotates, and stores the query (q_out [B, H, d]) or the key (the cache
    at `slot`); then it shifts its channels of the conv state. The values program stores the K value heads
    ([v_current | previous delayed value]) at `slot` and the new delayed value."""
    row = tl.program_id(0)
    g = tl.program_id(1)
    dt = qkv_ptr.dtype.element_ty
    G: tl.constexpr = H // KV
    Q_SIZE: tl.constexpr = H * D_HEAD
    C: tl.constexpr = (H + KV) * D_HEAD
    V: tl.constexpr = KV * D_HEAD // 2
    P: tl.constexpr = K0 - 1 + K1 - 1
    HALF: tl.constexpr = ROT // 2
    slot = tl.load(slot_ptr)
    qkv_row = qkv_ptr + row * (C + 2 * V)
    state_row = state_ptr + row * (P * C)
    if g == H + KV:
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
        is_query = g < H
        kv = tl.where(is_query, g // G, g - H)
        offs_i = tl.arange(0, BLOCK_D)
        i_mask = offs_i < D_HEAD
        channels = g * D_HEAD + offs_i
        # the grouped conv: out[o] = b[o] + sum_{m, i} W[o, i, m] * mid_m[i], mid_m the depthwise conv at
        # time t - (K1 - 1) + m; outputs split into the rotated halves and the pass-through part
        lo = tl.arange(0, BLOCK_HALF)
        lo_mask = lo < HALF
        hi = HALF + lo
        rest = ROT + tl.arange(0, BLOCK_PASS)
        rest_mask = rest < D_HEAD
        acc_lo = tl.zeros([BLOCK_HALF], dtype=tl.float32)
        acc_hi = tl.zeros([BLOCK_HALF], dtype=tl.float32)
        acc_rest = tl.zeros([BLOCK_PASS], dtype=tl.float32)
        dw_b = tl.load(dw_b_ptr + channels, mask=i_mask, other=0.0).to(tl.float32)
        for m in tl.static_range(K1):
            mid = tl.zeros([BLOCK_D], dtype=tl.float32)
            for j in tl.static_range(K0):
                w = tl.load(dw_w_ptr + channels * K0 + j, mask=i_mask, other=0.0).to(tl.float32)
                mid += _round(w * _history(qkv_row, state_row, channels, i_mask, m + j, P, C), dt)
            mid = _round(_round(mid, dt) + dw_b, dt)
            base = g * D_HEAD
            acc_lo += _grouped_conv_rows(gw_ptr, base + lo, lo_mask, offs_i, i_mask, mid, m, D_HEAD, K1)
            acc_hi += _grouped_conv_rows(gw_ptr, base + hi, lo_mask, offs_i, i_mask, mid, m, D_HEAD, K1)
            acc_rest += _grouped_conv_rows(gw_ptr, base + rest, rest_mask, offs_i, i_mask, mid, m, D_HEAD, K1)
        q_lo = _cca_finish(acc_lo, g * D_HEAD + lo, lo, lo_mask, qkv_row, gb_ptr, is_query, kv, G, D_HEAD, Q_SIZE, dt)
        q_hi = _cca_finish(acc_hi, g * D_HEAD + hi, hi, lo_mask, qkv_row, gb_ptr, is_query, kv, G, D_HEAD, Q_SIZE, dt)
        q_rest = _cca_finish(
            acc_rest, g * D_HEAD + rest, rest, rest_mask, qkv_row, gb_ptr, is_query, kv, G, D_HEAD, Q_SIZE, dt
        )
        # L2 normalisation to norm sqrt(d) (the norm and the factor rounded as the eager ops round them)
        squares = tl.sum(q_lo * q_lo, axis=0) + tl.sum(q_hi * q_hi, axis=0) + tl.sum(q_rest * q_rest, axis=0)
        factor = _round((D_HEAD**0.5) / tl.maximum(_round(tl.sqrt(squares), dt), eps), dt)
        q_lo, q_hi, q_rest = _round(q_lo * factor, dt), _round(q_hi * factor, dt), _round(q_rest * factor, dt)
        if g >= H:
            temperature = _round(tl.load(temp_ptr + kv).to(tl.float32), dt)
            q_lo, q_hi = _round(q_lo * temperature, dt), _round(q_hi * temperature, dt)
            q_rest = _round(q_rest * temperature, dt)
        # partial RoPE, rotate-half: [lo, hi] -> [lo cos - hi sin, hi cos + lo sin]
        cos_lo = _round(tl.load(cos_ptr + row * ROT + lo, mask=lo_mask, other=0.0), dt)
        sin_lo = _round(tl.load(sin_ptr + row * ROT + lo, mask=lo_mask, other=0.0), dt)
        cos_hi = _round(tl.load(cos_ptr + row * ROT + hi, mask=lo_mask, other=0.0), dt)
        sin_hi = _round(tl.load(sin_ptr + row * ROT + hi, mask=lo_mask, other=0.0), dt)
        rot_lo = _round(_round(q_lo * cos_lo, dt) + _round(-q_hi * sin_lo, dt), dt)
        rot_hi = _round(_round(q_hi * cos_hi, dt) + _round(q_lo * sin_hi, dt), dt)
        if is_query:
            out = q_out_ptr + (row * H + g) * D_HEAD
        else:
            out = keys_ptr + ((row * KV + kv).to(tl.int64) * max_len + slot) * D_HEAD
        tl.store(out + lo, rot_lo.to(dt), mask=lo_mask)
        tl.store(out + hi, rot_hi.to(dt), mask=lo_mask)
        tl.store(out + rest, q_rest.to(dt), mask=rest_mask)
        # shift this head's channels of the conv state by one step, one barrier between each read and write
        for tau in tl.static_range(P):
            newer = _history(qkv_row, state_row, channels, i_mask, tau + 1, P, C)
            tl.debug_barrier()
            tl.store(state_row + tau * C + channels, newer.to(dt), mask=i_mask)


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
def attention_kernel(
    q_ptr, keys_ptr, values_ptr, valid_ptr, slot_ptr, out_ptr, max_len, scale,
    H: tl.constexpr, KV: tl.constexpr, D_HEAD: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    """Program (row, h): query head h against the slots of its KV head up to `slot` (valid ones, and `slot`
    itself, this token's key), softmax and sums in fp32; out [B, H * d] in the values' dtype."""
    row = tl.program_id(0)
    h = tl.program_id(1)
    kv = h // (H // KV)
    offs_d = tl.arange(0, BLOCK_D)
    d_mask = offs_d < D_HEAD
    q = tl.load(q_ptr + (row * H + h) * D_HEAD + offs_d, mask=d_mask, other=0.0).to(tl.float32)
    slot = tl.load(slot_ptr)
    head = (row * KV + kv).to(tl.int64) * max_len * D_HEAD
    m = tl.full([1], -1.0e30, dtype=tl.float32)
    total = tl.zeros([1], dtype=tl.float32)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for s0 in range(0, slot + 1, BLOCK_S):
        offs_s = s0 + tl.arange(0, BLOCK_S)
        in_range = offs_s <= slot
        valid = tl.load(valid_ptr + row * max_len + offs_s, mask=in_range, other=0) != 0
        valid = in_range & (valid | (offs_s == slot))
        tile = head + offs_s[:, None] * D_HEAD + offs_d[None, :]
        tile_mask = valid[:, None] & d_mask[None, :]
        k = tl.load(keys_ptr + tile, mask=tile_mask, other=0.0).to(tl.float32)
        scores = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=0))
        p = tl.exp(scores - m_new)
        alpha = tl.exp(m - m_new)
        v = tl.load(values_ptr + tile, mask=tile_mask, other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        total = total * alpha + tl.sum(p, axis=0)
        m = m_new
    out = acc / total
    tl.store(out_ptr + (row * H + h) * D_HEAD + offs_d, out.to(values_ptr.dtype.element_ty), mask=d_mask)


@triton.jit
def _gelu(x):
    return 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))


@triton.jit
def router_kernel(
    state_ptr, norm_w_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, wo_ptr, bias_ptr, choice_ptr, weight_ptr,
    R, CLASSES, num_experts, eps,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, CHUNK: tl.constexpr,
):  # fmt: skip
    """Program row: RMSNorm(state) -> GELU(fc1) -> GELU(fc2) -> logits -> softmax (fp32) -> argmax of
    probs + balancing biases (top-1) -> choice [B] (int64) and its probability [B] (0 for the skip class)."""
    row = tl.program_id(0)
    dt = w1_ptr.dtype.element_ty
    offs_r = tl.arange(0, BLOCK_R)
    r_mask = offs_r < R
    state = tl.load(state_ptr + row * R + offs_r, mask=r_mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(state * state, axis=0) / R + eps)
    # fc1 over chunks of its input (re-read from memory and normalised chunk by chunk)
    h1 = tl.zeros([BLOCK_R], dtype=tl.float32)
    for k0 in tl.static_range(0, BLOCK_R, CHUNK):
        offs_k = k0 + tl.arange(0, CHUNK)
        k_mask = offs_k < R
        s = tl.load(state_ptr + row * R + offs_k, mask=k_mask, other=0.0).to(tl.float32)
        nw = tl.load(norm_w_ptr + offs_k, mask=k_mask, other=0.0).to(tl.float32)
        normed = _round(_round(s * rstd, dt) * nw, dt)
        w = tl.load(w1_ptr + offs_r[:, None] * R + offs_k[None, :], mask=r_mask[:, None] & k_mask[None, :], other=0.0)
        h1 += tl.sum(w.to(tl.float32) * normed[None, :], axis=1)
    h1 = _round(h1 + tl.load(b1_ptr + offs_r, mask=r_mask, other=0.0).to(tl.float32), dt)
    h1 = _round(_gelu(h1), dt)
    # fc2 over chunks of its output, each chunk's GELU fed straight into the logits
    offs_c = tl.arange(0, BLOCK_C)
    c_mask = offs_c < CLASSES
    logits = tl.zeros([BLOCK_C], dtype=tl.float32)
    for n0 in tl.static_range(0, BLOCK_R, CHUNK):
        offs_n = n0 + tl.arange(0, CHUNK)
        n_mask = offs_n < R
        w = tl.load(w2_ptr + offs_n[None, :] * R + offs_r[:, None], mask=r_mask[:, None] & n_mask[None, :], other=0.0)
        h2 = tl.sum(w.to(tl.float32) * h1[:, None], axis=0)
        h2 = _round(h2 + tl.load(b2_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32), dt)
        h2 = _round(_gelu(h2), dt)
        wo = tl.load(wo_ptr + offs_c[:, None] * R + offs_n[None, :], mask=c_mask[:, None] & n_mask[None, :], other=0.0)
        logits += tl.sum(wo.to(tl.float32) * h2[None, :], axis=1)
    logits = tl.where(c_mask, _round(logits, dt), float("-inf"))
    e = tl.exp(logits - tl.max(logits, axis=0))
    probs = e / tl.sum(e, axis=0)
    scores = tl.where(c_mask, probs + tl.load(bias_ptr + offs_c, mask=c_mask, other=0.0), float("-inf"))
    choice = tl.argmax(scores, axis=0)
    weight = tl.sum(tl.where(offs_c == choice, probs, 0.0), axis=0)
    weight = tl.where(choice == num_experts, 0.0, weight)
    tl.store(choice_ptr + row, choice.to(tl.int64))
    tl.store(weight_ptr + row, weight)

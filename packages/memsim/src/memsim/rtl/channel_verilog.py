"""Verilog of one memory channel's controller, mirroring `memsim.controller.ChannelController.tick`.

Each clock is one DRAM cycle, decided in the Python engine's order: queue a due refresh; issue the pending
refresh's next command (PRE of an open bank, then REF/REFB) or else the first ready command of the
round-robin scan over the per-bank command queues (`<prefix>_queue_pick` per queue); on HBM a second command of
the other kind (row vs column), picked against the state the first left; apply the commands to the banks, the
timing counters and the activation windows; move one transaction from the read queue or the draining write
buffer into its command queue; then accept the port's request (a read may merge with a pending read or be
forwarded from a pending write; a write may merge into a pending write).

Timing counters count down: `wait_<cmd>[bank]` is how many cycles `cmd` must still wait at that bank, loaded
with `latency - 1` by every command (the latencies are memsim's timing table, per relation of the two banks).
Write data waits in a slot memory (one slot per write that can be pending); the data store is reached
through a port, `read_delay - 1` cycles after the column command (reads and writes in issue order), so the
read data comes back at memsim's completion cycle from a store with one cycle of read latency.
"""

from memsim.channel_params import ChannelParams, bits_for, log2
from memsim.commands import Cmd

NAMES = {int(c): c.name.lower() for c in Cmd}


def _lat_function(p: ChannelParams, f: int) -> str:
    width = bits_for(max([1] + [lat.get(f, 0) for rels in p.latency.values() for lat in rels.values()]))
    lines = [f"  function [{width - 1}:0] lat_{NAMES[f]};", "    input [3:0] cmd;", "    input [1:0] rel;",
             "    begin", "      case ({cmd, rel})"]  # fmt: skip
    for cmd, rels in sorted(p.latency.items()):
        for rel, fol in sorted(rels.items()):
            if fol.get(f, 0) > 0:
                lines.append(f"        {{4'd{cmd}, 2'd{rel}}}: lat_{NAMES[f]} = {width}'d{fol[f]};")
    lines += [f"        default: lat_{NAMES[f]} = {width}'d0;", "      endcase", "    end", "  endfunction"]
    return "\n".join(lines)


HIT_WIDTH = "<hit counter>"  # a bank's hit counter: ChannelParams.hit_bits wide

# Registers with a next-state twin `<name>_n` (computed combinationally, copied at the clock edge): one list,
# so the two declarations cannot disagree. (width, name, unpacked dimensions)
STEPPED = (
    ("", "bank_open", "[0:NB-1]"), ("[ROWB-1:0]", "bank_row", "[0:NB-1]"), (HIT_WIDTH, "bank_hits", "[0:NB-1]"),
    ("[LA-1:0]", "rq_addr", "[0:RQ-1]"), ("[RQB-1:0]", "rq_len", ""),
    ("[LA-1:0]", "wb_addr", "[0:WQ-1]"), ("[SB-1:0]", "wb_slot", "[0:WQ-1]"), ("[WQB-1:0]", "wb_len", ""),
    ("", "cq_write", "[0:NB*K-1]"), ("[ROWB-1:0]", "cq_row", "[0:NB*K-1]"), ("[COLB-1:0]", "cq_col", "[0:NB*K-1]"),
    ("[SB-1:0]", "cq_slot", "[0:NB*K-1]"), ("[OFFB-1:0]", "cq_off", "[0:NB*K-1]"), ("[KB-1:0]", "cq_len", "[0:NB-1]"),
    ("[NBB-1:0]", "queue_idx", ""), ("[IVB-1:0]", "ref_timer", ""), ("[PERB-1:0]", "ref_k", ""),
    ("[15:0]", "ref_pending", ""), ("[WQB-1:0]", "write_draining", ""),
)  # fmt: skip


def _stepped_declarations(suffix: str, p: ChannelParams) -> str:
    widths = {HIT_WIDTH: f"[{p.hit_bits - 1}:0]"}
    return "\n".join(f"  reg {widths.get(width, width):<11} {name}{suffix}{' ' + dims if dims else ''};"
                     for width, name, dims in STEPPED)  # fmt: skip


def channel_verilog(p: ChannelParams, prefix: str) -> str:
    """The `<prefix>_channel` module for the part `p` describes."""
    spec = p.spec
    w = p.field_bits
    nb, bpr, bpg, k = p.n_banks, p.banks_per_rank, spec.banks_per_group, spec.cmd_queue_size
    if nb < 2 or p.read_delay < 2:
        raise ValueError("the RTL needs at least two banks per channel and a read delay of two cycles or more")
    f_rd, f_wr, f_act, f_pre, f_ref = p.following
    counters = {f: p.counter_bits(f) for f in p.following}
    consts = {
        "P": prefix, "NB": nb, "NBB": log2(nb), "LBPR": log2(bpr), "LBPG": log2(bpg), "BPR": bpr, "K": k,
        "KB": bits_for(k), "PB": max(1, log2(k)) if k & (k - 1) == 0 else bits_for(k - 1),
        "ROWB": max(1, w["ro"]), "COLB": max(1, w["co"]), "OFFB": p.mapping.shift_bits, "LA": p.local_bits, "DW": p.data_bits,
        "RQ": spec.trans_queue_size, "RQB": bits_for(spec.trans_queue_size),
        "WQ": p.write_capacity, "WQB": bits_for(p.write_capacity), "NS": p.slots, "SB": bits_for(p.slots - 1),
        "RANKS": p.ranks, "RKB": max(1, log2(p.ranks)), "THRESH": spec.write_drain_threshold,
        "IV": p.refresh_interval, "IVB": bits_for(p.refresh_interval), "PERIOD": p.refresh_period,
        "PERB": bits_for(p.refresh_period - 1), "PUSH": p.ranks if p.refresh_all_ranks else 1,
        "BANKREF": int(spec.refresh_policy == "BANK_LEVEL_STAGGERED"),
        "RANK0ONLY": int(spec.refresh_policy == "RANK_LEVEL_SIMULTANEOUS" and not p.refresh_all_ranks),
        "LBG": log2(spec.bankgroups), "LBA": log2(bpg), "BGS": spec.bankgroups,
        "RDCOL": p.read_column, "WRCOL": p.write_column, "JEDEC": int(spec.mode == "jedec"),
        "DUAL": int(spec.dual_command_issue), "FCFS": int(p.fcfs), "L": p.read_delay - 1,
        "HITCAP": f"{p.hit_bits}'d{p.row_hit_cap}", "HITCAP_1": f"{p.hit_bits}'d{p.row_hit_cap - 1}",
        "HIT0": f"{p.hit_bits}'d0", "HIT1": f"{p.hit_bits}'d1",
        "CACT": int(Cmd.ACTIVATE), "CPRE": int(Cmd.PRECHARGE), "CREF": f_ref,
        "CRD": int(Cmd.READ), "CWR": int(Cmd.WRITE), "CRDA": int(Cmd.READ_PRECHARGE), "CWRA": int(Cmd.WRITE_PRECHARGE),
    }  # fmt: skip
    nwin = len(p.windows)
    # ---- per timing counter: declarations, ready bits, next values
    decl, ready, nxt, reset = [], [], [], []
    for f, width in counters.items():
        n = NAMES[f]
        decl.append(f"  reg [{width - 1}:0] wait_{n} [0:NB-1];")
        decl.append(f"  reg [{width - 1}:0] wait_{n}_n [0:NB-1];")
        ready.append(f"      rdy_{n}[b] = wait_{n}[b] == 0;")
        nxt.append(f"      wait_{n}_n[b] = wait_{n}[b] == 0 ? 0 : wait_{n}[b] - 1;\n"
                   f"      if (c0_valid && lat_{n}(c0_kind, rel(c0_bank, b)) > wait_{n}_n[b] + 1)"
                   f" wait_{n}_n[b] = lat_{n}(c0_kind, rel(c0_bank, b)) - 1;\n"
                   f"      if (c1_valid && lat_{n}(c1_kind, rel(c1_bank, b)) > wait_{n}_n[b] + 1)"
                   f" wait_{n}_n[b] = lat_{n}(c1_kind, rel(c1_bank, b)) - 1;")  # fmt: skip
        reset.append(f"        wait_{n}[b] <= 0;")
        decl.append(f"  reg [NB-1:0] rdy_{n};")
    mid_ready = "\n".join(
        f"      rdy2_{NAMES[f]}[b] = rdy_{NAMES[f]}[b] && !(c0_valid && lat_{NAMES[f]}(c0_kind, rel(c0_bank, b)) != 0);"
        for f in (f_rd, f_wr, f_act, f_pre)
    )
    # ---- activation windows (tFAW, t32AW): per rank a queue of remaining cycles
    wdecl, wok, wok2, wnext, wreset = [], [], [], [], []
    for i, (count, window) in enumerate(p.windows):
        lb, rb = bits_for(count), bits_for(window)
        wdecl += [f"  reg [{lb - 1}:0] win{i}_len [0:RANKS-1];", f"  reg [{rb - 1}:0] win{i}_rem [0:RANKS*{count}-1];",
                  f"  reg [{lb - 1}:0] win{i}_len_n [0:RANKS-1];",
                  f"  reg [{rb - 1}:0] win{i}_rem_n [0:RANKS*{count}-1];", f"  reg win{i}_pop;"]  # fmt: skip
        wok.append(f"(win{i}_len[r] < {count} || win{i}_rem[r*{count}] == 0)")
        # after an ACT to this rank: pop an expired head, then the new entry (never expired) goes last
        wok2.append(f"((win{i}_len[r] - ((win{i}_len[r] != 0 && win{i}_rem[r*{count}] == 0) ? 1 : 0) + 1) < {count}"
                    f" || ((win{i}_len[r] != 0 && win{i}_rem[r*{count}] == 0) ? (win{i}_len[r] > 1 && "
                    f"win{i}_rem[r*{count}+1] == 0) : (win{i}_len[r] != 0 && win{i}_rem[r*{count}] == 0)))")  # fmt: skip
        wnext.append(f"""      win{i}_pop = act_valid && act_rank == r && win{i}_len[r] != 0 && win{i}_rem[r*{count}] == 0;
      win{i}_len_n[r] = win{i}_len[r] - (win{i}_pop ? 1 : 0);
      for (j = 0; j < {count}; j = j + 1) begin
        if (win{i}_pop) win{i}_rem_n[r*{count}+j] = j + 1 < {count} ? win{i}_rem[r*{count}+(j + 1 < {count} ? j + 1 : j)] : 0;
        else win{i}_rem_n[r*{count}+j] = win{i}_rem[r*{count}+j];
        if (win{i}_rem_n[r*{count}+j] != 0) win{i}_rem_n[r*{count}+j] = win{i}_rem_n[r*{count}+j] - 1;
      end
      if (act_valid && act_rank == r) begin
        for (j = 0; j < {count}; j = j + 1)
          if (j == win{i}_len_n[r]) win{i}_rem_n[r*{count}+j] = {window - 1};
        win{i}_len_n[r] = win{i}_len_n[r] + 1;
      end""")  # fmt: skip
        wreset.append(f"        win{i}_len[r] <= 0;")
    win_ok = " && ".join(wok) if nwin else "1'b1"
    win_ok2 = " && ".join(wok2) if nwin else "1'b1"
    body = TEMPLATE
    for key, text in {
        "LATFUNCS": "\n".join(_lat_function(p, f) for f in p.following),
        "COUNTERDECL": "\n".join(decl), "READY": "\n".join(ready), "MIDREADY": mid_ready,
        "COUNTERNEXT": "\n".join(nxt), "COUNTERRESET": "\n".join(reset),
        "WINDECL": "\n".join(wdecl), "WINOK": win_ok, "WINOK2": win_ok2, "WINNEXT": "\n".join(wnext),
        "WINRESET": "\n".join(wreset), "WINCOPY": "\n".join(
            f"        win{i}_len[r] <= win{i}_len_n[r];\n        for (j = 0; j < {c}; j = j + 1) "
            f"win{i}_rem[r*{c}+j] <= win{i}_rem_n[r*{c}+j];" for i, (c, _) in enumerate(p.windows)),
        "CNTCOPY": "\n".join(f"        wait_{NAMES[f]}[b] <= wait_{NAMES[f]}_n[b];" for f in p.following),
        "STEPPED": _stepped_declarations("", p), "STEPPED_N": _stepped_declarations("_n", p),
        "RD": NAMES[f_rd], "WR": NAMES[f_wr], "ACT": NAMES[f_act], "PRE": NAMES[f_pre], "REF": NAMES[f_ref],
    }.items():  # fmt: skip
        body = body.replace(f"@@{key}@@", text)
    for key, value in consts.items():
        body = body.replace(f"@@{key}@@", str(value))
    assert "@@" not in body, body[body.index("@@") : body.index("@@") + 40]
    return body


TEMPLATE = r"""
module @@P@@_channel (
  input  wire            clk,
  input  wire            rst,
  // request port: a whole line at a local address {bank, row, column, offset}; ready is combinational on req_write
  input  wire            req_valid,
  output wire            req_ready,
  input  wire            req_write,
  input  wire [@@LA@@-1:0] req_addr,
  input  wire [@@DW@@-1:0] req_wdata,
  output wire            req_forwarded,  // this read is served from a pending write (fwd_* two cycles later)
  // read responses at memsim's completion cycle: from the DRAM, or forwarded from the write buffer
  output reg             rd_valid,
  output reg  [@@LA@@-1:0] rd_addr,
  output wire [@@DW@@-1:0] rd_data,
  output reg             fwd_valid,
  output reg  [@@LA@@-1:0] fwd_addr,
  output reg  [@@DW@@-1:0] fwd_data,
  // the DRAM commands issued this cycle (two on dual-issue parts); bank is the channel's flat bank number
  output reg             cmd0_valid,
  output reg  [3:0]      cmd0_kind,
  output reg  [@@NBB@@-1:0] cmd0_bank,
  output reg             cmd0_has_addr,
  output reg  [@@ROWB@@-1:0] cmd0_row,
  output reg  [@@COLB@@-1:0] cmd0_col,
  output reg             cmd1_valid,
  output reg  [3:0]      cmd1_kind,
  output reg  [@@NBB@@-1:0] cmd1_bank,
  output reg             cmd1_has_addr,
  output reg  [@@ROWB@@-1:0] cmd1_row,
  output reg  [@@COLB@@-1:0] cmd1_col,
  // data store port (behavioural array in simulation, external memory on an FPGA): one cycle read latency
  output wire            store_wr_en,
  output wire [@@LA@@-1:0] store_wr_addr,
  output wire [@@DW@@-1:0] store_wr_data,
  output wire            store_rd_en,
  output wire [@@LA@@-1:0] store_rd_addr,
  input  wire [@@DW@@-1:0] store_rd_data
);
  // one compiled model for all channels of a part (HBM2: eight) in a Verilator build
  /*verilator no_inline_module*/
  localparam NB = @@NB@@, NBB = @@NBB@@, K = @@K@@, KB = @@KB@@, PB = @@PB@@, ROWB = @@ROWB@@, COLB = @@COLB@@;
  localparam LA = @@LA@@, DW = @@DW@@, RQ = @@RQ@@, RQB = @@RQB@@, WQ = @@WQ@@, WQB = @@WQB@@, NS = @@NS@@;
  localparam SB = @@SB@@, RANKS = @@RANKS@@, RKB = @@RKB@@, LBPR = @@LBPR@@, LBPG = @@LBPG@@, L = @@L@@;
  localparam IVB = @@IVB@@, PERB = @@PERB@@, OFFB = @@OFFB@@;
  localparam [3:0] CACT = @@CACT@@, CPRE = @@CPRE@@, CREF = @@CREF@@, CRD = @@CRD@@, CWR = @@CWR@@;
  localparam [3:0] CRDA = @@CRDA@@, CWRA = @@CWRA@@, RDCOL = @@RDCOL@@, WRCOL = @@WRCOL@@;

  function [1:0] rel;  // 0 same bank, 1 same bank group, 2 other bank group of the rank, 3 other rank
    input [NBB-1:0] src;
    input integer dst;
    begin
      if (src == dst) rel = 2'd0;
      else if ((src >> LBPG) == (dst >> LBPG)) rel = 2'd1;
      else if ((src >> LBPR) == (dst >> LBPR)) rel = 2'd2;
      else rel = 2'd3;
    end
  endfunction
@@LATFUNCS@@

  // ---- state (each register of STEPPED here, its next value `<name>_n` below; the counters' and windows' too)
@@STEPPED@@
@@COUNTERDECL@@
@@WINDECL@@
  reg             slot_used [0:NS-1];
  reg [DW-1:0]    slot_ram  [0:NS-1];
  // store pipeline: column commands on their way to the data store (L = read_delay - 1 stages)
  reg             pipe_valid [1:L];
  reg             pipe_write [1:L];
  reg [LA-1:0]    pipe_addr  [1:L];
  reg [SB-1:0]    pipe_slot  [1:L];
  reg             fwd1_valid;
  reg [LA-1:0]    fwd1_addr;
  reg [DW-1:0]    fwd1_data;

  // ---- next state
@@STEPPED_N@@
  reg             slot_free_en, slot_alloc_en, slot_write_en;
  reg [SB-1:0]    slot_free, slot_alloc, slot_write;

  // ---- per-queue pick, for the first and the second command of a cycle
  reg [NB-1:0] win_ok_r, win_ok2_r;
  reg [NB-1:0] rdy2_@@RD@@, rdy2_@@WR@@, rdy2_@@ACT@@, rdy2_@@PRE@@;
  reg [NB-1:0] open2, hitscap2;
  reg [ROWB-1:0] row2 [0:NB-1];
  reg [K-1:0] valid1 [0:NB-1];
  reg [K-1:0] valid2 [0:NB-1];
  wire [NB-1:0] ok1, ok2;
  wire [PB-1:0] pos1 [0:NB-1];
  wire [PB-1:0] pos2 [0:NB-1];
  wire [1:0] kind1 [0:NB-1];
  wire [1:0] kind2 [0:NB-1];
  genvar gq, ge;
  generate
    for (gq = 0; gq < NB; gq = gq + 1) begin : queue
      wire [K-1:0] is_write;
      wire [K*ROWB-1:0] rows;
      wire [K*COLB-1:0] cols;
      for (ge = 0; ge < K; ge = ge + 1) begin : entry
        assign is_write[ge] = cq_write[gq*K+ge];
        assign rows[ge*ROWB +: ROWB] = cq_row[gq*K+ge];
        assign cols[ge*COLB +: COLB] = cq_col[gq*K+ge];
      end
      @@P@@_queue_pick #(.K(K), .ROWB(ROWB), .COLB(COLB), .PB(PB), .FCFS(@@FCFS@@)) first (
        .valid(valid1[gq]), .is_write(is_write), .rows(rows), .cols(cols), .open(bank_open[gq]),
        .open_row(bank_row[gq]), .hits_cap(bank_hits[gq] >= @@HITCAP@@), .rdy_act(rdy_@@ACT@@[gq]),
        .rdy_pre(rdy_@@PRE@@[gq]), .rdy_rd(rdy_@@RD@@[gq]), .rdy_wr(rdy_@@WR@@[gq]), .win_ok(win_ok_r[gq]),
        .ok(ok1[gq]), .pos(pos1[gq]), .kind(kind1[gq]));
      if (@@DUAL@@) begin : dual
        @@P@@_queue_pick #(.K(K), .ROWB(ROWB), .COLB(COLB), .PB(PB), .FCFS(@@FCFS@@)) second (
          .valid(valid2[gq]), .is_write(is_write), .rows(rows), .cols(cols), .open(open2[gq]),
          .open_row(row2[gq]), .hits_cap(hitscap2[gq]), .rdy_act(rdy2_@@ACT@@[gq]), .rdy_pre(rdy2_@@PRE@@[gq]),
          .rdy_rd(rdy2_@@RD@@[gq]), .rdy_wr(rdy2_@@WR@@[gq]), .win_ok(win_ok2_r[gq]),
          .ok(ok2[gq]), .pos(pos2[gq]), .kind(kind2[gq]));
      end else begin : single
        assign ok2[gq] = 1'b0;
        assign pos2[gq] = {PB{1'b0}};
        assign kind2[gq] = 2'd0;
      end
    end
  endgenerate

  // ---- refresh and the first command
  reg [15:0]     ref_pending_a;
  reg            in_ref, ref_popped, ref_issue, ref_pre_found, ref_all_ready;
  reg [3:0]      ref_cmd;
  reg [RKB-1:0]  ref_rank;
  reg [NBB-1:0]  ref_bank, ref_pre_bank;
  reg [NB-1:0]   skip1, skip2;
  reg            found1, found2;
  reg [NBB-1:0]  q1, q2, idx, idx2;
  reg            c0_valid, c0_col, c0_has_addr, c1_valid, c1_col, c1_has_addr;
  reg [3:0]      c0_kind, c1_kind;
  reg [NBB-1:0]  c0_bank, c1_bank;
  reg [PB-1:0]   c0_pos, c1_pos;
  reg [ROWB-1:0] c0_row, c1_row;
  reg [COLB-1:0] c0_col_addr, c1_col_addr;
  reg            c0_write, c1_write;
  reg [SB-1:0]   c0_slot, c1_slot;
  reg [OFFB-1:0] c0_off, c1_off;
  reg            act_valid;
  reg [RKB-1:0]  act_rank;
  always @* begin : ready_bits
    integer b, j, r;
    for (b = 0; b < NB; b = b + 1) begin
@@READY@@
      for (j = 0; j < K; j = j + 1) valid1[b][j] = j < cq_len[b];
      r = b >> LBPR;
      win_ok_r[b] = @@WINOK@@;
    end
  end

  always @* begin : first_command
    integer b, j, r;
    // a due refresh joins the queue (DRAMSim3's rotation: ranks, or banks for per-bank refresh)
    ref_pending_a = ref_pending + (ref_timer == 0 ? @@PUSH@@ : 0);
    in_ref = ref_pending_a != 0;
    if (@@BANKREF@@) begin
      ref_cmd = CREF;
      ref_bank = (((ref_k >> (@@LBG@@ + @@LBA@@)) * @@BGS@@ + (ref_k & (@@BGS@@ - 1))) << LBPG)
                 + ((ref_k >> @@LBG@@) & ((1 << LBPG) - 1));
      ref_rank = ref_bank >> LBPR;
    end else begin
      ref_cmd = CREF;
      ref_rank = @@RANK0ONLY@@ ? 0 : ref_k;
      ref_bank = ref_rank << LBPR;
    end
    // the refresh's next command: PRE of the first open bank that allows it, else the refresh once all allow it
    ref_pre_found = 1'b0;
    ref_pre_bank = {NBB{1'b0}};
    ref_all_ready = 1'b1;
    for (b = 0; b < NB; b = b + 1) begin
      if (@@BANKREF@@ ? b == ref_bank : (b >> LBPR) == ref_rank) begin
        if (bank_open[b]) begin
          if (!ref_pre_found && rdy_@@PRE@@[b]) begin ref_pre_found = 1'b1; ref_pre_bank = b; end
          ref_all_ready = 1'b0;
        end else if (!rdy_@@REF@@[b]) ref_all_ready = 1'b0;
      end
      skip1[b] = in_ref && (@@BANKREF@@ ? b == ref_bank : (b >> LBPR) == ref_rank);
    end
    ref_issue = in_ref && (ref_pre_found || ref_all_ready);
    ref_popped = in_ref && !ref_pre_found && ref_all_ready;
    // round-robin scan, starting after the queue that issued last
    found1 = 1'b0;
    q1 = queue_idx;
    for (j = 1; j <= NB; j = j + 1) begin
      idx = queue_idx + j;
      if (!found1 && ok1[idx] && !skip1[idx]) begin found1 = 1'b1; q1 = idx; end
    end
    c0_valid = 1'b0; c0_col = 1'b0; c0_has_addr = 1'b0; c0_kind = CACT; c0_bank = q1; c0_pos = pos1[q1];
    c0_row = {ROWB{1'b0}}; c0_col_addr = {COLB{1'b0}}; c0_write = 1'b0; c0_slot = {SB{1'b0}}; c0_off = {OFFB{1'b0}};
    for (j = 0; j < K; j = j + 1)
      if (j == pos1[q1]) begin
        c0_row = cq_row[q1*K+j]; c0_col_addr = cq_col[q1*K+j]; c0_write = cq_write[q1*K+j];
        c0_slot = cq_slot[q1*K+j]; c0_off = cq_off[q1*K+j];
      end
    if (ref_issue) begin
      c0_valid = 1'b1;
      c0_kind = ref_pre_found ? CPRE : ref_cmd;
      c0_bank = ref_pre_found ? ref_pre_bank : ref_bank;
    end else if (found1) begin
      c0_valid = 1'b1;
      c0_has_addr = 1'b1;
      c0_col = kind1[q1] == 2'd2;
      c0_kind = kind1[q1] == 2'd0 ? CACT : kind1[q1] == 2'd1 ? CPRE : (c0_write ? WRCOL : RDCOL);
    end
    // ---- the second command (dual issue): picked against the state the first left
    for (b = 0; b < NB; b = b + 1) begin
      open2[b] = bank_open[b];
      row2[b] = bank_row[b];
      hitscap2[b] = bank_hits[b] >= @@HITCAP@@;
      if (c0_valid && c0_bank == b) begin
        if (c0_kind == CACT) begin open2[b] = 1'b1; row2[b] = c0_row; end
        else if (c0_kind == CPRE || c0_kind == CRDA || c0_kind == CWRA) begin open2[b] = 1'b0; hitscap2[b] = 1'b0; end
        else if ((c0_kind == CRD || c0_kind == CWR) && bank_open[b]) hitscap2[b] = bank_hits[b] >= @@HITCAP_1@@;
      end
@@MIDREADY@@
      r = b >> LBPR;
      win_ok2_r[b] = (c0_valid && c0_kind == CACT && (c0_bank >> LBPR) == r) ? (@@WINOK2@@) : win_ok_r[b];
      for (j = 0; j < K; j = j + 1) valid2[b][j] = valid1[b][j] && !(c0_col && c0_bank == b && c0_pos == j);
      skip2[b] = skip1[b] && !ref_popped;
    end
  end

  always @* begin : second_command
    integer j;
    found2 = 1'b0;
    q2 = found1 && !ref_issue ? q1 : queue_idx;
    idx2 = q2;
    for (j = 1; j <= NB; j = j + 1) begin
      if (!found2 && ok2[(idx2 + j) % NB] && !skip2[(idx2 + j) % NB]) begin found2 = 1'b1; q2 = (idx2 + j) % NB; end
    end
    c1_valid = 1'b0; c1_col = 1'b0; c1_has_addr = 1'b1; c1_kind = CACT; c1_bank = q2; c1_pos = pos2[q2];
    c1_row = {ROWB{1'b0}}; c1_col_addr = {COLB{1'b0}}; c1_write = 1'b0; c1_slot = {SB{1'b0}}; c1_off = {OFFB{1'b0}};
    for (j = 0; j < K; j = j + 1)
      if (j == pos2[q2]) begin
        c1_row = cq_row[q2*K+j]; c1_col_addr = cq_col[q2*K+j]; c1_write = cq_write[q2*K+j];
        c1_slot = cq_slot[q2*K+j]; c1_off = cq_off[q2*K+j];
      end
    if (@@DUAL@@ && c0_valid && found2 && ((kind2[q2] == 2'd2) != c0_col)) begin
      c1_valid = 1'b1;
      c1_col = kind2[q2] == 2'd2;
      c1_kind = kind2[q2] == 2'd0 ? CACT : kind2[q2] == 2'd1 ? CPRE : (c1_write ? WRCOL : RDCOL);
    end
    queue_idx_n = (@@DUAL@@ && c0_valid && found2) ? q2 : (found1 && !ref_issue) ? q1 : queue_idx;
    act_valid = (c0_valid && c0_kind == CACT) || (c1_valid && c1_kind == CACT);
    act_rank = ((c0_valid && c0_kind == CACT) ? c0_bank : c1_bank) >> LBPR;
    ref_pending_n = ref_pending_a - (ref_popped ? 1 : 0);
    ref_k_n = ref_popped ? (ref_k == @@PERIOD@@ - 1 ? 0 : ref_k + 1) : ref_k;
    ref_timer_n = ref_timer == 0 ? @@IV@@ - 1 : ref_timer - 1;
  end

  // ---- apply the commands; move one transaction; accept the request
  reg            col_valid, col_write;
  reg [NBB-1:0]  col_bank;
  reg [PB-1:0]   col_pos;
  reg [LA-1:0]   col_addr;
  reg [SB-1:0]   col_slot;
  reg [KB-1:0]   cq_len1 [0:NB-1];
  reg [15:0]     cq_total1;
  reg            drain_due, moved, mv_write, mv_found, pending_read, rq_hit, wb_hit;
  reg [LA-1:0]   mv_addr;
  reg [SB-1:0]   mv_slot;
  reg [RQB-1:0]  mv_i;
  reg [NBB-1:0]  mv_bank;
  reg            pw_match, pr_match, accept, alloc_found;
  reg [SB-1:0]   pw_slot;
  reg [NBB-1:0]  a_bank;
  reg [RQB-1:0]  rq_len1;
  reg [WQB-1:0]  wb_len1;
  reg [WQB-1:0]  draining_a;
  always @* begin : apply_and_move
    integer b, j, r, i;
    for (b = 0; b < NB; b = b + 1) begin
      bank_open_n[b] = bank_open[b];
      bank_row_n[b] = bank_row[b];
      bank_hits_n[b] = bank_hits[b];
      if (c0_valid && c0_bank == b) begin
        if (c0_kind == CACT) begin bank_open_n[b] = 1'b1; bank_row_n[b] = c0_row; end
        else if (c0_kind == CPRE || c0_kind == CRDA || c0_kind == CWRA) begin bank_open_n[b] = 1'b0; bank_hits_n[b] = @@HIT0@@; end
        else if ((c0_kind == CRD || c0_kind == CWR) && bank_open[b] && bank_hits[b] < @@HITCAP@@) bank_hits_n[b] = bank_hits[b] + @@HIT1@@;
      end
      if (c1_valid && c1_bank == b) begin
        if (c1_kind == CACT) begin bank_open_n[b] = 1'b1; bank_row_n[b] = c1_row; end
        else if (c1_kind == CPRE || c1_kind == CRDA || c1_kind == CWRA) begin bank_open_n[b] = 1'b0; bank_hits_n[b] = @@HIT0@@; end
        else if ((c1_kind == CRD || c1_kind == CWR) && bank_open_n[b] && bank_hits_n[b] < @@HITCAP@@) bank_hits_n[b] = bank_hits_n[b] + @@HIT1@@;
      end
@@COUNTERNEXT@@
    end
    for (r = 0; r < RANKS; r = r + 1) begin
@@WINNEXT@@
    end
    // the column command leaves its queue and heads for the data store
    col_valid = (c0_valid && c0_col) || (c1_valid && c1_col);
    col_bank = (c0_valid && c0_col) ? c0_bank : c1_bank;
    col_pos = (c0_valid && c0_col) ? c0_pos : c1_pos;
    col_write = (c0_valid && c0_col) ? c0_write : c1_write;
    col_slot = (c0_valid && c0_col) ? c0_slot : c1_slot;
    col_addr = (c0_valid && c0_col) ? {c0_bank, c0_row, c0_col_addr, c0_off} : {c1_bank, c1_row, c1_col_addr, c1_off};
    cq_total1 = 0;
    for (b = 0; b < NB; b = b + 1) begin
      cq_len1[b] = cq_len[b] - ((col_valid && col_bank == b) ? 1 : 0);
      cq_total1 = cq_total1 + cq_len1[b];
      for (j = 0; j < K; j = j + 1) begin
        if (col_valid && col_bank == b && j >= col_pos && j + 1 < K) begin
          cq_write_n[b*K+j] = cq_write[b*K+(j + 1 < K ? j + 1 : j)]; cq_row_n[b*K+j] = cq_row[b*K+(j + 1 < K ? j + 1 : j)];
          cq_col_n[b*K+j] = cq_col[b*K+(j + 1 < K ? j + 1 : j)]; cq_slot_n[b*K+j] = cq_slot[b*K+(j + 1 < K ? j + 1 : j)]; cq_off_n[b*K+j] = cq_off[b*K+(j + 1 < K ? j + 1 : j)];
        end else begin
          cq_write_n[b*K+j] = cq_write[b*K+j]; cq_row_n[b*K+j] = cq_row[b*K+j];
          cq_col_n[b*K+j] = cq_col[b*K+j]; cq_slot_n[b*K+j] = cq_slot[b*K+j]; cq_off_n[b*K+j] = cq_off[b*K+j];
        end
      end
      cq_len_n[b] = cq_len1[b];
    end
    // ---- move one transaction into its command queue (the write buffer while draining)
    drain_due = wb_len >= WQ || (wb_len > @@THRESH@@ && cq_total1 == 0);
    draining_a = (write_draining == 0 && drain_due) ? wb_len : write_draining;
    write_draining_n = draining_a;
    moved = 1'b0; mv_write = 1'b0; mv_found = 1'b0; mv_addr = {LA{1'b0}}; mv_slot = {SB{1'b0}}; mv_i = 0;
    mv_bank = {NBB{1'b0}}; pending_read = 1'b0;
    if (draining_a != 0) begin
      for (i = 0; i < WQ; i = i + 1)
        if (!mv_found && i < wb_len && cq_len1[wb_addr[i] >> (ROWB + COLB + OFFB)] < K) begin
          mv_found = 1'b1; mv_i = i; mv_addr = wb_addr[i]; mv_slot = wb_slot[i];
        end
      if (mv_found) begin
        // an older read of this address (read queue or command queue) goes first: the drain stops
        pending_read = 1'b0;
        for (i = 0; i < RQ; i = i + 1) if (i < rq_len && rq_addr[i] == mv_addr) pending_read = 1'b1;
        mv_bank = mv_addr >> (ROWB + COLB + OFFB);
        for (j = 0; j < K; j = j + 1)
          if (j < cq_len[mv_bank] && !cq_write[mv_bank*K+j] && {cq_row[mv_bank*K+j], cq_col[mv_bank*K+j], cq_off[mv_bank*K+j]} ==
              mv_addr[ROWB+COLB+OFFB-1:0] && !(col_valid && col_bank == mv_bank && col_pos == j))
            pending_read = 1'b1;
        if (pending_read) write_draining_n = 0;
        else begin moved = 1'b1; mv_write = 1'b1; write_draining_n = write_draining_n - 1; end
      end
    end
    // not draining: a read moves; jedec mode also moves a read when the drain stopped at a pending read
    if (!moved && (draining_a == 0 || (@@JEDEC@@ && write_draining_n == 0 && drain_due))) begin
      mv_found = 1'b0;
      for (i = 0; i < RQ; i = i + 1)
        if (!mv_found && i < rq_len && cq_len1[rq_addr[i] >> (ROWB + COLB + OFFB)] < K) begin
          mv_found = 1'b1; mv_i = i; mv_addr = rq_addr[i];
        end
      moved = mv_found;
    end
    mv_bank = mv_addr >> (ROWB + COLB + OFFB);
    for (i = 0; i < RQ; i = i + 1)
      rq_addr_n[i] = (moved && !mv_write && i >= mv_i && i + 1 < RQ) ? rq_addr[i + 1 < RQ ? i + 1 : i] : rq_addr[i];
    for (i = 0; i < WQ; i = i + 1) begin
      wb_addr_n[i] = (moved && mv_write && i >= mv_i && i + 1 < WQ) ? wb_addr[i + 1 < WQ ? i + 1 : i] : wb_addr[i];
      wb_slot_n[i] = (moved && mv_write && i >= mv_i && i + 1 < WQ) ? wb_slot[i + 1 < WQ ? i + 1 : i] : wb_slot[i];
    end
    rq_len1 = rq_len - ((moved && !mv_write) ? 1 : 0);
    wb_len1 = wb_len - ((moved && mv_write) ? 1 : 0);
    // Writes index constants only (a bank loop compared with mv_bank): a write through a signal index makes
    // yosys's frontend expand a case over every bit offset of the packed array, which never finished at 32 banks.
    if (moved) begin
      for (b = 0; b < NB; b = b + 1)
        if (b == mv_bank) begin
          for (j = 0; j < K; j = j + 1)
            if (j == cq_len1[b]) begin
              cq_write_n[b*K+j] = mv_write; cq_row_n[b*K+j] = mv_addr[ROWB+COLB+OFFB-1:COLB+OFFB];
              cq_col_n[b*K+j] = mv_addr[COLB+OFFB-1:OFFB]; cq_off_n[b*K+j] = mv_addr[OFFB-1:0];
              cq_slot_n[b*K+j] = mv_slot;
            end
          cq_len_n[b] = cq_len1[b] + 1;
        end
    end
    // ---- the request: merge with / forward from what is pending after this cycle's commands
    a_bank = req_addr >> (ROWB + COLB + OFFB);
    pw_match = 1'b0; pr_match = 1'b0; pw_slot = {SB{1'b0}};
    for (i = 0; i < WQ; i = i + 1)
      if (i < wb_len && wb_addr[i] == req_addr) begin pw_match = 1'b1; pw_slot = wb_slot[i]; end
    for (i = 0; i < RQ; i = i + 1)
      if (i < rq_len && rq_addr[i] == req_addr) pr_match = 1'b1;
    for (j = 0; j < K; j = j + 1)
      if (j < cq_len[a_bank] && {cq_row[a_bank*K+j], cq_col[a_bank*K+j], cq_off[a_bank*K+j]} == req_addr[ROWB+COLB+OFFB-1:0] &&
          !(col_valid && col_bank == a_bank && col_pos == j)) begin
        if (cq_write[a_bank*K+j]) begin pw_match = 1'b1; pw_slot = cq_slot[a_bank*K+j]; end
        else pr_match = 1'b1;
      end
    accept = req_valid && (req_write ? wb_len1 < WQ : rq_len1 < RQ);
    alloc_found = 1'b0; slot_alloc = {SB{1'b0}};
    for (i = 0; i < NS; i = i + 1)
      if (!alloc_found && !slot_used[i]) begin alloc_found = 1'b1; slot_alloc = i; end
    slot_alloc_en = accept && req_write && !pw_match;
    slot_write_en = accept && req_write;
    slot_write = pw_match ? pw_slot : slot_alloc;
    rq_len_n = rq_len1;
    wb_len_n = wb_len1;
    if (accept && req_write && !pw_match) begin
      for (i = 0; i < WQ; i = i + 1)
        if (i == wb_len1) begin wb_addr_n[i] = req_addr; wb_slot_n[i] = slot_alloc; end
      wb_len_n = wb_len1 + 1;
    end
    if (accept && !req_write && !pw_match && !pr_match) begin
      for (i = 0; i < RQ; i = i + 1) if (i == rq_len1) rq_addr_n[i] = req_addr;
      rq_len_n = rq_len1 + 1;
    end
    slot_free_en = pipe_valid[L] && pipe_write[L];
    slot_free = pipe_slot[L];
  end
  assign req_ready = req_write ? wb_len1 < WQ : rq_len1 < RQ;
  assign req_forwarded = !req_write && pw_match;

  // ---- the data store, in issue order, read_delay - 1 cycles after the column command
  assign store_wr_en = pipe_valid[L] && pipe_write[L];
  assign store_wr_addr = pipe_addr[L];
  assign store_wr_data = slot_ram[pipe_slot[L]];
  assign store_rd_en = pipe_valid[L] && !pipe_write[L];
  assign store_rd_addr = pipe_addr[L];
  assign rd_data = store_rd_data;
  always @* begin
    cmd0_valid = c0_valid; cmd0_kind = c0_kind; cmd0_bank = c0_bank; cmd0_has_addr = c0_has_addr;
    cmd0_row = c0_row; cmd0_col = c0_col_addr;
    cmd1_valid = c1_valid; cmd1_kind = c1_kind; cmd1_bank = c1_bank; cmd1_has_addr = c1_has_addr;
    cmd1_row = c1_row; cmd1_col = c1_col_addr;
  end

  always @(posedge clk) begin
    if (slot_write_en) slot_ram[slot_write] <= req_wdata;
  end

  always @(posedge clk) begin : registers
    integer b, j, r, i;
    if (rst) begin
      for (b = 0; b < NB; b = b + 1) begin
        bank_open[b] <= 1'b0; bank_row[b] <= {ROWB{1'b0}}; bank_hits[b] <= @@HIT0@@; cq_len[b] <= 0;
@@COUNTERRESET@@
      end
      for (r = 0; r < RANKS; r = r + 1) begin
@@WINRESET@@
      end
      rq_len <= 0; wb_len <= 0; queue_idx <= 0; ref_timer <= @@IV@@; ref_k <= 0; ref_pending <= 0;
      write_draining <= 0;
      for (i = 0; i < NS; i = i + 1) slot_used[i] <= 1'b0;
      for (i = 1; i <= L; i = i + 1) pipe_valid[i] <= 1'b0;
      fwd1_valid <= 1'b0; fwd_valid <= 1'b0; rd_valid <= 1'b0;
    end else begin
      for (b = 0; b < NB; b = b + 1) begin
        bank_open[b] <= bank_open_n[b]; bank_row[b] <= bank_row_n[b]; bank_hits[b] <= bank_hits_n[b];
        cq_len[b] <= cq_len_n[b];
        for (j = 0; j < K; j = j + 1) begin
          cq_write[b*K+j] <= cq_write_n[b*K+j]; cq_row[b*K+j] <= cq_row_n[b*K+j];
          cq_col[b*K+j] <= cq_col_n[b*K+j]; cq_slot[b*K+j] <= cq_slot_n[b*K+j]; cq_off[b*K+j] <= cq_off_n[b*K+j];
        end
@@CNTCOPY@@
      end
      for (r = 0; r < RANKS; r = r + 1) begin
@@WINCOPY@@
      end
      for (i = 0; i < RQ; i = i + 1) rq_addr[i] <= rq_addr_n[i];
      for (i = 0; i < WQ; i = i + 1) begin wb_addr[i] <= wb_addr_n[i]; wb_slot[i] <= wb_slot_n[i]; end
      rq_len <= rq_len_n; wb_len <= wb_len_n; queue_idx <= queue_idx_n;
      ref_timer <= ref_timer_n; ref_k <= ref_k_n; ref_pending <= ref_pending_n;
      write_draining <= write_draining_n;
      for (i = 0; i < NS; i = i + 1) begin
        if (slot_free_en && slot_free == i) slot_used[i] <= 1'b0;
        if (slot_alloc_en && slot_alloc == i) slot_used[i] <= 1'b1;
      end
      pipe_valid[1] <= col_valid; pipe_write[1] <= col_write; pipe_addr[1] <= col_addr; pipe_slot[1] <= col_slot;
      for (i = 2; i <= L; i = i + 1) begin
        pipe_valid[i] <= pipe_valid[i-1]; pipe_write[i] <= pipe_write[i-1];
        pipe_addr[i] <= pipe_addr[i-1]; pipe_slot[i] <= pipe_slot[i-1];
      end
      // forwarded reads complete two cycles after the cycle they were offered in (memsim: added + 1)
      fwd1_valid <= accept && !req_write && pw_match;
      fwd1_addr <= req_addr;
      fwd1_data <= slot_ram[pw_slot];
      fwd_valid <= fwd1_valid; fwd_addr <= fwd1_addr; fwd_data <= fwd1_data;
      rd_valid <= store_rd_en; rd_addr <= store_rd_addr;
    end
  end
endmodule
"""

"""Verilog of the scheduler's pick within one per-bank command queue: DRAMSim3's FR-FCFS (or FCFS).

Mirrors `memsim.scheduling.FrFcfsScheduler.first_ready` over one bank: the first entry (oldest first) whose
next DRAM command may issue wins. A closed bank needs ACT (timing and the rank's activation windows); a row
hit needs its column command (a write also waits for an older read of its row and column); a miss needs PRE,
allowed only for the oldest entry and only while no entry hits the open row or the row has served 4 hits.
`valid` is a mask, not a length, so the same module picks the second command of a dual-issue cycle from a
queue that lost an entry to the first.
"""

QUEUE_PICK = r"""
module @@P@@_queue_pick #(parameter K = 8, parameter ROWB = 16, parameter COLB = 7, parameter PB = 3,
                          parameter FCFS = 0) (
  input  wire [K-1:0]      valid,
  input  wire [K-1:0]      is_write,
  input  wire [K*ROWB-1:0] rows,
  input  wire [K*COLB-1:0] cols,
  input  wire              open,
  input  wire [ROWB-1:0]   open_row,
  input  wire              hits_cap,  // the open row has served 4 hits
  input  wire              rdy_act,
  input  wire              rdy_pre,
  input  wire              rdy_rd,
  input  wire              rdy_wr,
  input  wire              win_ok,    // the rank's activation windows admit an ACT
  output reg               ok,
  output reg  [PB-1:0]     pos,
  output reg  [1:0]        kind       // 0: ACT, 1: PRE, 2: the column command
);
  reg [K-1:0] hit;
  reg [K-1:0] war;
  reg seen;
  integer e, o;
  always @* begin
    for (e = 0; e < K; e = e + 1) begin
      hit[e] = valid[e] && rows[e*ROWB +: ROWB] == open_row;
      war[e] = 1'b0;
      for (o = 0; o < e; o = o + 1)
        if (valid[o] && !is_write[o] && rows[o*ROWB +: ROWB] == rows[e*ROWB +: ROWB]
            && cols[o*COLB +: COLB] == cols[e*COLB +: COLB])
          war[e] = 1'b1;
    end
    ok = 1'b0;
    pos = {PB{1'b0}};
    kind = 2'd0;
    seen = 1'b0;
    for (e = 0; e < K; e = e + 1) begin
      if (!ok && valid[e] && !(FCFS != 0 && seen)) begin
        if (!open) begin
          if (rdy_act && win_ok) begin ok = 1'b1; pos = e[PB-1:0]; kind = 2'd0; end
        end else if (hit[e]) begin
          if ((is_write[e] ? rdy_wr : rdy_rd) && !(is_write[e] && war[e])) begin
            ok = 1'b1; pos = e[PB-1:0]; kind = 2'd2;
          end
        end else if (!seen && rdy_pre && (hits_cap || hit == {K{1'b0}})) begin
          ok = 1'b1; pos = e[PB-1:0]; kind = 2'd1;
        end
        seen = 1'b1;
      end
    end
  end
endmodule
"""

"""`<prefix>_axi_top`: an AXI4 slave in front of the generated memory system (`<prefix>_top`), synthesizable.

The port names are cocotbext-axi's (`s_axi_*`, as `hdl/axi_burst_master.v` drives them); parameters
DATA_WIDTH (8 up to the line's bits), ID_WIDTH, ADDR_WIDTH (the low bits that fit the part are used) and
READ_WINDOW (memory lines a read burst may have outstanding, a power of two of at least 2).

Bursts are served one at a time, in the order their address handshakes happen (AR and AW alternate when
both wait), so reads and writes are ordered as the master issued them and R beats of one ID keep AR order.
A burst becomes memory-line requests on `<prefix>_top`'s port, every address line-aligned:
- read: each run of beats in one line is one read of that line; up to READ_WINDOW lines are outstanding, their
  data (from `rd_*`, or `fwd_*` when the channel forwards a pending write) collected in any order by channel and
  local address, and the R beats leave in burst order. A line is never requested twice at once (the channel
  would merge the two reads into one response): a repeat waits for the first to return.
- write: beats of one line (INCR, WRAP, FIXED; narrow; WSTRB within the beat's byte lanes) merge into a line
  buffer; when the burst moves to another line or ends, a fully written line is written, a partly written one
  is read first (read-modify-write through the memory: the read returns the line's current data, forwarded
  when a write of it is still pending) and written merged. B follows the last line's write being accepted.
  The burst length, not WLAST, ends a write burst (WLAST is not checked); responses are always OKAY.
The channel orders a read after every write it accepted before it (forwarding, or the store's issue order),
so a read burst after a write burst sees its data.
The channels' outputs (`ch<c>_*`: commands, read responses) are passed through, for logging and checking.
"""

from memsim.channel_params import ChannelParams, bits_for, log2
from memsim.cosim.testbench_top import AXI_SIGNALS
from memsim.rtl.system_verilog import address_decode, channel_outputs, port_widths


def _match(p: ChannelParams, ch: str, local: str, hit: str, data: str) -> str:
    """Statements setting `hit`/`data` when a channel's rd_* or fwd_* response is for (ch, local)."""
    out = []
    for c in range(p.spec.channels):
        for kind in ("rd", "fwd"):
            out.append(f"if (ch{c}_{kind}_valid && {ch} == {c} && {local} == ch{c}_{kind}_addr) begin "
                       f"{hit} = 1'b1; {data} = ch{c}_{kind}_data; end")  # fmt: skip
    return "\n      ".join(out)


class _Param(str):
    """A width named by a module parameter; `_Param("DATA_WIDTH") // 8` is `DATA_WIDTH/8`."""

    def __floordiv__(self, n: int) -> "_Param":
        return _Param(f"{self}/{n}")


def axi_ports() -> str:
    """The `s_axi_*` port declarations, from the AXI signal list the test tops use (widths as parameters)."""
    out = []
    for sig, by_master, width in AXI_SIGNALS:
        w = width(_Param("DATA_WIDTH"), _Param("ID_WIDTH"), _Param("ADDR_WIDTH"))
        rng = f"[{w}-1:0]" if isinstance(w, _Param) else f"[{w - 1}:0]" if w > 1 else ""
        out.append(f"  {'input ' if by_master else 'output'} wire {rng:<20} s_axi_{sig},")
    return "\n".join(out)


def axi_verilog(p: ChannelParams, prefix: str) -> str:
    """The `<prefix>_axi_top` module for the part `p` describes."""
    m = p.mapping
    line_bits = p.data_bits
    lb = log2(line_bits // 8)
    chb = max(1, m.widths["ch"])
    la = p.local_bits
    ch_expr, local_expr = address_decode(p, "req_addr", "req_lnum")
    conns = ", ".join(f".ch{c}_{name}(ch{c}_{name})" for c in range(p.spec.channels) for name in port_widths(p))
    outputs = "\n".join(channel_outputs(p)).rstrip(",")
    text = TEMPLATE
    for key, value in {
        "P": prefix, "LINE": line_bits, "LB": lb, "AB": m.address_bits, "CHB": chb, "LA": la,
        "CH": ch_expr, "LOCAL": local_expr, "CONNS": conns, "OUTPUTS": outputs,
        "MATCH_E": _match(p, "e_ch[j]", "e_local[j]", "e_hit", "e_hit_data"),
        "MATCH_W": _match(p, "w_ch", "w_local", "w_hit", "w_hit_data"),
        "NBB": bits_for(256), "AXI_PORTS": axi_ports(),
    }.items():  # fmt: skip
        text = text.replace(f"@@{key}@@", str(value))
    assert "@@" not in text, text[text.index("@@") : text.index("@@") + 40]
    return text


TEMPLATE = r"""
// AXI4 slave in front of @@P@@_top: bursts served one at a time, split into line requests (see memsim.rtl.axi_verilog)
module @@P@@_axi_top #(
  parameter DATA_WIDTH = 64,
  parameter ID_WIDTH = 4,
  parameter ADDR_WIDTH = 32,
  parameter READ_WINDOW = 4
) (
  input  wire                    clk,
  input  wire                    rst,
@@AXI_PORTS@@
@@OUTPUTS@@
);
  localparam DB = DATA_WIDTH / 8, DBB = $clog2(DB), LINE = @@LINE@@, LBY = LINE / 8, LB = @@LB@@, AB = @@AB@@;
  localparam NW = READ_WINDOW, NWB = $clog2(READ_WINDOW), NBB = @@NBB@@, LNB = ADDR_WIDTH - LB;
  localparam [2:0] IDLE = 3'd0, READ = 3'd1, WBEAT = 3'd2, FLUSH = 3'd3, WRMW = 3'd4, WWAIT = 3'd5, WPUT = 3'd6,
                   BRESP = 3'd7;
`ifndef SYNTHESIS
  initial if (DB < 1 || (1 << DBB) != DB || DATA_WIDTH > LINE || NW < 2 || (1 << NWB) != NW) begin
    $display("@@P@@_axi_top: DATA_WIDTH must be a power of two of 8..%0d bits, READ_WINDOW a power of two >= 2", LINE);
    $finish;
  end
`endif

  // the address of a burst's next beat (AXI4 A3.4.1): FIXED repeats, WRAP wraps at len * size, INCR counts up
  function [ADDR_WIDTH-1:0] next_addr;
    input [ADDR_WIDTH-1:0] a;
    input [2:0] size;
    input [7:0] len;
    input [1:0] burst;
    reg [ADDR_WIDTH-1:0] nb, aligned, wrap;
    begin
      nb = {{(ADDR_WIDTH-1){1'b0}}, 1'b1} << size;
      aligned = a & ~(nb - 1);
      wrap = (({{(ADDR_WIDTH-8){1'b0}}, len} + 1) << size) - 1;
      if (burst == 2'd0) next_addr = a;
      else if (burst == 2'd2) next_addr = (a & ~wrap) | ((aligned + nb) & wrap);
      else next_addr = aligned + nb;
    end
  endfunction
  // the byte lanes a beat at `a` uses: from its address up to its size boundary
  function [DB-1:0] lanes;
    input [ADDR_WIDTH-1:0] a;
    input [2:0] size;
    integer k, lo, hi;
    begin
      lo = a % DB;
      hi = ((a & ~((1 << size) - 1)) % DB) + (1 << size) - 1;
      for (k = 0; k < DB; k = k + 1) lanes[k] = k >= lo && k <= hi;
    end
  endfunction

  // ---- the memory system's request port, shared by the read and the write engine
  wire              req_valid, req_write, req_ready, req_forwarded;
  wire [LNB-1:0]    req_line;
  wire [AB-1:0]     req_addr = {req_line, {LB{1'b0}}};
  wire [AB-LB-1:0]  req_lnum = req_addr[AB-1:LB];
  wire [@@CHB@@-1:0] req_ch = @@CH@@;
  wire [@@LA@@-1:0] req_local = @@LOCAL@@;
  reg  [LINE-1:0]   lb_data;
  @@P@@_top memory (.clk(clk), .rst(rst), .req_valid(req_valid), .req_ready(req_ready), .req_write(req_write),
    .req_addr(req_addr), .req_wdata(lb_data), .req_forwarded(req_forwarded), @@CONNS@@);

  reg [2:0] state;
  reg       prefer_write;
  wire take_ar = state == IDLE && s_axi_arvalid && (!s_axi_awvalid || !prefer_write);
  wire take_aw = state == IDLE && s_axi_awvalid && !take_ar;
  assign s_axi_arready = take_ar;
  assign s_axi_awready = take_aw;

  // ---- read engine: the issue side walks the beats and requests lines; the output side sends R beats
  reg [ID_WIDTH-1:0]   r_id;
  reg [2:0]            r_size;
  reg [7:0]            r_len;
  reg [1:0]            r_burst;
  reg [ADDR_WIDTH-1:0] i_addr, o_addr;
  reg [NBB-1:0]        i_left, o_left;
  reg                  i_open;  // the newest entry may still get beats
  reg [LNB-1:0]        e_line [0:NW-1];
  reg [@@CHB@@-1:0]    e_ch [0:NW-1];
  reg [@@LA@@-1:0]     e_local [0:NW-1];
  reg                  e_filled [0:NW-1];
  reg [NBB-1:0]        e_nb [0:NW-1];
  reg [NBB-1:0]        e_used [0:NW-1];
  reg [LINE-1:0]       e_data [0:NW-1];
  reg [NWB-1:0]        head;
  reg [NWB:0]          count;
  wire [NWB-1:0]       tail = head + count[NWB-1:0];
  wire [NWB-1:0]       newest = tail - 1'b1;
  wire [LNB-1:0]       i_line = i_addr[ADDR_WIDTH-1:LB];
  wire [LB-1:0]        o_word = o_addr[LB-1:0] >> DBB;
  wire                 i_same = i_open && e_line[newest] == i_line;
  reg                  i_conflict;
  always @* begin : conflict
    integer j;
    i_conflict = 1'b0;
    for (j = 0; j < NW; j = j + 1)
      if (((j - head) & (NW - 1)) < count && !e_filled[j] && e_line[j] == i_line) i_conflict = 1'b1;
  end
  wire rd_offer = state == READ && i_left != 0 && !i_same && count < NW && !i_conflict;
  wire rd_take = rd_offer && req_ready;
  wire pop = count != 0 && e_used[head] == e_nb[head] && !(i_open && head == newest);
  assign s_axi_rvalid = state == READ && count != 0 && e_filled[head] && e_used[head] < e_nb[head];
  assign s_axi_rdata = e_data[head][o_word * DATA_WIDTH +: DATA_WIDTH];
  assign s_axi_rlast = o_left == 1;
  assign s_axi_rid = r_id;
  assign s_axi_rresp = 2'b00;

  // ---- write engine: beats merge into the line buffer; a line is flushed (read first when partly written)
  reg [ID_WIDTH-1:0]   w_id;
  reg [2:0]            w_size;
  reg [7:0]            w_len;
  reg [1:0]            w_burst;
  reg [ADDR_WIDTH-1:0] w_addr;
  reg [NBB-1:0]        w_left;
  reg                  lb_valid;
  reg [LNB-1:0]        lb_line;
  reg [LBY-1:0]        lb_mask;
  reg [@@CHB@@-1:0]    w_ch;
  reg [@@LA@@-1:0]     w_local;
  wire [LNB-1:0]       w_line = w_addr[ADDR_WIDTH-1:LB];
  wire [LB-1:0]        w_word = w_addr[LB-1:0] >> DBB;  // the beat's bus word within its line
  assign s_axi_wready = state == WBEAT && w_left != 0 && (!lb_valid || lb_line == w_line);
  assign s_axi_bvalid = state == BRESP;
  assign s_axi_bid = w_id;
  assign s_axi_bresp = 2'b00;

  assign req_valid = rd_offer || state == WRMW || state == WPUT;
  assign req_write = state == WPUT;
  assign req_line = state == READ ? i_line : lb_line;

  // responses: every entry waiting for a line, and the write engine's read, compare (channel, local address)
  reg             w_hit;
  reg [LINE-1:0]  w_hit_data;
  reg [DB-1:0]    w_strobe;
  always @* begin
    w_hit = 1'b0;
    w_hit_data = {LINE{1'b0}};
    @@MATCH_W@@
    w_strobe = s_axi_wstrb & lanes(w_addr, w_size);
  end

  always @(posedge clk) begin : engines
    integer j, k;
    reg e_hit;
    reg [LINE-1:0] e_hit_data;
    if (rst) begin
      state <= IDLE; prefer_write <= 1'b0; count <= 0; head <= 0; i_open <= 1'b0; i_left <= 0; o_left <= 0;
      lb_valid <= 1'b0; lb_mask <= {LBY{1'b0}}; w_left <= 0;
    end else begin
      case (state)
        IDLE: begin
          if (take_ar) begin
            r_id <= s_axi_arid; r_size <= s_axi_arsize; r_len <= s_axi_arlen; r_burst <= s_axi_arburst;
            i_addr <= s_axi_araddr; o_addr <= s_axi_araddr; i_left <= s_axi_arlen + 1; o_left <= s_axi_arlen + 1;
            i_open <= 1'b0; state <= READ; prefer_write <= 1'b1;
          end else if (take_aw) begin
            w_id <= s_axi_awid; w_size <= s_axi_awsize; w_len <= s_axi_awlen; w_burst <= s_axi_awburst;
            w_addr <= s_axi_awaddr; w_left <= s_axi_awlen + 1; state <= WBEAT; prefer_write <= 1'b0;
          end
        end
        READ: begin
          // issue: a beat in the newest entry's line joins it; another line needs a new entry and a request
          if (i_left != 0 && i_same) begin
            e_nb[newest] <= e_nb[newest] + 1;
          end else if (i_left != 0) begin
            i_open <= 1'b0;
            if (rd_take) begin
              e_line[tail] <= i_line; e_ch[tail] <= req_ch; e_local[tail] <= req_local; e_filled[tail] <= 1'b0;
              e_nb[tail] <= 1; e_used[tail] <= 0; i_open <= 1'b1;
            end
          end
          if (i_left != 0 && (i_same || rd_take)) begin
            i_addr <= next_addr(i_addr, r_size, r_len, r_burst);
            i_left <= i_left - 1;
            if (i_left == 1) i_open <= 1'b0;
          end
          // responses fill the waiting entries
          for (j = 0; j < NW; j = j + 1) begin
            e_hit = 1'b0;
            e_hit_data = {LINE{1'b0}};
            @@MATCH_E@@
            if (((j - head) & (NW - 1)) < count && !e_filled[j] && e_hit) begin
              e_filled[j] <= 1'b1; e_data[j] <= e_hit_data;
            end
          end
          // output
          if (s_axi_rvalid && s_axi_rready) begin
            e_used[head] <= e_used[head] + 1;
            o_addr <= next_addr(o_addr, r_size, r_len, r_burst);
            o_left <= o_left - 1;
          end
          if (pop) head <= head + 1'b1;
          count <= count + (rd_take ? 1 : 0) - (pop ? 1 : 0);
          if (i_left == 0 && o_left == 0 && count == 0) state <= IDLE;
        end
        WBEAT: begin
          if (s_axi_wvalid && s_axi_wready) begin
            // every line byte compares its own word with the beat's (constant indices: no shifter)
            for (k = 0; k < LBY; k = k + 1)
              if (k / DB == w_word && w_strobe[k % DB]) begin
                lb_data[k * 8 +: 8] <= s_axi_wdata[(k % DB) * 8 +: 8];
                lb_mask[k] <= 1'b1;
              end
            lb_valid <= 1'b1; lb_line <= w_line;
            w_addr <= next_addr(w_addr, w_size, w_len, w_burst);
            w_left <= w_left - 1;
            if (w_left == 1) state <= FLUSH;
          end else if (lb_valid && lb_line != w_line) state <= FLUSH;
        end
        FLUSH: state <= &lb_mask ? WPUT : WRMW;
        WRMW: if (req_ready) begin w_ch <= req_ch; w_local <= req_local; state <= WWAIT; end
        WWAIT: if (w_hit) begin
          for (k = 0; k < LBY; k = k + 1) if (!lb_mask[k]) lb_data[k * 8 +: 8] <= w_hit_data[k * 8 +: 8];
          state <= WPUT;
        end
        WPUT: if (req_ready) begin
          lb_valid <= 1'b0; lb_mask <= {LBY{1'b0}};
          state <= w_left == 0 ? BRESP : WBEAT;
        end
        BRESP: if (s_axi_bready) state <= IDLE;
        default: state <= IDLE;
      endcase
    end
  end
endmodule
"""

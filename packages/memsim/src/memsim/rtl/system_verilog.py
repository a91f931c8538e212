"""Verilog around the channels: the behavioural data store for simulation and the memory system's top.

`<prefix>_store_sim` is the simulation store: a SystemVerilog associative array, so a part of many
gigabytes costs only the lines written (unwritten lines read as zeros, as memsim's `BackingStore`). It is
not synthesizable; on an FPGA the channel's `store_*` port goes to an external memory with one cycle of
read latency instead. `<prefix>_top` decodes byte addresses with the part's address mapping, sends each
request to its channel and gives every channel its own store: the system a trace-driven run sees.
"""

from memsim.channel_params import ChannelParams, log2

PORTS = (("cmd0_valid", 1), ("cmd0_kind", 4), ("cmd0_bank", "NBB"), ("cmd0_has_addr", 1), ("cmd0_row", "ROWB"),
         ("cmd0_col", "COLB"), ("cmd1_valid", 1), ("cmd1_kind", 4), ("cmd1_bank", "NBB"), ("cmd1_has_addr", 1),
         ("cmd1_row", "ROWB"), ("cmd1_col", "COLB"), ("rd_valid", 1), ("rd_addr", "LA"), ("rd_data", "DW"),
         ("fwd_valid", 1), ("fwd_addr", "LA"), ("fwd_data", "DW"))  # fmt: skip


def port_widths(p: ChannelParams) -> dict[str, int]:
    """Width of each per-channel output of the top."""
    w = p.field_bits
    sizes = {"NBB": log2(p.n_banks), "ROWB": max(1, w["ro"]), "COLB": max(1, w["co"]), "LA": p.local_bits,
             "DW": p.data_bits}  # fmt: skip
    return {name: sizes.get(width, width) if isinstance(width, str) else width for name, width in PORTS}


def store_verilog(p: ChannelParams, prefix: str) -> str:
    la, dw = p.local_bits, p.data_bits
    return f"""
// simulation only: an associative array holds the lines written (Verilator, or any SystemVerilog simulator)
module {prefix}_store_sim (
  input  wire          clk,
  input  wire          wr_en,
  input  wire [{la - 1}:0] wr_addr,
  input  wire [{dw - 1}:0] wr_data,
  input  wire          rd_en,
  input  wire [{la - 1}:0] rd_addr,
  output reg  [{dw - 1}:0] rd_data
);
  logic [{dw - 1}:0] lines [logic [{la - 1}:0]];
  always @(posedge clk) begin
    if (wr_en) lines[wr_addr] = wr_data;  // blocking: an associative array takes no nonblocking writes
    if (rd_en) rd_data <= lines.exists(rd_addr) ? lines[rd_addr] : '0;  // one port is used per cycle
  end
endmodule
"""


def _field(line: str, p: ChannelParams, name: str) -> str | None:
    width = p.mapping.widths[name]
    return f"{line}[{p.mapping.positions[name]} +: {width}]" if width else None


def address_decode(p: ChannelParams, addr: str, line: str) -> tuple[str, str]:
    """Verilog expressions of a byte address's channel and local address, given the names of the address and
    of its line number (`addr` without the offset bits): the part's address mapping, in one place."""
    fields = [f for f in (_field(line, p, n) for n in ("ra", "bg", "ba", "ro", "co")) if f]
    local = ", ".join([*fields, f"{addr}[{p.mapping.shift_bits - 1}:0]"])
    return _field(line, p, "ch") or "0", f"{{{local}}}"


def channel_outputs(p: ChannelParams) -> list[str]:
    """Port declarations of every channel's outputs (`ch<c>_<name>`), as the top has them."""
    return [f"  output wire [{width - 1}:0] ch{c}_{name}," for c in range(p.spec.channels)
            for name, width in port_widths(p).items()]  # fmt: skip


def top_verilog(p: ChannelParams, prefix: str) -> str:
    """`<prefix>_top`: byte-addressed requests, one channel and one simulation store per DRAM channel."""
    spec, m = p.spec, p.mapping
    abits = m.address_bits
    widths = port_widths(p)
    channel, local = address_decode(p, "req_addr", "line")
    ports = channel_outputs(p)
    chan = []
    for c in range(spec.channels):
        conns = ", ".join(f".{name}(ch{c}_{name})" for name in widths if name != "rd_data")
        chan.append(f"""
  wire ready{c}, wr_en{c}, rd_en{c};
  wire [{p.local_bits - 1}:0] wr_addr{c}, rd_addr{c};
  wire [{p.data_bits - 1}:0] wr_data{c}, store_data{c};
  {prefix}_channel channel{c} (.clk(clk), .rst(rst), .req_valid(req_valid && ch == {c}), .req_ready(ready{c}),
    .req_write(req_write), .req_addr(local_addr), .req_wdata(req_wdata), .req_forwarded(fwd{c}), {conns},
    .rd_data(ch{c}_rd_data), .store_wr_en(wr_en{c}), .store_wr_addr(wr_addr{c}), .store_wr_data(wr_data{c}),
    .store_rd_en(rd_en{c}), .store_rd_addr(rd_addr{c}), .store_rd_data(store_data{c}));
  {prefix}_store_sim store{c} (.clk(clk), .wr_en(wr_en{c}), .wr_addr(wr_addr{c}), .wr_data(wr_data{c}),
    .rd_en(rd_en{c}), .rd_addr(rd_addr{c}), .rd_data(store_data{c}));""")
    ready = " : ".join(f"ch == {c} ? ready{c}" for c in range(spec.channels)) + " : 1'b0"
    fwd = " : ".join(f"ch == {c} ? fwd{c}" for c in range(spec.channels)) + " : 1'b0"
    body = "\n".join(ports)
    return f"""
// {spec.name}: {spec.channels} channel(s); byte addresses of {abits} bits ({m.mapping})
module {prefix}_top (
  input  wire clk,
  input  wire rst,
  input  wire req_valid,
  output wire req_ready,
  input  wire req_write,
  input  wire [{abits - 1}:0] req_addr,
  input  wire [{p.data_bits - 1}:0] req_wdata,
  output wire req_forwarded,
{body.rstrip(",")}
);
  wire [{abits - m.shift_bits - 1}:0] line = req_addr[{abits - 1}:{m.shift_bits}];
  wire [{max(1, m.widths["ch"]) - 1}:0] ch = {channel};
  wire [{p.local_bits - 1}:0] local_addr = {local};
  wire {", ".join(f"fwd{c}" for c in range(spec.channels))};
{"".join(chan)}
  assign req_ready = {ready};
  assign req_forwarded = {fwd};
endmodule
"""

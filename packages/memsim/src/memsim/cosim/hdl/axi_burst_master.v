// axi_burst_master: an AXI4 master that replays a list of bursts from files and logs what it receives,
// so a test can check a slave's data and protocol against a model after the run.
//
// Plusargs start with the instance's NAME (so one simulation can hold several masters):
// +NAME_desc=FILE   one 64-bit hex word per burst: [31:0] address, [39:32] AxLEN, [42:40] AxSIZE,
//                   [44:43] AxBURST, [52:45] ID, [53] write, [54] barrier (wait until nothing is outstanding)
// +NAME_wbeats=FILE one hex word per W beat, in AW order: {WSTRB, WDATA}
// +NAME_ndesc=N, +NAME_nbeats=N   entries in those files;   +NAME_log=FILE   where the log goes
// +NAME_gap=P       percent of cycles a new AR/AW/W is held back; +NAME_stall=P  percent of cycles RREADY/BREADY is low
//
// Bursts are issued in file order (reads on AR, writes on AW) with at most MAX_OUT outstanding; W beats
// follow AW order. The log has one line per handshake with the cycle count:
//   AR <burst> <cycle>   AW <burst> <cycle>   R <id> <data> <last> <resp> <cycle>   B <id> <resp> <cycle>
// done rises once every burst has its last response.
`timescale 1ns/1ps
/* verilator lint_off WIDTH */
module axi_burst_master #(
    parameter AW = 32,
    parameter DW = 64,
    parameter IW = 4,
    parameter MAX_OUT = 8,
    parameter MAX_DESC = 4096,
    parameter MAX_BEATS = 65536,
    parameter NAME = "m"
) (
    input  wire            clk,
    input  wire            rst,
    output wire            done,
    output reg  [31:0]     cycle,
    // read address
    output reg  [IW-1:0]   m_axi_arid,
    output reg  [AW-1:0]   m_axi_araddr,
    output reg  [7:0]      m_axi_arlen,
    output reg  [2:0]      m_axi_arsize,
    output reg  [1:0]      m_axi_arburst,
    output reg             m_axi_arvalid,
    input  wire            m_axi_arready,
    // write address
    output reg  [IW-1:0]   m_axi_awid,
    output reg  [AW-1:0]   m_axi_awaddr,
    output reg  [7:0]      m_axi_awlen,
    output reg  [2:0]      m_axi_awsize,
    output reg  [1:0]      m_axi_awburst,
    output reg             m_axi_awvalid,
    input  wire            m_axi_awready,
    // write data
    output reg  [DW-1:0]   m_axi_wdata,
    output reg  [DW/8-1:0] m_axi_wstrb,
    output reg             m_axi_wlast,
    output reg             m_axi_wvalid,
    input  wire            m_axi_wready,
    // write response
    input  wire [IW-1:0]   m_axi_bid,
    input  wire [1:0]      m_axi_bresp,
    input  wire            m_axi_bvalid,
    output reg             m_axi_bready,
    // read data
    input  wire [IW-1:0]   m_axi_rid,
    input  wire [DW-1:0]   m_axi_rdata,
    input  wire [1:0]      m_axi_rresp,
    input  wire            m_axi_rlast,
    input  wire            m_axi_rvalid,
    output reg             m_axi_rready
);
    reg [63:0]          desc [0:MAX_DESC-1];
    reg [DW+DW/8-1:0]   wbeat [0:MAX_BEATS-1];
    reg [7:0]           wlen_q [0:MAX_OUT-1];   // AxLEN of accepted AWs whose beats are not all sent
    integer ndesc, nbeats, gap, stall, log, next, outstanding, wq_head, wq_count, wptr, wcount;
    reg [31:0] lfsr;
    reg [1023:0] fname;

    assign done = next == ndesc && outstanding == 0 && wq_count == 0 && !m_axi_wvalid && !rst;

    initial begin
        ndesc = 0; nbeats = 0; gap = 0; stall = 0;
        if (!$value$plusargs({NAME, "_ndesc=%d"}, ndesc)) ndesc = 0;
        if (!$value$plusargs({NAME, "_nbeats=%d"}, nbeats)) nbeats = 0;
        if (ndesc > MAX_DESC || nbeats > MAX_BEATS) begin
            $display("axi_burst_master: %0d bursts / %0d W beats exceed MAX_DESC / MAX_BEATS", ndesc, nbeats);
            $finish;
        end
        if (ndesc > 0 && $value$plusargs({NAME, "_desc=%s"}, fname)) $readmemh(fname, desc, 0, ndesc - 1);
        if (nbeats > 0 && $value$plusargs({NAME, "_wbeats=%s"}, fname)) $readmemh(fname, wbeat, 0, nbeats - 1);
        if (!$value$plusargs({NAME, "_gap=%d"}, gap)) gap = 0;
        if (!$value$plusargs({NAME, "_stall=%d"}, stall)) stall = 0;
        if (!$value$plusargs({NAME, "_log=%s"}, fname)) fname = {NAME, ".log"};
        log = $fopen(fname, "w");
    end

    reg flushed;
    always @(posedge clk) begin  // the log is complete once done rises
        if (rst) flushed <= 0;
        else if (done && !flushed) begin
            $fflush(log);
            flushed <= 1;
        end
    end

    function integer pct;  // a pseudo-random percentage from the LFSR state
        input [31:0] x;
        pct = x[22:16] % 100;
    endfunction

    always @(posedge clk) begin : step
        integer out_n, next_n, wq_n;
        reg [63:0] d;
        if (rst) begin
            cycle <= 0; next <= 0; outstanding <= 0; wq_head <= 0; wq_count <= 0; wptr <= 0; wcount <= 0;
            lfsr <= 32'h1234_5678;
            m_axi_arvalid <= 0; m_axi_awvalid <= 0; m_axi_wvalid <= 0; m_axi_wlast <= 0;
            m_axi_rready <= 0; m_axi_bready <= 0;
        end else begin
            out_n = outstanding;
            next_n = next;
            wq_n = wq_count;
            cycle <= cycle + 1;
            lfsr <= {lfsr[30:0], lfsr[31] ^ lfsr[21] ^ lfsr[1] ^ lfsr[0]};
            // responses: a burst is done on its last R beat or its B
            if (m_axi_rvalid && m_axi_rready) begin
                $fwrite(log, "R %0d %0h %0d %0d %0d\n", m_axi_rid, m_axi_rdata, m_axi_rlast, m_axi_rresp, cycle);
                if (m_axi_rlast) out_n = out_n - 1;
            end
            if (m_axi_bvalid && m_axi_bready) begin
                $fwrite(log, "B %0d %0d %0d\n", m_axi_bid, m_axi_bresp, cycle);
                out_n = out_n - 1;
            end
            m_axi_rready <= pct(lfsr * 7) >= stall;
            m_axi_bready <= pct(lfsr * 13) >= stall;
            // address channels: one burst at a time, in file order; a new one may follow a handshake at once
            if (m_axi_arvalid && m_axi_arready) begin
                $fwrite(log, "AR %0d %0d\n", next, cycle);
                next_n = next_n + 1;
            end
            if (m_axi_awvalid && m_axi_awready) begin
                $fwrite(log, "AW %0d %0d\n", next, cycle);
                wlen_q[(wq_head + wq_count) % MAX_OUT] <= m_axi_awlen;
                wq_n = wq_n + 1;
                next_n = next_n + 1;
            end
            if ((!m_axi_arvalid || m_axi_arready) && (!m_axi_awvalid || m_axi_awready)) begin
                m_axi_arvalid <= 0;
                m_axi_awvalid <= 0;
                d = desc[next_n];
                if (next_n < ndesc && out_n < MAX_OUT && (!d[54] || out_n == 0) && pct(lfsr) >= gap) begin
                    out_n = out_n + 1;
                    if (d[53]) begin
                        m_axi_awaddr <= d[31:0]; m_axi_awlen <= d[39:32]; m_axi_awsize <= d[42:40];
                        m_axi_awburst <= d[44:43]; m_axi_awid <= d[52:45]; m_axi_awvalid <= 1;
                    end else begin
                        m_axi_araddr <= d[31:0]; m_axi_arlen <= d[39:32]; m_axi_arsize <= d[42:40];
                        m_axi_arburst <= d[44:43]; m_axi_arid <= d[52:45]; m_axi_arvalid <= 1;
                    end
                end
            end
            // write data: the beats of the oldest accepted AW (accepted on an earlier edge)
            if (!m_axi_wvalid || m_axi_wready) begin
                m_axi_wvalid <= 0;
                if (wq_count > 0 && pct(lfsr * 3) >= gap) begin
                    {m_axi_wstrb, m_axi_wdata} <= wbeat[wptr];
                    m_axi_wvalid <= 1;
                    m_axi_wlast <= wcount == wlen_q[wq_head];
                    wptr <= wptr + 1;
                    if (wcount == wlen_q[wq_head]) begin
                        wcount <= 0;
                        wq_head <= (wq_head + 1) % MAX_OUT;
                        wq_n = wq_n - 1;
                    end else wcount <= wcount + 1;
                end
            end
            outstanding <= out_n;
            next <= next_n;
            wq_count <= wq_n;
        end
    end
endmodule

// axi_dma: a DMA-style AXI4 traffic generator that checks its own data.
//
// After start it runs three phases over BYTES bytes in INCR bursts of BURST full-width beats:
//   fill   write a pattern (a hash of each beat's address) to SRC
//   copy   read SRC into NSLOT burst buffers (one AXI ID per buffer, so bursts complete out of order)
//          and write each buffer to DST as soon as its last beat is in
//   check  read DST and count the beats that differ from the pattern of their SRC address
// done rises when the check has read everything; errors counts bad beats. first_ar / first_r are the
// cycles of the first AR handshake and of its first R beat (the unloaded read latency).
// Plusargs: +dma_src=ADDR +dma_dst=ADDR +dma_bytes=N (hex addresses, decimal bytes) override the ports.
`timescale 1ns/1ps
/* verilator lint_off WIDTH */
module axi_dma #(
    parameter AW = 32,
    parameter DW = 64,
    parameter IW = 4,
    parameter BURST = 16,
    parameter NSLOT = 4
) (
    input  wire            clk,
    input  wire            rst,
    input  wire            start,
    input  wire [AW-1:0]   src,
    input  wire [AW-1:0]   dst,
    input  wire [31:0]     bytes,
    output reg             done,
    output reg  [31:0]     errors,
    output reg  [31:0]     cycle,
    output reg  [31:0]     first_ar,
    output reg  [31:0]     first_r,
    output reg  [IW-1:0]   m_axi_arid,
    output reg  [AW-1:0]   m_axi_araddr,
    output wire [7:0]      m_axi_arlen,
    output wire [2:0]      m_axi_arsize,
    output wire [1:0]      m_axi_arburst,
    output reg             m_axi_arvalid,
    input  wire            m_axi_arready,
    output reg  [IW-1:0]   m_axi_awid,
    output reg  [AW-1:0]   m_axi_awaddr,
    output wire [7:0]      m_axi_awlen,
    output wire [2:0]      m_axi_awsize,
    output wire [1:0]      m_axi_awburst,
    output reg             m_axi_awvalid,
    input  wire            m_axi_awready,
    output reg  [DW-1:0]   m_axi_wdata,
    output wire [DW/8-1:0] m_axi_wstrb,
    output reg             m_axi_wlast,
    output reg             m_axi_wvalid,
    input  wire            m_axi_wready,
    input  wire [IW-1:0]   m_axi_bid,
    input  wire [1:0]      m_axi_bresp,
    input  wire            m_axi_bvalid,
    output wire            m_axi_bready,
    input  wire [IW-1:0]   m_axi_rid,
    input  wire [DW-1:0]   m_axi_rdata,
    input  wire [1:0]      m_axi_rresp,
    input  wire            m_axi_rlast,
    input  wire            m_axi_rvalid,
    output wire            m_axi_rready
);
    localparam BEAT_BYTES = DW / 8;
    localparam BURST_BYTES = BURST * BEAT_BYTES;
    localparam IDLE = 0, FILL = 1, COPY = 2, CHECK = 3, DONE = 4;
    localparam FREE = 0, READING = 1, FULL = 2, WRITING = 3;

    assign m_axi_arlen = BURST - 1;
    assign m_axi_awlen = BURST - 1;
    assign m_axi_arsize = $clog2(BEAT_BYTES);
    assign m_axi_awsize = $clog2(BEAT_BYTES);
    assign m_axi_arburst = 2'b01;
    assign m_axi_awburst = 2'b01;
    assign m_axi_wstrb = {BEAT_BYTES{1'b1}};
    assign m_axi_bready = 1'b1;
    assign m_axi_rready = 1'b1;

    reg [2:0]    phase;
    reg [AW-1:0] src_r, dst_r;
    reg [31:0]   nbursts, next_rd, next_wr, acks, reads_done;
    reg [DW-1:0] buffer [0:NSLOT*BURST-1];
    reg [1:0]    slot_state [0:NSLOT-1];
    reg [31:0]   slot_burst [0:NSLOT-1];
    reg [7:0]    slot_beats [0:NSLOT-1];
    reg [31:0]   wq_burst [0:NSLOT-1];   // W beats owed, in AW order: burst number and slot
    reg [IW-1:0] wq_slot [0:NSLOT-1];
    integer      wq_head, wq_count, wbeat, outstanding, i;
    reg          seen_first_r;
    reg [31:0]   plus_bytes;
    reg [AW-1:0] plus_src, plus_dst;
    reg          have_bytes, have_src, have_dst;

    initial begin
        have_bytes = $value$plusargs("dma_bytes=%d", plus_bytes);
        have_src = $value$plusargs("dma_src=%h", plus_src);
        have_dst = $value$plusargs("dma_dst=%h", plus_dst);
    end

    function [DW-1:0] pattern;  // the data of the beat at byte address a of SRC
        input [31:0] a;
        integer k;
        begin
            for (k = 0; k < DW / 32; k = k + 1)
                pattern[32*k +: 32] = (a + 4 * k) * 32'h9E37_79B1 ^ (a >> 5) ^ 32'h5A5A_0000;
        end
    endfunction

    function integer full_slot;  // the lowest slot holding a whole burst, or -1
        input dummy;
        integer s;
        begin
            full_slot = -1;
            for (s = NSLOT - 1; s >= 0; s = s - 1) if (slot_state[s] == FULL) full_slot = s;
        end
    endfunction

    function integer free_slot;
        input dummy;
        integer s;
        begin
            free_slot = -1;
            for (s = NSLOT - 1; s >= 0; s = s - 1) if (slot_state[s] == FREE) free_slot = s;
        end
    endfunction

    always @(posedge clk) begin : step
        integer s, wq_n, out_n;
        if (rst) begin
            phase <= IDLE; done <= 0; errors <= 0; cycle <= 0; first_ar <= 0; first_r <= 0; seen_first_r <= 0;
            m_axi_arvalid <= 0; m_axi_awvalid <= 0; m_axi_wvalid <= 0; m_axi_wlast <= 0;
            wq_head <= 0; wq_count <= 0; wbeat <= 0; outstanding <= 0;
            for (i = 0; i < NSLOT; i = i + 1) slot_state[i] <= FREE;
        end else begin
            cycle <= cycle + 1;
            wq_n = wq_count;
            out_n = outstanding;
            case (phase)
                IDLE: if (start) begin
                    src_r <= have_src ? plus_src : src;
                    dst_r <= have_dst ? plus_dst : dst;
                    nbursts <= (have_bytes ? plus_bytes : bytes) / BURST_BYTES;
                    next_rd <= 0; next_wr <= 0; acks <= 0; reads_done <= 0;
                    phase <= FILL;
                end
                DONE: done <= 1;
                default: ;
            endcase
            // read data: store (copy) or compare (check)
            if (m_axi_rvalid) begin
                if (!seen_first_r) begin
                    first_r <= cycle;
                    seen_first_r <= 1;
                end
                s = m_axi_rid;
                if (phase == COPY) buffer[s * BURST + slot_beats[s]] <= m_axi_rdata;
                else if (m_axi_rdata !== pattern(src_r + slot_burst[s] * BURST_BYTES + slot_beats[s] * BEAT_BYTES))
                    errors <= errors + 1;
                if (m_axi_rresp != 0) errors <= errors + 1;
                slot_beats[s] <= slot_beats[s] + 1;
                if (m_axi_rlast) begin
                    if (slot_beats[s] != BURST - 1) errors <= errors + 1;
                    slot_state[s] <= phase == COPY ? FULL : FREE;
                    if (phase == CHECK) reads_done <= reads_done + 1;
                end
            end
            // write responses
            if (m_axi_bvalid) begin
                acks <= acks + 1;
                if (m_axi_bresp != 0) errors <= errors + 1;
                if (phase == COPY) slot_state[m_axi_bid] <= FREE;
                else out_n = out_n - 1;
            end
            // read addresses (copy, check): one burst per free slot
            if (m_axi_arvalid && m_axi_arready) begin
                m_axi_arvalid <= 0;
                if (first_ar == 0) first_ar <= cycle;
            end else if (!m_axi_arvalid && (phase == COPY || phase == CHECK) && next_rd < nbursts
                         && free_slot(0) >= 0) begin
                s = free_slot(0);
                slot_state[s] <= READING;
                slot_burst[s] <= next_rd;
                slot_beats[s] <= 0;
                m_axi_arid <= s;
                m_axi_araddr <= (phase == COPY ? src_r : dst_r) + next_rd * BURST_BYTES;
                m_axi_arvalid <= 1;
                next_rd <= next_rd + 1;
            end
            // write addresses: the pattern (fill) or a full buffer (copy)
            if (m_axi_awvalid && m_axi_awready) begin
                m_axi_awvalid <= 0;
            end else if (!m_axi_awvalid && wq_n < NSLOT) begin
                if (phase == FILL && next_wr < nbursts && out_n < NSLOT) begin
                    m_axi_awid <= 0;
                    m_axi_awaddr <= src_r + next_wr * BURST_BYTES;
                    m_axi_awvalid <= 1;
                    wq_burst[(wq_head + wq_n) % NSLOT] <= next_wr;
                    wq_slot[(wq_head + wq_n) % NSLOT] <= 0;
                    wq_n = wq_n + 1;
                    out_n = out_n + 1;
                    next_wr <= next_wr + 1;
                end else if (phase == COPY && full_slot(0) >= 0) begin
                    s = full_slot(0);
                    slot_state[s] <= WRITING;
                    m_axi_awid <= s;
                    m_axi_awaddr <= dst_r + slot_burst[s] * BURST_BYTES;
                    m_axi_awvalid <= 1;
                    wq_burst[(wq_head + wq_n) % NSLOT] <= slot_burst[s];
                    wq_slot[(wq_head + wq_n) % NSLOT] <= s;
                    wq_n = wq_n + 1;
                    next_wr <= next_wr + 1;
                end
            end
            // write data of the oldest AW (queued on an earlier edge)
            if (!m_axi_wvalid || m_axi_wready) begin
                m_axi_wvalid <= 0;
                if (wq_count > 0) begin
                    m_axi_wvalid <= 1;
                    m_axi_wlast <= wbeat == BURST - 1;
                    m_axi_wdata <= phase == FILL ? pattern(src_r + wq_burst[wq_head] * BURST_BYTES + wbeat * BEAT_BYTES)
                                                 : buffer[wq_slot[wq_head] * BURST + wbeat];
                    if (wbeat == BURST - 1) begin
                        wbeat <= 0;
                        wq_head <= (wq_head + 1) % NSLOT;
                        wq_n = wq_n - 1;
                    end else wbeat <= wbeat + 1;
                end
            end
            wq_count <= wq_n;
            outstanding <= out_n;
            // phase changes once everything of a phase is acknowledged
            if (phase == FILL && acks + m_axi_bvalid == nbursts && next_wr == nbursts) begin
                phase <= COPY; acks <= 0; next_rd <= 0; next_wr <= 0;
            end else if (phase == COPY && acks + m_axi_bvalid == nbursts && next_wr == nbursts) begin
                phase <= CHECK; next_rd <= 0;
            end else if (phase == CHECK && reads_done + (m_axi_rvalid && m_axi_rlast) == nbursts) begin
                phase <= DONE;
            end
        end
    end
endmodule

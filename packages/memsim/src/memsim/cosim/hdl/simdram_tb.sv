// simdram_tb: memsim's test bench for the SimDRAM drop-in: the axi_dma traffic generator on a SimDRAM
// (SimDRAM.sv, the same ports and DPI functions as Chipyard's), for Verilator with a C++ main that drives
// clk (native/simdram_main.cc). done / errors / cycle / first_ar / first_r come from the DMA.
`timescale 1ns/1ps
module simdram_tb #(
    parameter DW = 64, IW = 4, BURST = 16, NSLOT = 4, CLOCK_HZ = 1000000000,
    parameter MEM_BASE = 32'h8000_0000, MEM_SIZE = 64'h1000_0000
) (
    input  wire        clk,
    input  wire        rst,
    output wire        done,
    output wire [31:0] errors,
    output wire [31:0] cycle,
    output wire [31:0] first_ar,
    output wire [31:0] first_r
);
    wire [IW-1:0] arid, awid, bid, rid;
    wire [31:0] araddr, awaddr;
    wire [7:0] arlen, awlen;
    wire [2:0] arsize, awsize;
    wire [1:0] arburst, awburst, bresp, rresp;
    wire arvalid, arready, awvalid, awready, wlast, wvalid, wready, bvalid, bready, rlast, rvalid, rready;
    wire [DW-1:0] wdata, rdata;
    wire [DW/8-1:0] wstrb;

    axi_dma #(.DW(DW), .IW(IW), .BURST(BURST), .NSLOT(NSLOT)) dma (
        .clk(clk), .rst(rst), .start(1'b1), .src(MEM_BASE), .dst(MEM_BASE + 32'h0100_0000), .bytes(32'h1_0000),
        .done(done), .errors(errors), .cycle(cycle), .first_ar(first_ar), .first_r(first_r),
        .m_axi_arid(arid), .m_axi_araddr(araddr), .m_axi_arlen(arlen), .m_axi_arsize(arsize),
        .m_axi_arburst(arburst), .m_axi_arvalid(arvalid), .m_axi_arready(arready),
        .m_axi_awid(awid), .m_axi_awaddr(awaddr), .m_axi_awlen(awlen), .m_axi_awsize(awsize),
        .m_axi_awburst(awburst), .m_axi_awvalid(awvalid), .m_axi_awready(awready),
        .m_axi_wdata(wdata), .m_axi_wstrb(wstrb), .m_axi_wlast(wlast), .m_axi_wvalid(wvalid), .m_axi_wready(wready),
        .m_axi_bid(bid), .m_axi_bresp(bresp), .m_axi_bvalid(bvalid), .m_axi_bready(bready),
        .m_axi_rid(rid), .m_axi_rdata(rdata), .m_axi_rresp(rresp), .m_axi_rlast(rlast), .m_axi_rvalid(rvalid),
        .m_axi_rready(rready)
    );

    SimDRAM #(.ADDR_BITS(32), .DATA_BITS(DW), .ID_BITS(IW), .MEM_SIZE(MEM_SIZE), .CLOCK_HZ(CLOCK_HZ),
              .MEM_BASE(MEM_BASE)) dram (
        .clock(clk), .reset(rst),
        .axi_aw_ready(awready), .axi_aw_valid(awvalid), .axi_aw_bits_addr(awaddr), .axi_aw_bits_len(awlen),
        .axi_aw_bits_size(awsize), .axi_aw_bits_burst(awburst), .axi_aw_bits_lock(1'b0), .axi_aw_bits_cache(4'b0),
        .axi_aw_bits_prot(3'b0), .axi_aw_bits_qos(4'b0), .axi_aw_bits_id(awid),
        .axi_w_ready(wready), .axi_w_valid(wvalid), .axi_w_bits_data(wdata), .axi_w_bits_last(wlast),
        .axi_w_bits_strb(wstrb),
        .axi_b_ready(bready), .axi_b_valid(bvalid), .axi_b_bits_resp(bresp), .axi_b_bits_id(bid),
        .axi_ar_ready(arready), .axi_ar_valid(arvalid), .axi_ar_bits_addr(araddr), .axi_ar_bits_len(arlen),
        .axi_ar_bits_size(arsize), .axi_ar_bits_burst(arburst), .axi_ar_bits_lock(1'b0), .axi_ar_bits_cache(4'b0),
        .axi_ar_bits_prot(3'b0), .axi_ar_bits_qos(4'b0), .axi_ar_bits_id(arid),
        .axi_r_ready(rready), .axi_r_valid(rvalid), .axi_r_bits_resp(rresp), .axi_r_bits_data(rdata),
        .axi_r_bits_last(rlast), .axi_r_bits_id(rid)
    );
endmodule

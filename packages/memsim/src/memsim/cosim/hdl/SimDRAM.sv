// SimDRAM: an AXI4 memory whose behaviour comes from two DPI-C functions, with the module name, parameters,
// ports and DPI signatures of Chipyard's SimDRAM (testchipip, vsrc/SimDRAM.v), so a harness written for
// SimDRAM can use this one and either C++ side: testchipip's (DRAMSim) or memsim's libmemsim_simdram.so.
//
// Every rising edge out of reset hands the design's AXI outputs to memory_tick, which completes the
// handshakes offered by the previous edge's outputs and returns the outputs for the next edge; they are
// registered here, so the design sees them one edge later (the timing SimDRAM's C++ models assume).
`timescale 1ns/1ps
import "DPI-C" function chandle memory_init(input int chip_id, input longint mem_size, input longint word_size,
    input longint line_size, input longint id_bits, input longint clock_hz, input longint mem_base, input int addr_bits);

import "DPI-C" function void memory_tick(input chandle channel, input bit reset,
    input bit ar_valid, output bit ar_ready, input longint ar_addr, input int ar_id, input int ar_size, input int ar_len,
    input bit aw_valid, output bit aw_ready, input longint aw_addr, input int aw_id, input int aw_size, input int aw_len,
    input bit w_valid, output bit w_ready, input int w_strb, input byte w_data[], input bit w_last,
    output bit r_valid, input bit r_ready, output int r_id, output int r_resp, output byte r_data[], output bit r_last,
    output bit b_valid, input bit b_ready, output int b_id, output int b_resp);

/* verilator lint_off WIDTH */
module SimDRAM #(
    parameter ADDR_BITS = 32, DATA_BITS = 64, ID_BITS = 5, MEM_SIZE = 1000 * 1000 * 1000, LINE_SIZE = 64,
    WORD_SIZE = DATA_BITS / 8, CLOCK_HZ = 100000, STRB_BITS = DATA_BITS / 8, MEM_BASE = 0, CHIP_ID = 0
) (
    input  wire                 clock,
    input  wire                 reset,
    output reg                  axi_aw_ready,
    input  wire                 axi_aw_valid,
    input  wire [ADDR_BITS-1:0] axi_aw_bits_addr,
    input  wire [7:0]           axi_aw_bits_len,
    input  wire [2:0]           axi_aw_bits_size,
    input  wire [1:0]           axi_aw_bits_burst,
    input  wire                 axi_aw_bits_lock,
    input  wire [3:0]           axi_aw_bits_cache,
    input  wire [2:0]           axi_aw_bits_prot,
    input  wire [3:0]           axi_aw_bits_qos,
    input  wire [ID_BITS-1:0]   axi_aw_bits_id,
    output reg                  axi_w_ready,
    input  wire                 axi_w_valid,
    input  wire [DATA_BITS-1:0] axi_w_bits_data,
    input  wire                 axi_w_bits_last,
    input  wire [STRB_BITS-1:0] axi_w_bits_strb,
    input  wire                 axi_b_ready,
    output reg                  axi_b_valid,
    output reg  [1:0]           axi_b_bits_resp,
    output reg  [ID_BITS-1:0]   axi_b_bits_id,
    output reg                  axi_ar_ready,
    input  wire                 axi_ar_valid,
    input  wire [ADDR_BITS-1:0] axi_ar_bits_addr,
    input  wire [7:0]           axi_ar_bits_len,
    input  wire [2:0]           axi_ar_bits_size,
    input  wire [1:0]           axi_ar_bits_burst,
    input  wire                 axi_ar_bits_lock,
    input  wire [3:0]           axi_ar_bits_cache,
    input  wire [2:0]           axi_ar_bits_prot,
    input  wire [3:0]           axi_ar_bits_qos,
    input  wire [ID_BITS-1:0]   axi_ar_bits_id,
    input  wire                 axi_r_ready,
    output reg                  axi_r_valid,
    output reg  [1:0]           axi_r_bits_resp,
    output reg  [DATA_BITS-1:0] axi_r_bits_data,
    output reg                  axi_r_bits_last,
    output reg  [ID_BITS-1:0]   axi_r_bits_id
);
    chandle handle = null;
    byte w_bytes [DATA_BITS/8-1:0];
    byte r_bytes [DATA_BITS/8-1:0];
    bit ar_ready, aw_ready, w_ready, r_valid, r_last, b_valid;
    int r_id, r_resp, b_id, b_resp;

    always @(posedge clock) begin
        if (reset) begin
            {axi_ar_ready, axi_aw_ready, axi_w_ready, axi_r_valid, axi_b_valid} <= '0;
        end else begin
            if (handle == null)
                handle = memory_init(CHIP_ID, MEM_SIZE, WORD_SIZE, LINE_SIZE, ID_BITS, CLOCK_HZ, MEM_BASE, ADDR_BITS);
            for (int i = 0; i < DATA_BITS / 8; i++) w_bytes[i] = axi_w_bits_data[8*i +: 8];
            memory_tick(handle, reset,
                axi_ar_valid, ar_ready, axi_ar_bits_addr, axi_ar_bits_id, axi_ar_bits_size, axi_ar_bits_len,
                axi_aw_valid, aw_ready, axi_aw_bits_addr, axi_aw_bits_id, axi_aw_bits_size, axi_aw_bits_len,
                axi_w_valid, w_ready, axi_w_bits_strb, w_bytes, axi_w_bits_last,
                r_valid, axi_r_ready, r_id, r_resp, r_bytes, r_last,
                b_valid, axi_b_ready, b_id, b_resp);
            axi_ar_ready <= ar_ready;
            axi_aw_ready <= aw_ready;
            axi_w_ready <= w_ready;
            axi_r_valid <= r_valid;
            axi_r_bits_id <= r_id;
            axi_r_bits_resp <= r_resp;
            axi_r_bits_last <= r_last;
            for (int i = 0; i < DATA_BITS / 8; i++) axi_r_bits_data[8*i +: 8] <= r_bytes[i];
            axi_b_valid <= b_valid;
            axi_b_bits_id <= b_id;
            axi_b_bits_resp <= b_resp;
        end
    end
endmodule

// dma_copy: a small DMA engine that copies LINES memory lines from SRC to DST through a
// valid/ready memory port, the kind of design memsim serves in RTL co-simulation.
//
// Request channel:  req_valid/req_ready handshake; req_write, req_addr, req_wdata, req_tag.
// Response channel: resp_valid/resp_ready handshake; resp_write (1 = write acknowledge),
//                   resp_rdata, resp_tag (the request's tag). Responses may come back out of order.
// Reads are issued back to back (one outstanding per tag); each read response turns into the
// write of the same data to DST at the same line offset; done pulses once every write is acknowledged.
`timescale 1ns/1ps
module dma_copy #(
    parameter AW = 32,
    parameter DW = 512,
    parameter TW = 8,
    parameter LINE_BYTES = 64
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          start,
    input  wire [AW-1:0] src,
    input  wire [AW-1:0] dst,
    input  wire [TW-1:0] lines,
    output reg           busy,
    output reg           done,
    output wire          req_valid,
    input  wire          req_ready,
    output wire          req_write,
    output wire [AW-1:0] req_addr,
    output wire [DW-1:0] req_wdata,
    output wire [TW-1:0] req_tag,
    input  wire          resp_valid,
    output wire          resp_ready,
    input  wire          resp_write,
    input  wire [DW-1:0] resp_rdata,
    input  wire [TW-1:0] resp_tag
);
    reg [AW-1:0] src_r, dst_r;
    reg [TW-1:0] lines_r, rd_next, acks;
    reg          wpend;      // a read came back: its write is waiting for the request channel
    reg [AW-1:0] waddr;
    reg [DW-1:0] wdata;
    reg [TW-1:0] wtag;

    assign req_valid  = busy && (wpend || rd_next != lines_r);
    assign req_write  = wpend;
    assign req_addr   = wpend ? waddr : src_r + rd_next * LINE_BYTES;
    assign req_wdata  = wdata;
    assign req_tag    = wpend ? wtag : rd_next;
    assign resp_ready = busy && !wpend;

    always @(posedge clk) begin
        if (rst) begin
            busy <= 1'b0; done <= 1'b0; wpend <= 1'b0;
            rd_next <= 0; acks <= 0; lines_r <= 0;
        end else begin
            done <= 1'b0;
            if (!busy) begin
                if (start) begin
                    busy <= 1'b1; src_r <= src; dst_r <= dst; lines_r <= lines;
                    rd_next <= 0; acks <= 0; wpend <= 1'b0;
                end
            end else begin
                if (req_valid && req_ready) begin
                    if (wpend) wpend <= 1'b0;
                    else rd_next <= rd_next + 1'b1;
                end
                if (resp_valid && resp_ready) begin
                    if (resp_write) acks <= acks + 1'b1;
                    else begin
                        wpend <= 1'b1;
                        waddr <= dst_r + resp_tag * LINE_BYTES;
                        wdata <= resp_rdata;
                        wtag  <= resp_tag;
                    end
                end
                if (acks == lines_r) begin
                    busy <= 1'b0;
                    done <= 1'b1;
                end
            end
        end
    end
endmodule

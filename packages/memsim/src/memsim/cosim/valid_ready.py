"""A memsim-backed memory behind a valid/ready request/response port of a cocotb DUT.

Once per clock, at the falling edge (when the DUT's registered outputs are stable), the port samples
the request channel, answers `req_ready` from memsim's queue occupancy, hands an accepted request to
memsim, offers the oldest completed response, and advances memsim by one cycle: the DUT sees exactly
memsim's cycle-accurate latency (memory clock = DUT clock) and the data memsim's functional store holds.
"""

from collections import deque
from typing import Any

from cocotb.triggers import FallingEdge

from memsim.memory_system import MemorySystem
from memsim.transaction import Transaction


class ValidReadyMemory:
    """Drives `req_ready`, `resp_valid`, `resp_write`, `resp_rdata`, `resp_tag` of `dut` from `system`."""

    def __init__(self, dut: Any, system: MemorySystem) -> None:
        self.dut = dut
        self.system = system
        self.responses: deque[Transaction] = deque()
        self.accepted: list[Transaction] = []
        self.response_cycles: dict[int, int] = {}  # id(transaction) -> cycle the DUT took the response
        self.cycle = 0

    def _done(self, trans: Transaction) -> None:
        self.responses.append(trans)

    async def serve(self, cycles: int) -> None:
        """Serve the port for `cycles` clock cycles (run it with cocotb.start_soon)."""
        dut, system = self.dut, self.system
        dut.req_ready.value = 0
        dut.resp_valid.value = 0
        for _ in range(cycles):
            await FallingEdge(dut.clk)
            self.cycle += 1
            # request channel: ready is whether memsim would take this request now
            ready = 0
            if int(dut.req_valid.value):
                addr, write = int(dut.req_addr.value), bool(int(dut.req_write.value))
                if system.will_accept(addr, write):
                    ready = 1
                    data = int(dut.req_wdata.value).to_bytes(system.line_bytes, "little") if write else None
                    trans = system.add_transaction(addr, write, data, callback=self._done,
                                                   tag=int(dut.req_tag.value))  # fmt: skip
                    self.accepted.append(trans)
            dut.req_ready.value = ready
            # response channel: the oldest completed request, held until the DUT takes it
            if self.responses:
                head = self.responses[0]
                dut.resp_valid.value = 1
                dut.resp_write.value = int(head.is_write)
                dut.resp_tag.value = head.tag
                dut.resp_rdata.value = int.from_bytes(head.data or bytes(system.line_bytes), "little")
                if int(dut.resp_ready.value):
                    self.response_cycles[id(head)] = system.clk
                    self.responses.popleft()
            else:
                dut.resp_valid.value = 0
            system.tick()

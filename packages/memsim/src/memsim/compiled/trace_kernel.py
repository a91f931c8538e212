"""Compiled parser for plain DRAMSim3 traces (`0xADDR OP CYCLE` lines, nothing else).

It accepts a strict subset of what `memsim.trace` accepts (spaces or tabs between three fields, an
optional trailing carriage return, no blank or comment lines) and gives up on anything else, so the
Python parser, which names a bad line, decides every other case. Used by `parse_trace_text`.
"""

import numpy as np
from numba import njit

SPACE, TAB, LF, CR = 32, 9, 10, 13


def op_codes(names: list[str]) -> np.ndarray:
    """Each (upper-case, at most 8 letters) op name packed into one integer, as the parser packs tokens."""
    return np.array([int.from_bytes(n.encode(), "big") for n in names], dtype=np.int64)


@njit(cache=True)
def _skip_blanks(buf, i):
    while i < len(buf) and (buf[i] == SPACE or buf[i] == TAB):
        i += 1
    return i


@njit(cache=True)
def parse_plain(buf, codes, code_writes, addrs, writes, cycles):
    """Fill the arrays; return the number of lines, or -1 when the text is not plain."""
    n, i, k = len(buf), 0, 0
    while i < n:
        i = _skip_blanks(buf, i)
        if i + 1 < n and buf[i] == 48 and (buf[i + 1] == 120 or buf[i + 1] == 88):
            i += 2
        addr, digits = 0, 0
        while i < n:
            c = buf[i]
            if 48 <= c <= 57:
                v = c - 48
            elif 97 <= c <= 102:
                v = c - 87
            elif 65 <= c <= 70:
                v = c - 55
            else:
                break
            addr, digits, i = addr * 16 + v, digits + 1, i + 1
        start = i
        i = _skip_blanks(buf, i)
        if digits == 0 or digits > 15 or i == start:
            return -1
        code, letters = 0, 0
        while i < n and buf[i] != SPACE and buf[i] != TAB and buf[i] != LF and buf[i] != CR:
            c = buf[i]
            if 97 <= c <= 122:
                c -= 32
            code, letters, i = code * 256 + c, letters + 1, i + 1
            if letters > 8:
                return -1
        match = -1
        for j in range(len(codes)):
            if codes[j] == code:
                match = j
        start = i
        i = _skip_blanks(buf, i)
        if match < 0 or i == start:
            return -1
        cycle, digits = 0, 0
        while i < n and 48 <= buf[i] <= 57:
            cycle, digits, i = cycle * 10 + buf[i] - 48, digits + 1, i + 1
        if digits == 0 or digits > 18:
            return -1
        i = _skip_blanks(buf, i)
        if i < n and buf[i] == CR:
            i += 1
        if i < n:
            if buf[i] != LF:
                return -1
            i += 1
        addrs[k], writes[k], cycles[k] = addr, code_writes[match], cycle
        k += 1
    return k

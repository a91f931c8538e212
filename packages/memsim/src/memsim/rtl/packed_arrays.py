"""Rewrite the unpacked arrays of generated Verilog as packed vectors, indexed by part-selects.

The channel's Verilog is written with arrays (`reg [W-1:0] x [0:N-1]`), which read like the Python engine's
lists. yosys turns every array that a combinational block writes into registers and every read of it at a
variable index into a case statement in its frontend, which takes hours for a DDR4 channel; as one vector
`reg [N*W-1:0] x` read with `x[i*W +: W]` the same logic synthesizes in minutes and simulates as fast. Arrays
named in `keep` stay arrays (a RAM that should be inferred as memory).
"""

import re

DECL = re.compile(r"^(\s*)(reg|wire)\s+(?:\[([^\]]+):0\]\s+)?(\w+)\s*\[([^\]:]+):([^\]]+)\];", re.M)


def _bracket(text: str, start: int) -> int:
    """Index just past the `]` matching the `[` at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced brackets after {text[start : start + 40]!r}")


def pack_arrays(verilog: str, keep: frozenset[str] = frozenset()) -> str:
    """`verilog` with every array declared in it (except `keep`) as a packed vector."""
    arrays: dict[str, tuple[str | None, str]] = {}

    def declare(m: re.Match) -> str:
        indent, kind, msb, name, lo, hi = m.groups()
        if name in keep:
            return m.group(0)
        width = None if msb is None else f"({msb}+1)"
        arrays[name] = (width, lo)
        count = f"(({hi})-({lo})+1)"
        size = count if width is None else f"{count}*{width}"
        return f"{indent}{kind} [{size}-1:0] {name};"

    text = DECL.sub(declare, verilog)
    if not arrays:
        return text
    use = re.compile(r"\b(" + "|".join(sorted(arrays, key=len, reverse=True)) + r")\s*\[")
    out, pos = [], 0
    while True:
        m = use.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        name = m.group(1)
        width, lo = arrays[name]
        open1 = m.end() - 1
        end1 = _bracket(text, open1)
        index = _rewrite_nested(text[open1 + 1 : end1 - 1], use, arrays)
        element = f"(({index})-({lo}))"
        out.append(text[pos : m.start()])
        if width is None:
            out.append(f"{name}[{element}]")
            pos = end1
        elif end1 < len(text) and text[end1] == "[":
            end2 = _bracket(text, end1)
            bit = _rewrite_nested(text[end1 + 1 : end2 - 1], use, arrays)
            out.append(f"{name}[{element}*{width} + ({bit})]")
            pos = end2
        else:
            out.append(f"{name}[{element}*{width} +: {width}]")
            pos = end1
    return "".join(out)


def _rewrite_nested(index: str, use: re.Pattern, arrays: dict[str, tuple[str | None, str]]) -> str:
    """Array reads inside an index expression (e.g. `cq_len1[wb_addr[i] >> 30]`)."""
    if not use.search(index):
        return index
    out, pos = [], 0
    while True:
        m = use.search(index, pos)
        if m is None:
            out.append(index[pos:])
            return "".join(out)
        name = m.group(1)
        width, lo = arrays[name]
        end = _bracket(index, m.end() - 1)
        inner = _rewrite_nested(index[m.end() : end - 1], use, arrays)
        element = f"(({inner})-({lo}))"
        out.append(index[pos : m.start()])
        out.append(f"{name}[{element}]" if width is None else f"{name}[{element}*{width} +: {width}]")
        pos = end

"""The RTL's view of `memsim.channel_params.ChannelParams`: which parts it models, and the constants of one that
it does (derived, and checked, when the Verilog is generated)."""

from memsim.channel_params import ChannelParams
from memsim.errors import MemsimError
from memsim.spec import DramSpec

REFRESH_POLICIES = ("RANK_LEVEL_STAGGERED", "RANK_LEVEL_SIMULTANEOUS", "BANK_LEVEL_STAGGERED")


def unsupported_by_rtl(spec: DramSpec) -> str | None:
    """What of `spec` the RTL does not model (generation refuses it by name), or None."""
    from memsim.compiled.bridge import unsupported

    missing = unsupported(spec)  # the compiled engine's refusals, its scheduler and row policy among them
    if missing is not None:
        return missing
    if spec.queue_structure != "PER_BANK":
        return f"queue_structure = {spec.queue_structure} (the RTL has per-bank command queues only)"
    if spec.unified_queue:
        return "unified_queue (the RTL has a read queue and a write buffer)"
    if spec.refresh_policy not in REFRESH_POLICIES:
        return f"refresh_policy = {spec.refresh_policy}"
    return None


def channel_params(spec: DramSpec) -> ChannelParams:
    """The RTL's constants of `spec`; refuse what the RTL does not model, by name."""
    missing = unsupported_by_rtl(spec)
    if missing is not None:
        raise MemsimError(f"config {spec.name}: the RTL does not model {missing}; simulate it with memsim's Python "
                          "engine (zaya memsim run)")  # fmt: skip
    params = ChannelParams(spec)
    params.latency  # noqa: B018  (derived now: a part whose latencies the RTL cannot hold is refused here)
    return params


__all__ = ["ChannelParams", "channel_params", "unsupported_by_rtl"]

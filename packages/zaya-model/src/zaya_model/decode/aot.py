"""`compile_plan`: every distinct kernel of a `FusedDecodeLayers` plan built ahead of time for a GPU arch.

Triton carries its own ptxas, so a plan built on any device (`FusedDecodeLayers(..., check_device=False)`,
e.g. a model on the meta device) compiles to sm_90 cubins on a machine without a GPU: the tests check this way
that every kernel builds for Hopper and waits on the previous one through programmatic dependent launch.
"""

from __future__ import annotations

from typing import Any

import torch

from zaya_model.decode.fused import FusedDecodeLayers

_POINTER_TYPES = {
    torch.bfloat16: "*bf16", torch.float16: "*fp16", torch.float32: "*fp32", torch.int64: "*i64",
    torch.int32: "*i32", torch.uint8: "*u8",
}  # fmt: skip


def compile_plan(layers: FusedDecodeLayers, arch: int = 90) -> list[dict[str, Any]]:
    """Compile every distinct kernel of the plan ahead of time for CUDA compute capability `arch` (to a cubin,
    with the ptxas Triton carries: no GPU needed). Returns per kernel its name, constexprs, cubin size and
    whether it waits on the previous kernel (PDL's griddepcontrol.wait); raises what Triton raises if one does
    not build."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    built: dict[tuple[str, str], dict[str, Any]] = {}
    for launch in layers.plan:
        fn = launch.kernel
        values = dict(zip(fn.arg_names, launch.args, strict=False))
        constexprs = {name: value for name, value in launch.meta.items() if name in fn.arg_names}
        signature = {}
        for name in fn.arg_names:
            if name in constexprs:
                signature[name] = "constexpr"
            elif isinstance(values[name], torch.Tensor):
                signature[name] = _POINTER_TYPES[values[name].dtype]
            elif isinstance(values[name], bool):
                signature[name] = "i1"
            elif isinstance(values[name], int):
                signature[name] = "i32" if -(2**31) <= values[name] < 2**31 else "i64"
            else:
                signature[name] = "fp32"
        key = (fn.__name__, repr(sorted(constexprs.items())) + repr(sorted(signature.items())))
        if key in built:
            continue
        source = ASTSource(fn, signature, constexprs)
        compiled = triton.compile(
            source,
            target=GPUTarget("cuda", arch, 32),
            options={key: launch.meta[key] for key in ("num_warps", "launch_pdl") if key in launch.meta},
        )
        built[key] = {
            "kernel": fn.__name__,
            "constexprs": constexprs,
            "cubin_bytes": len(compiled.asm["cubin"]),
            "waits_on_previous": "griddepcontrol.wait" in compiled.asm["ptx"],
        }
    return list(built.values())

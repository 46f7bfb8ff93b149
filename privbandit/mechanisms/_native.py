"""The compiled side of :func:`privbandit.mechanisms._kernels.call_sampler`: one indirect call of a
numpy C sampler ``double f(bitgen_t *, double, double)`` at an address held as an integer.

Imported only when a kernel compiles (it imports numba). numba can call a ctypes function passed
as an argument, but types that argument anew on every call (~1 us a call, measured on
``beta_argmax``); an integer address and an ``inttoptr`` in the kernel cost the dispatch of an integer, and the compiled code
holds no process-specific address, so it caches on disk like every other kernel.
"""

from __future__ import annotations

import numba
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from privbandit.mechanisms._kernels import cached_njit


@intrinsic
def _indirect_call(typingctx, fn, state, a, b):
    """``((double (*)(void *, double, double)) fn)((void *) state, a, b)``."""
    if not (isinstance(fn, types.Integer) and isinstance(state, types.Integer)
            and isinstance(a, types.Float) and isinstance(b, types.Float)):
        return None
    sig = types.float64(fn, state, a, b)

    def codegen(context, builder, signature, args):
        dbl, ptr = ir.DoubleType(), ir.IntType(8).as_pointer()
        target = builder.inttoptr(args[0], ir.FunctionType(dbl, [ptr, dbl, dbl]).as_pointer())
        x = context.cast(builder, args[2], signature.args[2], types.float64)
        y = context.cast(builder, args[3], signature.args[3], types.float64)
        return builder.call(target, [builder.inttoptr(args[1], ptr), x, y])

    return sig, codegen


def call_sampler_compiled(fn, state, a, b):
    return _indirect_call(fn, state, a, b)


# disk-cached where numba has a writable place for it (else compiled in-process: cached_njit)
call_sampler_compiled = cached_njit(numba, call_sampler_compiled, nogil=True, inline="always")

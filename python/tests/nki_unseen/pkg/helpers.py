"""Allocation helpers of the package kernel (a bump allocator kept in an object)."""
import neuronxcc.nki.language as nl
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim


class Bump:
    def __init__(self, start=0):
        self.next = start

    def take(self, nbytes):
        a = self.next
        self.next += nbytes
        return a


def sbuf_tiles(shape, dtype, alloc, n=1):
    per = shape[-1] * (4 if dtype == nl.float32 else 2)
    base = alloc.take(per * n)
    return nl.ndarray((n, par_dim(shape[0]), shape[-1]), dtype=dtype,
                      buffer=ncc.sbuf.mod_alloc(base_addr=base, num_free_tiles=(n,)))

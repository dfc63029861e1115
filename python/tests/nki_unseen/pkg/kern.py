"""Row scaling with a nested tile function, mgrid masks on a ragged last tile, %-indexed double
buffers and tuple/float/dtype/bool parameters."""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
from .helpers import Bump, sbuf_tiles


@nki.jit
def scale_rows(x, tile=(128, 256), scale=0.5, acc_dtype=nl.float32, overlap=False):
    P, F = tile
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    alloc = Bump(0)
    inp = sbuf_tiles((P, F), x.dtype, alloc, n=2)
    if overlap:  # res over inp's bytes, which are read again after res is written
        alloc.next = 0
    res = sbuf_tiles((P, F), acc_dtype, alloc, n=2)

    def one_tile(i, j):
        ip, jf = nl.mgrid[0:P, 0:F]
        inp[i % 2, ip, jf] = nl.load(x[i * P + ip, j * F + jf], mask=(i * P + ip < rows))
        res[i % 2, ip, jf] = nisa.tensor_scalar(inp[i % 2, ip, jf], np.multiply, scale, dtype=acc_dtype,
                                                mask=(i * P + ip < rows))
        res[i % 2, ip, jf] = nl.multiply(res[i % 2, ip, jf], inp[i % 2, ip, jf], dtype=acc_dtype,
                                         mask=(i * P + ip < rows))
        nisa.dma_copy(dst=out[i * P + ip, j * F + jf], src=res[i % 2, ip, jf], mask=(i * P + ip < rows))

    for i in nl.affine_range((rows + P - 1) // P):
        for j in nl.affine_range(cols // F):
            one_tile(i, j)
    return out

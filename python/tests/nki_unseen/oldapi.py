"""Old-API 32x32 block transposes on the Vector engine: par_dim, nl.ds, an mgrid object's .p/.x with
masks, static_range inside affine_range, a dtype parameter sizing an allocation."""
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim


@nki.jit
def transpose_blocks(x, width=64, dtype=nl.bfloat16):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=dtype, buffer=nl.shared_hbm)
    nblk = rows // 32
    src = nl.ndarray((2, par_dim(32), width), dtype=dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    dst = nl.ndarray((2, par_dim(32), 32), dtype=dtype,
                     buffer=ncc.sbuf.mod_alloc(base_addr=2 * width * np.dtype(dtype).itemsize, num_free_tiles=(2,)))
    grid = nl.mgrid[0:32, 0:32]
    for b in nl.affine_range(nblk):
        src[b % 2] = nl.load(x[nl.ds(b * 32, 32), nl.ds(0, width)], dtype=dtype)
        for c in nl.static_range(width // 32):
            dst[b % 2, grid.p, grid.x] = nisa.nc_transpose(src[b % 2, grid.p, c * 32 + grid.x], engine=nisa.vector_engine,
                                                           mask=(c * 32 + grid.x < cols))
            nl.store(out[c * 32 + grid.p, b * 32 + grid.x], value=dst[b % 2, grid.p, grid.x],
                     mask=(c * 32 + grid.p < cols))
    return out

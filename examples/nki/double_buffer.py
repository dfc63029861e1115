# load -> square -> store over 16 tiles with the guide's double buffering (mod_alloc,
# num_free_tiles=(2,)). `scratchplan nki plan double_buffer.py --input x=2048x512:bf16 --rewrite
# planned.py` writes this file back with the planned buffer= of each declaration.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n = x.shape[0] // 128
    buf = nl.ndarray((n, par_dim(128), 512), dtype=x.dtype,
                     buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    res = nl.ndarray((n, par_dim(128), 512), dtype=x.dtype,
                     buffer=ncc.sbuf.mod_alloc(base_addr=2048, num_free_tiles=(2,)))
    for i in nl.affine_range(n):
        buf[i] = nl.load(x[i * 128:(i + 1) * 128, :])
        res[i] = nl.square(buf[i])
        nl.store(out[i * 128:(i + 1) * 128, :], value=res[i])
    return out

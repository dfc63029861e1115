# The direct-allocation guide's lifetime conflict as a kernel: eight logical tiles of t1 on two
# physical tiles, all loaded before any is read. `scratchplan nki check lifetime_conflict.py
# --input x=8x128x512:bf16` flags blocks 0..5, each with the lines of t1's declaration, the load
# that destroyed it and the exp still waiting for it.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim


@nki.jit
def kernel(x):
    result = nl.ndarray((8, 128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t1 = nl.ndarray((8, par_dim(128), 512), dtype=nl.bfloat16,
                    buffer=ncc.sbuf.mod_alloc(byte_addr=0, num_free_tiles=(2, )))
    r = nl.ndarray((8, par_dim(128), 512), dtype=nl.bfloat16,
                   buffer=ncc.sbuf.mod_alloc(base_addr=4096, num_free_tiles=(2, )))
    bias = nl.ndarray((128, 1), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=8192))
    bias[...] = 0.0
    for i in nl.affine_range(8):
        t1[i] = nl.load(x[i])

    for j in nl.affine_range(8):
        r[j] = nl.exp(t1[j], bias=bias)
        nl.store(result[j], value=r[j])
    return result

"""New-API matmul: lists of double buffers from a helper, Python ranges, dst-first nisa calls."""
import nki
import nki.language as nl
import nki.isa as nisa

KT = 128


def double_buffer(shape, dtype, base, nbytes):
    return [nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf, address=(0, base + k * nbytes)) for k in range(2)]


@nki.jit
def matmul_tiles(a_t, b, n_k=4):
    K, M = a_t.shape
    _, N = b.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    sa = double_buffer((KT, M), a_t.dtype, 0, M * 2)
    sb = double_buffer((KT, N), b.dtype, 4 * M, N * 2)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum, address=(0, 0))
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf, address=(0, 4 * M + 4 * N))
    for k in range(n_k):
        nisa.dma_copy(dst=sa[k % 2], src=a_t[k * KT:(k + 1) * KT, :])
        nisa.dma_copy(dst=sb[k % 2], src=b[k * KT:(k + 1) * KT, :])
        nisa.nc_matmul(acc, sa[k % 2], sb[k % 2])
    nisa.tensor_copy(dst=res, src=acc)
    for r in range(2):
        nisa.tensor_tensor(dst=res, data1=res, data2=res, op=nl.add)
    nisa.dma_copy(dst=out, src=res)
    return out

"""NKI kernels of the kinds the NKI tutorials and the direct-allocation guide teach, as source
text (the tests write each to a file and trace it). Every body is written once and used under
both import spellings of the old API: module aliases (``import neuronxcc.nki.language as nl``)
and attribute access through ``from neuronxcc import nki`` (``nki.language``, ``nki.compiler``).
Each entry: (body, inputs for --input, grid or None, uses direct allocation)."""

HEADERS = {
    "modules": (
        "import math\n"
        "import numpy as np\n"
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "import neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.compiler as ncc\n"
        "from neuronxcc.nki.language import par_dim\n"
    ),
    "attributes": (
        "import math\n"
        "import numpy as np\n"
        "from neuronxcc import nki\n"
        "nl = nki.language\n"
        "nisa = nki.isa\n"
        "ncc = nki.compiler\n"
        "par_dim = nl.par_dim\n"
    ),
}

TENSOR_ADD_SPMD = '''
@nki.jit
def kernel(a_input, b_input):
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    offset_i_x = nl.program_id(0) * 128
    offset_i_y = nl.program_id(1) * 512
    ix = offset_i_x + nl.arange(128)[:, None]
    iy = offset_i_y + nl.arange(512)[None, :]
    a_tile = nl.load(a_input[ix, iy])
    b_tile = nl.load(b_input[ix, iy])
    c_tile = a_tile + b_tile
    nl.store(c_output[ix, iy], value=c_tile)
    return c_output
'''

MATMUL_PSUM = '''
@nki.jit
def kernel(lhsT, rhs):
    K, M = lhsT.shape
    K_, N = rhs.shape
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                lhsT_tile = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                lhsT_tile[...] = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                rhs_tile[...] = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                res_psum += nisa.nc_matmul(lhsT_tile[...], rhs_tile[...])
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res_sb)
    return result
'''

TRANSPOSE_IDENTITY = '''
@nki.jit
def kernel(x):
    T = x.shape[1] // 128
    out = nl.ndarray((T * 128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    ident = nl.shared_constant(np.identity(128, dtype=np.float32))
    id_sb = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    id_sb[...] = nl.load(ident)
    for t in nl.affine_range(T):
        xt = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        xt[...] = nl.load(x[:, t * 128:(t + 1) * 128])
        ps = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        ps[...] = nisa.nc_matmul(xt, id_sb)
        o = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        o[...] = nisa.tensor_copy(ps)
        nl.store(out[t * 128:(t + 1) * 128, :], value=o)
    return out
'''

SOFTMAX = '''
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        m = nl.max(t, axis=1, keepdims=True)
        e = nl.exp(nl.subtract(t, m))
        s = nl.sum(e, axis=1, keepdims=True)
        r = nl.reciprocal(s)
        y = nl.multiply(e, r)
        nl.store(out[i * 128:(i + 1) * 128, :], value=y)
    return out
'''

LAYERNORM = '''
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        stats = nisa.bn_stats(t)
        mv = nisa.bn_aggr(stats)
        mean = mv[:, 0:1]
        var = mv[:, 1:2]
        rstd = nl.rsqrt(var + 1e-5)
        y = (t - mean) * rstd
        nl.store(out[i * 128:(i + 1) * 128, :], value=y)
    return out
'''

RMSNORM_MGRID_MASK = '''
@nki.jit
def kernel(a_tensor, g_tensor):
    out_tensor = nl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    D = a_tensor.shape[1]
    num_rows = a_tensor.shape[0]
    ix, iy = nl.mgrid[0:128, 0:D]
    iw = nl.arange(1)[:, None]
    g_tile = nl.load(g_tensor.reshape((1, D))[iw, iy])
    for i in nl.affine_range(math.ceil(num_rows / 128)):
        a_tile = nl.load(a_tensor[i * 128 + ix, iy], mask=(i * 128 + ix < num_rows))
        in_square = nl.square(a_tile)
        square_sum = nl.sum(in_square, axis=[1])
        mean = square_sum / D
        rms_reciprocal = nl.rsqrt(mean)
        out_tile = nl.multiply(a_tile, rms_reciprocal)
        g_bcast = nl.broadcast_to(g_tile, (128, D))
        out2 = nl.multiply(out_tile, g_bcast, mask=(i * 128 + ix < num_rows))
        nl.store(out_tensor[i * 128 + ix, iy], value=out2, mask=(i * 128 + ix < num_rows))
    return out_tensor
'''

FUSED_ATTENTION = '''
@nki.jit
def kernel(q, k, v):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    q_sb = nl.load(q)
    k_sb = nl.load(k)
    s = nl.copy(nisa.nc_matmul(q_sb, k_sb))
    m = nl.max(s, axis=1, keepdims=True)
    e = nl.exp(nl.subtract(s, m))
    ssum = nl.sum(e, axis=1, keepdims=True)
    o_acc = nl.zeros((128, 128), nl.float32, buffer=nl.psum)
    for j in nl.affine_range(k.shape[1] // 128):
        eT = nl.copy(nisa.nc_transpose(e[:, j * 128:(j + 1) * 128]))
        v_sb = nl.load(v[j * 128:(j + 1) * 128, :])
        o_acc += nisa.nc_matmul(eT, v_sb)
    o = nl.multiply(o_acc, nl.reciprocal(ssum))
    nl.store(out, value=o)
    return out
'''

PIPELINED_ATTENTION = '''
@nki.jit
def kernel(q, k):
    n = k.shape[1] // 512
    out = nl.ndarray((128, n * 512), dtype=nl.float32, buffer=nl.shared_hbm)
    q_sb = nl.ndarray((128, 128), dtype=q.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    k_sb = nl.ndarray((n, par_dim(128), 512), dtype=k.dtype,
                      buffer=ncc.sbuf.mod_alloc(base_addr=256, num_free_tiles=(2,)))
    s_ps = nl.ndarray((n, par_dim(128), 512), dtype=nl.float32,
                      buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,)))
    bias = nl.ndarray((128, 1), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=2304))
    p_sb = nl.ndarray((n, par_dim(128), 512), dtype=nl.float32,
                      buffer=ncc.sbuf.mod_alloc(base_addr=2308, num_free_tiles=(2,)))
    q_sb[...] = nl.load(q)
    bias[...] = 0.0
    k_sb[0] = nl.load(k[:, 0:512])                       # prologue
    for i in nl.sequential_range(1, n):
        k_sb[i] = nl.load(k[:, i * 512:(i + 1) * 512])   # prefetch the next tile
        s_ps[i - 1] = nisa.nc_matmul(q_sb, k_sb[i - 1])
        p_sb[i - 1] = nisa.activation(np.exp, s_ps[i - 1], bias=bias)
        nl.store(out[:, (i - 1) * 512:i * 512], value=p_sb[i - 1])
    s_ps[n - 1] = nisa.nc_matmul(q_sb, k_sb[n - 1])      # epilogue
    p_sb[n - 1] = nisa.activation(np.exp, s_ps[n - 1], bias=bias)
    nl.store(out[:, (n - 1) * 512:n * 512], value=p_sb[n - 1])
    return out
'''

BUMP_ALLOCATOR = '''
cur_addr = 0


def bump(nbytes):
    global cur_addr
    base = cur_addr
    cur_addr += nbytes

    def place(idx, pdim_size, fdim_size):
        return (0, base)
    return place


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.ndarray((128, 512), dtype=x.dtype, buffer=ncc.sbuf.alloc(bump(1024)))
        t[...] = nl.load(x[i * 128:(i + 1) * 128, :])
        e = nl.ndarray((128, 512), dtype=x.dtype, buffer=ncc.sbuf.alloc(bump(1024)))
        e[...] = nl.square(t)
        nl.store(out[i * 128:(i + 1) * 128, :], value=e)
    return out
'''

MOD_ALLOC_PIPELINE = '''
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n = x.shape[0] // 128
    buf = nl.ndarray((n, par_dim(128), 512), dtype=x.dtype,
                     buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(3,)))
    res = nl.ndarray((n, par_dim(128), 512), dtype=x.dtype,
                     buffer=ncc.sbuf.mod_alloc(base_addr=3072, num_free_tiles=(3,)))
    for i in nl.affine_range(n):
        buf[i] = nl.load(x[i * 128:(i + 1) * 128, :])
        res[i] = nl.square(buf[i])
        nl.store(out[i * 128:(i + 1) * 128, :], value=res[i])
    return out
'''

KERNELS = {
    "tensor_add_spmd": (TENSOR_ADD_SPMD, ["a_input=256x1024:fp32", "b_input=256x1024:fp32"], "2x2", False),
    "matmul_psum": (MATMUL_PSUM, ["lhsT=256x256:bf16", "rhs=256x1024:bf16"], None, False),
    "transpose_identity": (TRANSPOSE_IDENTITY, ["x=128x512:fp32"], None, False),
    "softmax": (SOFTMAX, ["x=512x512:fp32"], None, False),
    "layernorm": (LAYERNORM, ["x=512x512:fp32"], None, False),
    "rmsnorm_mgrid_mask": (RMSNORM_MGRID_MASK, ["a_tensor=300x512:fp32", "g_tensor=1x512:fp32"], None, False),
    "fused_attention": (FUSED_ATTENTION, ["q=128x128:bf16", "k=128x512:bf16", "v=512x128:bf16"], None, False),
    "pipelined_attention": (PIPELINED_ATTENTION, ["q=128x128:bf16", "k=128x4096:bf16"], None, True),
    "bump_allocator": (BUMP_ALLOCATOR, ["x=1024x512:bf16"], None, True),
    "mod_alloc_pipeline": (MOD_ALLOC_PIPELINE, ["x=2048x512:bf16"], None, True),
}

"""Kernels the planner once refused as not fitting though the compiler fits them (issue 41's
layernorm, unrolled matmul and pipelined attention), each cause in a small kernel of our own."""
from scratchplan import nki

HEAD = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
"""


def write(tmp_path, text):
    p = tmp_path / "k.py"
    p.write_text(HEAD + text)
    return str(p)


def test_loop_body_temporaries_share_bytes_between_iterations(tmp_path):
    # Seven 32 KB temporaries declared in the body (224 KB > 176 KB usable), at most three live
    # at once: each is dead between iterations, so their spans interleave but never meet.
    path = write(tmp_path, """
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        a = nl.multiply(t, t)
        b = nl.add(a, t)
        c = nl.multiply(b, t)
        d = nl.subtract(c, t)
        e = nl.add(d, t)
        f = nl.multiply(e, t)
        nl.store(out[i * 128:(i + 1) * 128, :], value=f)
    return out
""")
    k = nki.trace(path, x=((512, 8192), "fp32"))
    r = nki.plan(k, time_limit=5)
    assert r.to_dict()["sbuf_bytes_per_partition"] <= 176 * 1024
    assert nki.check(r.kernel()).clean


def test_minimum_tile_count_may_exceed_max_buffers(tmp_path):
    # 16 blocks of a row are live together: 16 tiles (32 KB) fit, a tile per block (256 KB) not.
    path = write(tmp_path, """
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((8, 16, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
    for g in nl.affine_range(8):
        for j in nl.affine_range(16):
            t[g, j] = nl.load(x[g * 128:(g + 1) * 128, j * 512:(j + 1) * 512])
        for j in nl.affine_range(16):
            nl.store(out[g * 128:(g + 1) * 128, j * 512:(j + 1) * 512], value=t[g, j])
    return out
""")
    k = nki.trace(path, x=((1024, 8192), "fp32"))
    r = nki.plan(k, time_limit=5)
    (p,) = [p for p in r.to_dict()["tensors"] if p["tensor"] == "t"]
    assert p["min_tiles"] == 16
    assert nki.check(r.kernel()).clean


def test_first_use_order_packs_what_largest_first_fragments(tmp_path):
    # x1 and x2 (80 KB each) never live together; z (60 KB) overlaps both. Largest first puts
    # x1 and x2 side by side and leaves z 16 KB; in order of first use x2 takes x1's bytes.
    path = write(tmp_path, """
@nki.jit
def kernel(a, b, c):
    out = nl.ndarray((128, 56320), dtype=nl.float32, buffer=nl.shared_hbm)
    x1 = nl.load(a)
    z = nl.load(c)
    nl.store(out[:, 0:20480], value=x1)
    x2 = nl.load(b)
    nl.store(out[:, 20480:40960], value=x2)
    nl.store(out[:, 40960:56320], value=z)
    return out
""")
    k = nki.trace(path, a=((128, 20480), "fp32"), b=((128, 20480), "fp32"), c=((128, 15360), "fp32"))
    r = nki.plan(k, time_limit=5)
    assert nki.check(r.kernel()).clean

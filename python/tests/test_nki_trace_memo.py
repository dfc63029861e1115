"""The tracer's per-site memo of instruction records (issue 55, tracing speed) changes nothing that
is traced: kernels of our own reach the same call sites with other shapes, addresses, dtypes, views,
engines, masks, aliased operands, block dims, pending results and symbolic loops from one
iteration to the next, and trace to the same JSON with the memo on and off."""
import json

from scratchplan import BadInput, nki
from scratchplan.nki.tracing import calls

NEW = '''import nki
import nki.language as nl
import nki.isa as nisa


def copy(dst, src, **kw):  # one call site for every copy below
    nisa.tensor_copy(dst=dst, src=src, **kw)


def add(dst, x, y, **kw):
    nisa.tensor_tensor(dst=dst, data1=x, data2=y, op=nl.add, **kw)


@nki.jit
def kernel(x, n=14, bad=99):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    h = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf, address=(0, 2048))
    blk = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf, address=(0, 3072))
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum, address=(0, 0))
    nisa.dma_copy(dst=a, src=x)
    for i in range(n):
        w = 8 * (1 + i % 3)
        dt = (nl.float32, nl.bfloat16, nl.int32)[i % 3]
        c = nl.ndarray((64 + 32 * (i % 3), w), dtype=dt, buffer=nl.sbuf, address=(0, 4096 + 64 * (i % 5)))
        src = (a, h, a[0:64, i:i + w], h[32:96, 0:w], blk[i % 2])[i % 5]
        copy(c, src)                                   # new tensor, other shapes and dtypes each time
        copy(c if i % 2 else h, c if i % 3 else a, engine=(nisa.vector_engine, nisa.scalar_engine)[i % 2])
        copy(a[0:64, 0:w], src, dtype=(None, nl.bfloat16)[i % 2], mask=(True, False)[i % 4 == 3])
        add(a if i % 2 else h, a, a if i % 3 else h)   # aliased operands: a with a, then a with h
        add(blk[i % 2], blk[(i + 1) % 2], blk[0])     # block dims
        nisa.dma_copy(dst=a[:, 0:w], src=x[i:i + 64, 0:w])
        nisa.nc_matmul(acc[:, 0:w], a[:, 0:128], (h, a)[i % 2][:, 0:w])  # first write, then accumulation
        copy(c, a[0:64, bad - i:bad - i + w] if i == n - 1 else a[0:64, 0:w])
    for j in nl.affine_range(4):                       # symbolic: the same sites with loop indices
        copy(a[:, j * 8:j * 8 + 8], h[:, j * 8:j * 8 + 8])
        add(a[:, j * 8:j * 8 + 8], a[:, j * 8:j * 8 + 8], h[:, 0:8], mask=(j < 3))
    nisa.dma_copy(dst=out, src=a)
    return out
'''

OLD = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def square(t):
    return nl.multiply(t, t)  # one call site, a pending result each time


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.static_range(6):
        w = 128 * (1 + i % 2)
        t = nl.load(x[0:16 + 16 * (i % 2), 0:w])  # two shapes: the site hits from the third iteration
        s = square(t)
        u = square(s) if i % 2 else nl.exp(s)
        nl.store(out[i * 16:i * 16 + 16 + 16 * (i % 3), 0:w], value=u)
    return out
'''


def traced(tmp_path, name, text, memo, *inputs, **kw):
    """(trace JSON or error line, instructions recorded afresh rather than from the memo)."""
    p = tmp_path / name
    p.write_text(text)
    calls.MEMO = memo
    built = [0]
    real = calls._new_instr

    def counting(*a):
        built[0] += 1
        return real(*a)
    calls._new_instr = counting
    try:
        return json.dumps(nki.trace(str(p), *inputs, **kw)), built[0]
    except BadInput as e:
        return "error: " + str(e), built[0]
    finally:
        calls.MEMO = True
        calls._new_instr = real


def test_memo_changes_no_record_of_a_new_api_kernel(tmp_path):
    (on, built), (off, every) = (traced(tmp_path, "new.py", NEW, memo, ((256, 512), "fp32"), bad=0) for memo in (True, False))
    assert on == off and not on.startswith("error")
    assert every - built > 30  # the sites repeat: records come from the memo
    assert '"accumulate": true' in on and '"block": [1]' in on and '"when": [-1]' in on


def test_memo_keeps_the_error_of_an_access_out_of_range_at_a_memoised_site(tmp_path):
    (on, built), (off, every) = (traced(tmp_path, "new.py", NEW, memo, ((256, 512), "fp32"), bad=520) for memo in (True, False))
    assert on == off and on.startswith("error: new.py:") and "out of range" in on
    assert every - built > 30


def test_memo_changes_no_record_of_an_old_api_kernel(tmp_path):
    (on, built), (off, every) = (traced(tmp_path, "old.py", OLD, memo, ((128, 256), "bf16")) for memo in (True, False))
    assert on == off and not on.startswith("error")
    assert built < every  # the loads of a shape seen before


def test_memo_full_at_a_site_changes_no_record(tmp_path, monkeypatch):
    monkeypatch.setattr(calls, "MEMO_PER_SITE", 2)  # the sites stop keeping templates early
    (on, built), (off, every) = (traced(tmp_path, "new.py", NEW, memo, ((256, 512), "fp32"), bad=0) for memo in (True, False))
    assert on == off and 0 < every - built


DECL = '''import numpy as np
import nki
import nki.language as nl
import nki.isa as nisa


def decl(shape, dt, buf, name="", addr=None):  # one declaration site for every tensor below
    if addr is None:
        return nl.ndarray(shape, dtype=dt, buffer=buf, name=name)
    return nl.ndarray(shape, dtype=dt, buffer=buf, name=name, address=addr)


@nki.jit
def kernel(x, n=12, big=64):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    nisa.dma_copy(dst=a, src=x)
    for i in range(n):
        k = i % 6
        shape = ((128, 8), (64, 8), (2, nl.par_dim(64), 8), (128, 8, 2), (128, 8), (np.int64(64), 8))[k]
        dt = (nl.float32, "bfloat16", nl.float32, np.float32, nl.bfloat16, nl.int32)[(i // 2) % 6]
        buf = (nl.sbuf, nl.psum, nl.sbuf, "sbuf", nl.sbuf, nl.sbuf)[k]
        name = ("", "t", "t-x", "", "t", "w")[(i + 1) % 6]
        addr = (None, (0, 64 * k), (0, 64), (np.int64(0), 64), (0, 64), None)[(i // 3) % 6]
        if i == n - 1:
            shape = (big, 8)
        t = decl(shape, dt, nl.psum if addr is None and k == 1 else buf, name, addr)
        h = decl((128, 8), dt, nl.hbm if i % 2 else nl.shared_hbm, name)
        v = t[1] if len(t.shape) == 3 and t.shape[1] == 64 else t
        nisa.tensor_copy(dst=v, src=a[0:v.shape[0], 0:8])
        nisa.dma_copy(dst=h, src=a[:, 0:8])
        z = nl.zeros((128, 8), dtype=nl.float32, buffer=nl.sbuf)  # filled: never memoised
        nisa.tensor_copy(dst=z, src=a[:, 0:8])
        decl((2, nl.par_dim(64), 8), nl.float32, nl.sbuf)  # hashes as the next shape, declares otherwise
        decl((2, 64, 8), nl.float32, nl.sbuf)
    p = decl((128, 8), nl.float32, nl.psum, "", (0, 0))
    nisa.nc_matmul(p, a[:, 0:128], a[:, 0:8])
    for j in nl.affine_range(3):  # the same sites inside a loop: the tensor's scope is the loop
        t = decl((128, 8), nl.float32, nl.sbuf, "", (0, 4096))
        nisa.tensor_copy(dst=t, src=a[:, j * 8:j * 8 + 8])
        p = decl((128, 8), nl.float32, nl.psum, "", (0, 0))
        nisa.nc_matmul(p, a[:, 0:128], a[:, j * 8:j * 8 + 8])  # first write in the loop, then accumulation
        nisa.nc_matmul(p, a[:, 0:128], a[:, 0:8])
    nisa.dma_copy(dst=out, src=a)
    return out
'''


def traced_decl(tmp_path, memo, **kw):
    """(trace JSON or error line, declarations made afresh rather than from the memo)."""
    from scratchplan.nki.tracing import declarations
    made = [0]
    real = declarations._ndarray_new

    def counting(*a):
        made[0] += 1
        return real(*a)
    declarations._ndarray_new = counting
    try:
        return traced(tmp_path, "decl.py", DECL, memo, ((256, 512), "fp32"), **kw)[0], made[0]
    finally:
        declarations._ndarray_new = real


def test_declaration_memo_changes_no_tensor(tmp_path):
    # One site declares tensors of other shapes (par_dim, numpy ints), dtypes (objects, strings,
    # numpy), buffers, names (repeated, to clean) and addresses (numpy ints) from one iteration to
    # the next, in and outside a loop: the same JSON with the memo on and off.
    (on, made), (off, every) = (traced_decl(tmp_path, memo, n=40) for memo in (True, False))
    assert on == off and not on.startswith("error")
    assert every - made > 30  # declarations come from the memo
    names = [t["name"] for t in json.loads(on)["tensors"]]
    assert len(names) == len(set(names)) and "t_x" in names and "t_2" in names


def test_declaration_memo_keeps_the_error_of_a_bad_shape_at_a_memoised_site(tmp_path):
    (on, _), (off, _) = (traced_decl(tmp_path, memo, n=13, big=129) for memo in (True, False))
    assert on == off and on.startswith("error: decl.py:") and "partitions" in on


OLD_DECL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def psum():  # one declaration site, outside and inside the loops
    return nl.zeros((128, 64), dtype=nl.float32, buffer=nl.psum, lazy_initialization=True)


@nki.jit
def kernel(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(x[0:128, 0:128])
    acc = psum()
    for k in nl.affine_range(2):
        acc += nl.matmul(a, a[:, 0:64], transpose_x=True)  # sums over k
    for i in nl.affine_range(2):
        t = psum()  # declared in loop i: the sum over k below starts anew each i
        for k in nl.affine_range(2):
            t += nl.matmul(a, a[:, 0:64], transpose_x=True)
        nl.store(out[0:128, 0:64], value=nl.copy(t))
    nl.store(out[0:128, 0:64], value=nl.copy(acc))
    return out
'''


def test_declaration_memo_keeps_each_tensor_its_loop_scope(tmp_path):
    (on, _), (off, _) = (traced(tmp_path, "old_decl.py", OLD_DECL, memo, ((128, 128), "fp32")) for memo in (True, False))
    assert on == off and not on.startswith("error") and '"when"' in on


def test_declaration_memo_full_at_a_site_changes_no_tensor(tmp_path, monkeypatch):
    monkeypatch.setattr(calls, "MEMO_PER_SITE", 2)  # the declaration sites stop keeping templates early
    (on, made), (off, every) = (traced_decl(tmp_path, memo, n=40) for memo in (True, False))
    assert on == off and not on.startswith("error") and 0 < every - made

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

"""Sizes, times and addresses are integers at every entry point of the package: a float (even
100.0), a numeric string, a bool or a numpy float in their place is refused with BadInput naming
the field, never rounded into a plan (issue: a size of 100.7 came back placed as 100 bytes,
overlapping its neighbour). Python ints, numpy integers and other integral types (``__index__``,
as sympy's Integer, which torch-spyre passes) are accepted."""
import copy
import random
import time

import numpy as np
import pytest

import scratchplan as sp
from conftest import example, load

# Never an integer anywhere: a fraction, a numeric string, a bool, a numpy float with a fraction.
NON_INTEGRAL = [lambda v: v + 0.7, lambda v: str(v), lambda v: True, lambda v: False,
                lambda v: np.float32(v) + np.float32(0.5), lambda v: np.float64(v) + 0.25, lambda v: None]
# Whole-number floats: refused by the array and object entry points (a float is not an integer
# type); documents (dicts) follow the JSON readers, where 128.0 reads as 128 as in a file.
NOT_INTEGERS = NON_INTEGRAL + [lambda v: float(v), lambda v: np.float64(v)]


class Integral:
    """An integer type of someone else's (sympy.Integer behaves so): integral through __index__."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


def random_buffers(rng, n):
    sizes, starts, ends = [], [], []
    for _ in range(n):
        s = rng.randrange(0, 20)
        sizes.append(rng.randrange(1, 9) * 16)
        starts.append(s)
        ends.append(s + rng.randrange(1, 6))
    return sizes, starts, ends


def with_one_replaced(rng, arrays, kinds=NOT_INTEGERS):
    """A copy of the three lists with one value of one list replaced by a non-integer."""
    k = rng.randrange(len(arrays))
    i = rng.randrange(len(arrays[k]))
    out = [list(a) for a in arrays]
    out[k][i] = rng.choice(kinds)(out[k][i])
    return out, ("sizes", "starts", "ends")[k], i


def test_the_reported_case_is_refused_not_overlapped():
    with pytest.raises(sp.BadInput, match=r"sizes\[0\]: expected an integer, got a float 100.7"):
        sp.alloc.pack([100.7, 100], [0, 0], [5, 5], capacity=1000, alignment=1)
    with pytest.raises(sp.BadInput, match=r"starts\[1\]: expected an integer, got a float 0.5"):
        sp.alloc.select([100, 100], [0, 0.5], [5, 6], capacity=1000)
    with pytest.raises(sp.BadInput, match=r"sizes\[1\]: expected an integer, got the bool True"):
        sp.alloc.pack([100, True], [0, 0], [5, 5])
    with pytest.raises(sp.BadInput, match=r"sizes\[1\]: expected an integer, got the string '100'"):
        sp.alloc.pack([100, "100"], [0, 0], [5, 5])
    with pytest.raises(sp.BadInput, match=r"fixed_offsets: expected an integer"):
        sp.alloc.pack([100, 100], [0, 0], [5, 5], fixed_offsets=80.0)


def test_integral_types_of_other_libraries_are_accepted():
    r = sp.alloc.pack([Integral(100), np.int16(100)], [np.int64(0), 0], [5, Integral(5)], capacity=1000)
    assert list(r.offsets) in ([0, 100], [100, 0])
    r = sp.alloc.pack(np.array([100, 100], dtype=np.uint8), [0, 0], [5, 5], fixed_offsets=[Integral(0), -1])
    assert list(r.offsets) == [0, 100]
    with pytest.raises(sp.BadInput):
        sp.alloc.pack(np.array([100.0, 100.0]), [0, 0], [5, 5])  # a float array, even of whole numbers
    with pytest.raises(sp.BadInput):
        sp.alloc.pack(np.array([True, False]), [0, 0], [5, 5])


def alloc_doc(sizes, starts, ends):
    return {"capacity": 4096, "buffers": [{"id": f"b{i}", "size": s, "start": a, "end": e}
                                         for i, (s, a, e) in enumerate(zip(sizes, starts, ends))]}


def entry_points():
    """(name, call(arrays)) for every public entry point that takes sizes, times or addresses."""
    program = load(example("programs", "softmax_lastdim.json"))
    kernel = load(example("nki", "load_exp.json"))

    def program_with(rng, bad):
        doc = copy.deepcopy(program)
        t = rng.choice(doc["tensors"])
        t["shape"][rng.randrange(len(t["shape"]))] = bad(t["shape"][0])
        return doc

    def kernel_with(rng, bad):
        doc = copy.deepcopy(kernel)
        t = rng.choice(doc["tensors"])
        key = rng.choice(["partitions", "blocks", "free"])
        if isinstance(t[key], list):
            t[key][0] = bad(t[key][0])
        else:
            t[key] = bad(t[key])
        return doc

    return [
        ("alloc.pack", lambda rng, a: sp.alloc.pack(*a, time_limit=1)),
        ("alloc.pack capacity", lambda rng, a: sp.alloc.pack(*a, capacity=4096, time_limit=1)),
        ("alloc.select", lambda rng, a: sp.alloc.select(*a, capacity=64, time_limit=1)),
        ("alloc.alloc document", lambda rng, a: sp.alloc.alloc(alloc_doc(*a), time_limit=1)),
        ("alloc.pack alignment", lambda rng, a: sp.alloc.pack(*random_buffers(rng, len(a[0])),
                                                               alignment=[rng.choice(NOT_INTEGERS)(16)] * len(a[0]))),
        ("layout.layout", lambda rng, a: sp.layout.layout([64, rng.choice(NOT_INTEGERS)(128)])),
        ("lx.plan document", lambda rng, a: sp.lx.plan(program_with(rng, rng.choice(NON_INTEGRAL)), cores=4, time_limit=0.5)),
        ("workdiv.divide document", lambda rng, a: sp.workdiv.divide(program_with(rng, rng.choice(NON_INTEGRAL)), cores=4)),
        ("nki.check document", lambda rng, a: sp.nki.check(kernel_with(rng, rng.choice(NON_INTEGRAL)))),
    ]


def test_random_non_integers_are_always_refused():
    """A property over random buffer lists: one field replaced by a float, a string, a bool or a
    numpy float, through every entry point, is refused and never a plan (budget: 4 s)."""
    rng = random.Random(53)
    calls = entry_points()
    tried = {name: 0 for name, _ in calls}
    deadline = time.monotonic() + 4.0
    while time.monotonic() < deadline or min(tried.values()) < 3:
        name, call = calls[sum(tried.values()) % len(calls)]
        kinds = NON_INTEGRAL if name.endswith("document") else NOT_INTEGERS
        arrays, _, _ = with_one_replaced(rng, random_buffers(rng, rng.randrange(1, 12)), kinds)
        with pytest.raises(sp.BadInput) as e:
            call(rng, arrays)
        assert "\n" not in str(e.value), name
        tried[name] += 1
    assert all(n >= 3 for n in tried.values()), tried

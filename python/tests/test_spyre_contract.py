"""Conformance of scratchplan.spyre (and of the alloc engine and LX planner beneath it) to
torch-spyre's LX scratchpad planner contract.

What is checked, and why: torch-spyre hands our solvers its LifetimeBoundBuffers /
CoreDivisionBuffers and trusts the addresses that come back. Its rules are written out here
from the contract, not from our implementation:

- half-open lifetimes ``[min(uses[0], lifetime_start_override), max(uses[-1]+1, lifetime_end_override))``;
- addresses aligned, ``address + footprint <= capacity`` (footprint: the size, or for a core
  division ``ceil(size / output_partition)``);
- co-live placed buffers are address-disjoint, except a declared in-place child at its parent's
  exact base on the one hand-off tick (``parent.end == child.start + 1``, child no larger). On
  that tick the parent's WHOLE footprint is live: a third buffer in the bytes above the child,
  a sibling child in the parent's remainder, or two children at the base are all illegal;
- contract violations raise ``sp.spyre.ContractError`` (a BadInput and an AssertionError) from
  both entry points alike; spilled buffers carry a reason; newer fields (``paired_with``,
  ``lifetime_start_override``) are honoured; ``lx_relayout_plans`` and ``lx_view`` pass through untouched.

Every plan is judged by the independent pairwise checker below (``violations``), which shares
no code with the package. Random in-place chains with third buffers on the hand-off ticks and
sibling children, at tight capacities, drive ``spyre.solve`` (every solver),
``spyre.solve_core_divisions``, ``alloc.alloc``, the ``alloc`` CLI verb and ``lx.plan``.
"""
import collections
import copy
import json
import math
import os
import random
import subprocess

import pytest

import scratchplan as sp
import conftest

ContractError = getattr(sp.spyre, "ContractError", None)
WHOLE = {"splits": {}, "reduction_syms": []}  # one core division: the whole tensor on every core
UNSET = "unset"
SEEDS = range(60)
SOLVERS = ("auto", "greedy", "firstfit", "bestfit")
TIME_LIMIT = 0.3


# --------------------------------------------------------------------------------------------
# torch-spyre's buffer classes (duck-typed: the fields torch-spyre has, nothing of ours)

class LifetimeBoundBuffer:
    def __init__(self, name, size, uses, first_use_is_read=False, in_place_parents=(), residency_reason=None,
                 lifetime_end_override=None, lifetime_start_override=None, paired_with=(),
                 lx_relayout_plans=(), lx_view=None):
        self.name, self.size, self.uses = name, size, list(uses)
        self.first_use_is_read = first_use_is_read
        self.in_place_parents = list(in_place_parents)
        self.residency_reason = residency_reason
        self.lifetime_end_override = lifetime_end_override
        self.lifetime_start_override = lifetime_start_override
        self.paired_with = list(paired_with)
        self.lx_relayout_plans = list(lx_relayout_plans)
        self.lx_view = lx_view
        self.address = UNSET

    def __repr__(self):
        return f"<{self.name} {self.size} B uses {self.uses} @ {self.address}>"


class CoreDivisionBuffer(LifetimeBoundBuffer):
    def __init__(self, name, size, uses, parents=(), core_divisions=(WHOLE,), cd_parent_matches=None, **kw):
        super().__init__(name, size, uses, **kw)
        self.parents = list(parents)
        self.core_divisions = list(core_divisions)
        self.cd_parent_matches = dict(cd_parent_matches or {})
        self.chosen_division = UNSET


def get(b, field, default=None):
    return b.get(field, default) if isinstance(b, dict) else getattr(b, field, default)


def name_of(x):
    return x if isinstance(x, str) else get(x, "name")


def lifetime(b):
    """torch-spyre's half-open lifetime with both overrides."""
    uses = get(b, "uses")
    start, end = uses[0], uses[-1] + 1
    if get(b, "lifetime_start_override") is not None:
        start = min(start, get(b, "lifetime_start_override"))
    if get(b, "lifetime_end_override") is not None:
        end = max(end, get(b, "lifetime_end_override"))
    return start, end


def output_partition(division):
    """Product of the output split factors, strides also split as reductions excluded."""
    if "output_splits" in division or "reduction_splits" in division:
        out, red = division.get("output_splits") or {}, division.get("reduction_splits") or {}
    else:
        out = division.get("splits") or {}
        red = {k: v for k, v in out.items() if k in set(division.get("reduction_syms") or ())}
    return math.prod(int(v) for k, v in out.items() if k not in red)


def footprint(b):
    """Per-core bytes: the size, or ceil(size / output_partition) of the chosen core division."""
    size = max(int(get(b, "size")), 0)
    menu = get(b, "core_divisions")
    if menu is None:
        return size
    k = get(b, "chosen_division")
    division = menu[k] if isinstance(k, int) and not isinstance(k, bool) else k  # an index (the contract) or the entry
    return -(-size // output_partition(division))


def spill_cost(b):
    """torch-spyre's spill cost (reads served + [produced on chip]) x size."""
    uses = get(b, "uses") or []
    return max(int(get(b, "size")), 0) * (len(uses) - (1 if get(b, "first_use_is_read") else 0)) if uses else 0


def hbm_bytes(b):
    """The co-optimizer's objective: each use of a non-resident sized buffer crosses HBM once."""
    return max(int(get(b, "size")), 0) * len(get(b, "uses") or [])


# --------------------------------------------------------------------------------------------
# The independent checker

Rec = collections.namedtuple("Rec", "name start end addr size parents")


def violations(recs, capacity, alignment):
    """torch-spyre's legality of placed records (addr None = spilled): aligned, within the
    capacity, co-live records address-disjoint except a declared in-place child at its parent's
    exact base with parent.end == child.start + 1 and child.size <= parent.size."""
    out = []
    for r in recs:
        if r.addr is None:
            continue
        if not isinstance(r.addr, int) or isinstance(r.addr, bool):
            out.append(f"{r.name}: address {r.addr!r} is not an int")
        elif r.addr < 0 or r.addr % alignment or r.addr + r.size > capacity:
            out.append(f"{r.name}: [{r.addr}, {r.addr + r.size}) not aligned to {alignment} within {capacity}")
    placed = [r for r in recs if isinstance(r.addr, int) and r.size > 0]

    def hand_off(parent, child):
        return (parent.name in child.parents and parent.addr == child.addr and parent.end == child.start + 1
                and child.size <= parent.size)

    for i, a in enumerate(placed):
        for b in placed[i + 1:]:
            if a.name == b.name or not (a.start < b.end and b.start < a.end):
                continue
            if a.addr + a.size <= b.addr or b.addr + b.size <= a.addr:
                continue
            if hand_off(a, b) or hand_off(b, a):
                continue
            out.append(f"{a.name} [{a.addr}, {a.addr + a.size}) live [{a.start}, {a.end}) and "
                       f"{b.name} [{b.addr}, {b.addr + b.size}) live [{b.start}, {b.end}) overlap")
    return out


def plain_size(b):
    return max(int(get(b, "size")), 0)


def records(bufs, size_of=plain_size):
    """Records of torch-spyre buffers (graph inputs without uses are never live)."""
    out = []
    for b in bufs:
        if not get(b, "uses"):
            continue
        start, end = lifetime(b)
        addr = get(b, "address")
        out.append(Rec(get(b, "name"), start, end, addr, size_of(b),
                       {name_of(p) for p in get(b, "in_place_parents") or ()}))
    return out


def check_buffers(bufs, capacity, alignment, barred=(), cd=False):
    """Every buffer answered, barred buffers spilled, and the layout legal."""
    problems = [f"{get(b, 'name')}: address not set" for b in bufs if get(b, "address") == UNSET]
    problems += [f"{n}: has a residency reason but is placed" for b in bufs
                 if (n := get(b, "name")) in barred and get(b, "address") is not None]
    if not problems:
        problems = violations(records(bufs, footprint if cd else plain_size), capacity, alignment)
    assert not problems, "\n".join(problems + [repr(b) for b in bufs])


def total_spill(bufs):
    return sum(spill_cost(b) for b in bufs if get(b, "address") is None)


def total_hbm(bufs):
    return sum(hbm_bytes(b) for b in bufs if get(b, "address") is None and get(b, "size") > 0)


def spec(name, size, uses, **kw):
    return dict(name=name, size=size, uses=list(uses), **kw)


# The smallest failing case: P 130 B live [0, 2); its child C (10 B) takes P's base at tick 1,
# where S is also live. And two children of P on the same hand-off tick.
def third_buffer_case():
    return [spec("P", 130, [0, 1]), spec("C", 10, [1, 2], in_place_parents=["P"]), spec("S", 10, [1])]


def siblings_case():
    return [spec("P", 130, [0, 1]), spec("C1", 10, [1, 2], in_place_parents=["P"]),
            spec("C2", 10, [1, 2], in_place_parents=["P"])]


def placed(specs, addresses):
    bufs = lbb(specs)
    for b, a in zip(bufs, addresses):
        b.address = a
    return records(bufs)


# (buffers, addresses, capacity, alignment, legal?) -- the first three are what the solvers
# returned before the hand-off fix.
CHECKER_CASES = {
    "third_in_remainder": ("third", [0, 0, 128], 144, 128, False),
    "sibling_in_remainder": ("siblings", [0, 0, 128], 144, 128, False),
    "siblings_both_at_base": ("siblings", [0, 0, 0], 144, 128, False),
    "third_spilled": ("third", [0, 0, None], 144, 128, True),
    "third_beside_parent": ("third", [0, 0, 130], 140, 1, True),
    "child_off_base_inside_parent": ("third", [0, 64, None], 144, 1, False),
    "misaligned": ("third", [0, 0, 136], 200, 128, False),
    "over_capacity": ("third", [0, 0, 130], 139, 1, False),
}


@pytest.mark.parametrize("case", sorted(CHECKER_CASES))
def test_checker_itself(case):
    """The checker rejects the plans the bug produced and accepts legal ones."""
    which, addresses, capacity, alignment, legal = CHECKER_CASES[case]
    specs = third_buffer_case() if which == "third" else siblings_case()
    assert (not violations(placed(specs, addresses), capacity, alignment)) == legal


def test_checker_hand_off_rules():
    """Same base is not enough: the tick (parent.end == child.start + 1) and the size must hold,
    and the child must declare the parent."""
    ok = [spec("P", 100, [0, 1]), spec("C", 100, [1, 2], in_place_parents=["P"])]
    assert not violations(placed(ok, [0, 0]), 1000, 1)
    late = [spec("P", 100, [0, 2]), spec("C", 100, [1, 3], in_place_parents=["P"])]
    big = [spec("P", 100, [0, 1]), spec("C", 101, [1, 2], in_place_parents=["P"])]
    undeclared = [spec("P", 100, [0, 1]), spec("C", 100, [1, 2])]
    for bad in (late, big, undeclared):
        assert violations(placed(bad, [0, 0]), 1000, 1), bad
    lx = {"buffers": [{"name": "p", "per_core_bytes": 256, "lx_segments": [{"first_op": 0, "last_op": 2, "address": 0}]},
                      {"name": "c", "per_core_bytes": 256, "in_place_of": "p",
                       "lx_segments": [{"first_op": 2, "last_op": 4, "address": 0}]}]}
    assert not violations(lx_records(lx), 256, 128)
    lx["buffers"][1]["lx_segments"][0]["first_op"] = 1
    assert violations(lx_records(lx), 256, 128)


# --------------------------------------------------------------------------------------------
# Building the same buffers for every entry point

def lbb(specs, parents_as_objects=False):
    """LifetimeBoundBuffers from spec dicts; in-place parents (and pairs) as objects when asked,
    as torch-spyre passes them."""
    objs = [LifetimeBoundBuffer(**s) for s in specs]
    if parents_as_objects:
        by = {o.name: o for o in objs}
        for o in objs:
            o.in_place_parents = [by[n] for n in o.in_place_parents]
            o.paired_with = [by[n] for n in o.paired_with]
    return objs


def cdb(specs, menus=None):
    """CoreDivisionBuffers: one whole division each (or the given menus), the in-place parents as
    data-flow parents, every parent edge matched at divisions (0, 0)."""
    out = []
    for i, s in enumerate(specs):
        parents = list(s.get("in_place_parents", ()))
        menu = menus[i] if menus else [WHOLE]
        out.append(CoreDivisionBuffer(parents=parents, core_divisions=menu,
                                      cd_parent_matches={p: [[0, 0]] for p in parents}, **s))
    return out


def alloc_doc(specs, capacity, alignment):
    """The alloc JSON problem (docs/alloc.md) of the same buffers."""
    bufs = []
    for s in specs:
        d = {"id": s["name"], "size": s["size"], "uses": list(s["uses"]),
             "first_use_is_read": bool(s.get("first_use_is_read", False))}
        if s.get("in_place_parents"):
            d["in_place_parents"] = list(s["in_place_parents"])
        if s.get("residency_reason"):
            d["residency_reason"] = s["residency_reason"]
        bufs.append(d)
    return {"format": "scratchplan-alloc-problem", "version": 1, "capacity": capacity, "alignment": alignment,
            "buffers": bufs}


def solve_entry(entry, specs, capacity, alignment, **kw):
    """Runs one entry point ("solve" or "cd") on fresh buffers; returns (buffers, result)."""
    if entry == "solve":
        bufs = lbb(specs)
        return bufs, sp.spyre.solve(bufs, capacity, alignment=alignment, time_limit=TIME_LIMIT, **kw)
    bufs = cdb(specs)
    return bufs, sp.spyre.solve_core_divisions(bufs, capacity, alignment=alignment, time_limit=TIME_LIMIT, **kw)


def by_name(bufs):
    return {get(b, "name"): b for b in bufs}


def contract_error():
    assert ContractError is not None, "scratchplan.spyre.ContractError does not exist"
    return ContractError


# --------------------------------------------------------------------------------------------
# Hand-off footprint cases

# (alignment, capacity): the capacity admits S inside P's remainder but not beside P.
THIRD_CASES = [(128, 144), (128, 200), (1, 139), (1, 130)]


@pytest.mark.parametrize("entry", ["solve", "cd"])
@pytest.mark.parametrize("alignment,capacity", THIRD_CASES)
def test_third_buffer_stays_off_the_parents_footprint_on_the_hand_off_tick(entry, alignment, capacity):
    """The smallest failing case of the bug: P@0, C@0, S inside P's bytes above C is illegal.
    The optimum keeps P and C (in place) and spills S (10 B)."""
    bufs, r = solve_entry(entry, third_buffer_case(), capacity, alignment)
    check_buffers(bufs, capacity, alignment, cd=entry == "cd")
    if entry == "solve":
        assert r.spill_cost == total_spill(bufs) == 10 and r.lower_bound <= 10
    else:
        assert r.hbm_bytes == total_hbm(bufs) == 10 and r.lower_bound <= 10
    names = by_name(bufs)
    assert names["P"].address == names["C"].address == 0 and names["S"].address is None


@pytest.mark.parametrize("entry", ["solve", "cd"])
@pytest.mark.parametrize("alignment,capacity", THIRD_CASES)
def test_sibling_children_neither_in_the_remainder_nor_both_at_the_base(entry, alignment, capacity):
    """Two in-place children of P on the same hand-off tick: one may take P's base, the other
    must not sit in P's remainder nor at the base too. Optimum: P and one child (20 B spilled)."""
    bufs, r = solve_entry(entry, siblings_case(), capacity, alignment)
    check_buffers(bufs, capacity, alignment, cd=entry == "cd")
    assert (r.spill_cost if entry == "solve" else r.hbm_bytes) == 20
    names = by_name(bufs)
    assert names["P"].address == 0 and sorted([names["C1"].address is None, names["C2"].address is None]) == [False, True]


@pytest.mark.parametrize("entry", ["solve", "cd"])
@pytest.mark.parametrize("alignment", [1, 128])
def test_siblings_both_at_the_base_rejected_when_only_the_base_fits(entry, alignment):
    """Capacity 130: only address 0 holds P. Three buffers at 0 on the hand-off tick is illegal;
    the optimum keeps P and one child there (20 B spilled)."""
    bufs, r = solve_entry(entry, siblings_case(), 130, alignment)
    check_buffers(bufs, 130, alignment, cd=entry == "cd")
    assert sorted(b.address for b in bufs if b.address is not None) == [0, 0]
    assert bufs[0].address == 0 and (r.spill_cost if entry == "solve" else r.hbm_bytes) == 20


@pytest.mark.parametrize("entry", ["solve", "cd"])
@pytest.mark.parametrize("alignment", [1, 128])
def test_legal_hand_off_is_still_used(entry, alignment):
    """The fix must not forbid the hand-off itself: P and C of 128 B in 128 B of LX, and a
    third buffer after the hand-off tick at the same address."""
    specs = [spec("P", 128, [0, 1]), spec("C", 100, [1, 2], in_place_parents=["P"]), spec("T", 128, [3, 4])]
    bufs, r = solve_entry(entry, specs, 128, alignment)
    check_buffers(bufs, 128, alignment, cd=entry == "cd")
    assert [b.address for b in bufs] == [0, 0, 0]
    assert (r.spill_cost if entry == "solve" else r.hbm_bytes) == 0 and r.proven


@pytest.mark.parametrize("entry", ["solve", "cd"])
@pytest.mark.parametrize("alignment,capacity", [(128, 300), (1, 150)])
def test_chain_hand_offs_with_third_buffers(entry, alignment, capacity):
    """P -> C -> D, each hand-off tick shared with a side buffer: every plan is legal."""
    specs = [spec("P", 140, [0, 1]), spec("C", 120, [1, 2], in_place_parents=["P"]),
             spec("D", 20, [2, 3, 4], in_place_parents=["C"]), spec("S1", 20, [1]), spec("S2", 100, [1, 2]),
             spec("S3", 30, [2, 3])]
    bufs, r = solve_entry(entry, specs, capacity, alignment)
    check_buffers(bufs, capacity, alignment, cd=entry == "cd")
    value = r.spill_cost if entry == "solve" else r.hbm_bytes
    assert value == (total_spill(bufs) if entry == "solve" else total_hbm(bufs))
    assert r.lower_bound <= value and (not r.proven or value == r.lower_bound)


# --------------------------------------------------------------------------------------------
# Contract errors and validation parity

BAD_INPUTS = {
    "parent_end_mismatch": ([spec("P", 20, [0, 4]), spec("C", 15, [3, 8], in_place_parents=["P"])], "must end at"),
    "parent_never_read": ([spec("P", 20, [3]), spec("C", 15, [3, 8], in_place_parents=["P"])],
                          "computed buffer that is never read"),
    "parent_repeated_use": ([spec("P", 20, [3, 3]), spec("C", 15, [3, 8], in_place_parents=["P"])],
                            "computed buffer that is never read"),
    "child_larger": ([spec("P", 10, [0, 4]), spec("C", 15, [4, 8], in_place_parents=["P"])], "larger than"),
    "uses_not_increasing": ([spec("A", 10, [2, 1])], "strictly increasing"),
    # The contract gives no words for these three: the message names the buffer (or the missing parent).
    "end_override_too_early": ([spec("short_end", 10, [0, 3], lifetime_end_override=2)], "short_end"),
    "unknown_parent": ([spec("C", 10, [0, 3], in_place_parents=["ghost"])], "ghost"),
    "start_override_late": ([spec("late_start", 10, [2, 4], lifetime_start_override=3)], "late_start"),
    # Issue 53: integer-valued fields only (lx_view / lx_relayout_plans are accepted since September).
    "float_size": ([spec("a", 100.7, [0, 5]), spec("b", 100, [0, 5])], "('a'): size"),
    "string_size": ([spec("a", "100", [0, 5])], "('a'): size"),
    "bool_size": ([spec("a", True, [0, 5])], "('a'): size"),
    "float_uses": ([spec("a", 10, [0.5, 5.7])], "('a'): uses"),
}


@pytest.mark.parametrize("entry", ["solve", "cd"])
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_contract_violations_raise_contract_error_from_both_entry_points(case, entry):
    specs, words = BAD_INPUTS[case]
    with pytest.raises(contract_error()) as e:
        solve_entry(entry, specs, 1000, 1)
    assert words in str(e.value)
    if case == "parent_repeated_use":
        assert "strictly increasing" not in str(e.value)


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_validation_parity(case):
    """The same bad list gives the same error class and the same words from both entry points."""
    specs, words = BAD_INPUTS[case]
    errors = []
    for entry in ("solve", "cd"):
        try:
            solve_entry(entry, specs, 1000, 1)
            errors.append(None)
        except sp.BadInput as e:
            errors.append(e)
    assert all(e is not None for e in errors), errors
    assert type(errors[0]) is type(errors[1]) and all(words in str(e) for e in errors), [str(e) for e in errors]


def test_contract_error_class():
    err = contract_error()
    assert issubclass(err, sp.BadInput) and issubclass(err, ValueError) and issubclass(err, AssertionError)
    with pytest.raises(err) as e:
        sp.spyre.solve(lbb(BAD_INPUTS["child_larger"][0]), 1000, alignment=1)
    assert isinstance(e.value, sp.BadInput) and isinstance(e.value, ValueError) and isinstance(e.value, AssertionError)


@pytest.mark.parametrize("entry", ["solve", "cd"])
@pytest.mark.parametrize("alignment", [1, 128])
def test_read_first_single_use_parent_is_legal(entry, alignment):
    """A parent whose one use is a read (an input loaded to LX) hands off to its child."""
    specs = [spec("P", 128, [3], first_use_is_read=True), spec("C", 64, [3, 8], in_place_parents=["P"])]
    bufs, r = solve_entry(entry, specs, 128, alignment)
    check_buffers(bufs, 128, alignment, cd=entry == "cd")
    assert [b.address for b in bufs] == [0, 0]


@pytest.mark.parametrize("menu", ["missing", None, []], ids=["missing", "none", "empty"])
def test_core_divisions_required(menu):
    bufs = cdb([spec("A", 10, [0, 1]), spec("B", 10, [0, 1])])
    if menu == "missing":
        del bufs[1].core_divisions
    else:
        bufs[1].core_divisions = menu
    with pytest.raises(contract_error()):
        sp.spyre.solve_core_divisions(bufs, 1000, alignment=1)


# --------------------------------------------------------------------------------------------
# Overrides, divisions, reasons, newer fields

@pytest.mark.parametrize("entry", ["solve", "cd"])
def test_lifetime_end_override_extends_the_lifetime(entry):
    """A (uses [0, 5], end 7) and B (uses [6]) conflict only through the override."""
    specs = [spec("A", 100, [0, 5], lifetime_end_override=7), spec("B", 100, [6])]
    bufs, _ = solve_entry(entry, specs, 128, 128)
    check_buffers(bufs, 128, 128, cd=entry == "cd")
    assert sum(b.address is not None for b in bufs) == 1
    bufs, _ = solve_entry(entry, [spec("A", 100, [0, 5]), spec("B", 100, [6])], 128, 128)
    assert [b.address for b in bufs] == [0, 0]


@pytest.mark.parametrize("entry", ["solve", "cd"])
def test_lifetime_start_override_moves_the_start(entry):
    """A (uses [3, 5], start 1) conflicts with B (uses [0, 1]) only through the override."""
    specs = [spec("A", 100, [3, 5], lifetime_start_override=1), spec("B", 100, [0, 1])]
    bufs, _ = solve_entry(entry, specs, 128, 128)
    check_buffers(bufs, 128, 128, cd=entry == "cd")
    assert sum(b.address is not None for b in bufs) == 1
    specs[0]["lifetime_start_override"] = 3  # == uses[0]: no change
    bufs, _ = solve_entry(entry, specs, 128, 128)
    assert [b.address for b in bufs] == [0, 0]


@pytest.mark.parametrize("field,value", [("lx_relayout_plans", []), ("lx_view", None),
                                         ("lx_relayout_plans", ["plan"]), ("lx_view", "view")])
@pytest.mark.parametrize("entry", ["solve", "cd"])
def test_relayout_fields_are_accepted_and_untouched(entry, field, value):
    bufs, _ = solve_entry(entry, [spec("A", 10, [0, 1], **{field: value})], 128, 128)
    assert bufs[0].address == 0 and getattr(bufs[0], field) == value  # passed back untouched


def test_chosen_division_is_an_integer_index():
    """Menus [whole, split]: only the split fits 100 B. A splits stride 1 four ways (64 B per core);
    B splits strides 64 and 1, but stride 64 is also a reduction split: partition 4, 75 B."""
    menus = [[WHOLE, {"splits": {"1": 4}, "reduction_syms": []}],
             [WHOLE, {"output_splits": {"64": 2, "1": 4}, "reduction_splits": {"64": 2}}]]
    bufs = cdb([spec("A", 256, [0, 1]), spec("B", 300, [2, 3])], menus)
    r = sp.spyre.solve_core_divisions(bufs, 100, alignment=1, time_limit=TIME_LIMIT)
    for b, k in zip(bufs, r.divisions):
        assert type(b.chosen_division) is int and b.chosen_division == k, b.chosen_division
    assert [b.chosen_division for b in bufs] == [1, 1] and [b.address for b in bufs] == [0, 0]
    assert [footprint(b) for b in bufs] == [64, 75]
    check_buffers(bufs, 100, 1, cd=True)


@pytest.mark.parametrize("entry", ["solve", "cd"])
def test_spill_reasons(entry):
    """A reason present iff spilled; "capacity" for a buffer that did not fit; input reasons
    kept and such buffers never placed."""
    specs = [spec("big", 200, [0, 1]), spec("loser", 100, [0, 1]), spec("winner", 100, [0, 1, 2]),
             spec("pinned", 10, [3, 4], residency_reason="op not allowed")]
    bufs, _ = solve_entry(entry, specs, 128, 128)
    b = by_name(bufs)
    assert b["winner"].address == 0 and b["winner"].residency_reason is None
    for n in ("big", "loser"):
        assert b[n].address is None and "capacity" in (b[n].residency_reason or ""), (n, b[n].residency_reason)
    assert b["pinned"].address is None and b["pinned"].residency_reason == "op not allowed"


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("entry", ["solve", "cd"])
def test_reason_present_iff_spilled(entry, seed):
    specs, capacity, alignment = random_chains(random.Random(seed))
    bufs, _ = solve_entry(entry, specs, capacity, alignment)
    for b in bufs:
        assert (b.address is None) == bool(b.residency_reason), b


def paired(specs, pairs):
    for a, b in pairs:
        by = {s["name"]: s for s in specs}
        by[a].setdefault("paired_with", []).append(b)
        by[b].setdefault("paired_with", []).append(a)
    return specs


@pytest.mark.parametrize("entry", ["solve", "cd"])
@pytest.mark.parametrize("alignment", [1, 128])
def test_paired_buffers_are_all_or_none(entry, alignment):
    """A and B (each 1 unit) are paired; X (1 unit, many uses) is worth more than either alone.
    Room for two units: unpaired, the optimum keeps X and one of A, B; paired, it keeps X only."""
    u = 128
    specs = paired([spec("A", u, [0, 1]), spec("B", u, [0, 2]), spec("X", u, [0, 1, 2, 3, 4])], [("A", "B")])
    bufs, r = solve_entry(entry, specs, 2 * u, alignment)
    check_buffers(bufs, 2 * u, alignment, cd=entry == "cd")
    b = by_name(bufs)
    assert (b["A"].address is None) == (b["B"].address is None)
    assert b["X"].address is not None and b["A"].address is None
    assert (r.spill_cost if entry == "solve" else r.hbm_bytes) == 4 * u


@pytest.mark.parametrize("entry", ["solve", "cd"])
def test_paired_group_declared_by_one_member(entry):
    """A lists B and C: one group of three. Room for three units beside nothing else: X (7 uses)
    is worth more than the group (6 units), so the group goes, whole, although two of its
    members would fit beside X."""
    u = 128
    specs = [spec("A", u, [0, 1], paired_with=["B", "C"]), spec("B", u, [0, 2]), spec("C", u, [0, 2]),
             spec("X", u, list(range(7)))]
    bufs, r = solve_entry(entry, specs, 3 * u, 128)
    check_buffers(bufs, 3 * u, 128, cd=entry == "cd")
    assert [b.address is None for b in bufs] == [True, True, True, False]
    assert (r.spill_cost if entry == "solve" else r.hbm_bytes) == 6 * u


@pytest.mark.parametrize("entry", ["solve", "cd"])
def test_pair_member_with_a_reason_spills_its_partner(entry):
    """A pair member with a residency reason forces the other off LX (plenty of room)."""
    specs = paired([spec("A", 10, [0, 1], residency_reason="op not allowed"), spec("B", 10, [0, 1]),
                    spec("C", 10, [0, 1])], [("A", "B")])
    if entry == "solve":
        bufs = lbb(specs, parents_as_objects=True)
        sp.spyre.solve(bufs, 1000, alignment=1, time_limit=TIME_LIMIT)
    else:
        bufs, _ = solve_entry(entry, specs, 1000, 1)
    b = by_name(bufs)
    assert b["A"].address is None and b["A"].residency_reason == "op not allowed"
    assert b["B"].address is None and b["B"].residency_reason
    assert b["C"].address is not None


@pytest.mark.parametrize("seed", range(12))
def test_paired_property(seed):
    """Random pairs over the random chains: every pair all-or-none, every layout legal."""
    rng = random.Random(1000 + seed)
    specs, capacity, alignment = random_chains(rng)
    names = [s["name"] for s in specs]
    pairs = [tuple(rng.sample(names, 2)) for _ in range(2)]
    pairs = [p for i, p in enumerate(pairs) if not set(p) & {x for q in pairs[:i] for x in q}]
    paired(specs, pairs)
    for entry in ("solve", "cd"):
        bufs, r = solve_entry(entry, specs, capacity, alignment)
        check_buffers(bufs, capacity, alignment, cd=entry == "cd")
        value = r.spill_cost if entry == "solve" else r.hbm_bytes
        assert r.lower_bound <= value and (not r.proven or value == r.lower_bound), (entry, r)
        b = by_name(bufs)
        for x, y in pairs:
            assert (b[x].address is None) == (b[y].address is None), (entry, x, y, bufs)


@pytest.mark.parametrize("entry", ["solve", "cd"])
def test_deterministic(entry):
    for seed in range(5):
        specs, capacity, alignment = random_chains(random.Random(seed))
        first, _ = solve_entry(entry, specs, capacity, alignment)
        second, _ = solve_entry(entry, specs, capacity, alignment)
        assert [b.address for b in first] == [b.address for b in second]
        if entry == "cd":
            assert [b.chosen_division for b in first] == [b.chosen_division for b in second]


# --------------------------------------------------------------------------------------------
# Property: random in-place chains with third buffers and siblings at tight capacities

def random_uses(rng, start, extra, span=4):
    """[start] then `extra` later ticks within `span`."""
    return [start] + sorted(rng.sample(range(start + 1, start + 1 + span), extra))


def aligned_peak(specs, alignment):
    """The most aligned bytes live at one tick (in-place sharing not subtracted)."""
    return max(sum(-(-s["size"] // alignment) * alignment for s in specs if lifetime(s)[0] <= t < lifetime(s)[1])
               for t in range(max(s["uses"][-1] for s in specs) + 1))


def random_chains(rng):
    """In-place chains P -> C -> D ... (sizes non-increasing, parent.end == child.start + 1,
    parents read after their write or loaded), sibling children, third buffers live on the
    hand-off ticks and unrelated buffers; a tight capacity. Returns (specs, capacity, alignment)."""
    alignment = rng.choice([1, 128])
    hi = 400 if alignment > 1 else 160
    specs = []

    def add(size, uses, **kw):
        specs.append(spec(f"b{len(specs)}", size, uses, **kw))
        return specs[-1]

    for _ in range(rng.randint(1, 3)):
        loaded = rng.random() < 0.3
        parent = add(rng.randint(hi // 4, hi), random_uses(rng, rng.randint(0, 3), rng.randint(0 if loaded else 1, 2)),
                     first_use_is_read=loaded)
        for _ in range(rng.randint(1, 3)):
            tick = parent["uses"][-1]
            children = [add(rng.randint(1, parent["size"]), random_uses(rng, tick, rng.randint(1, 2)),
                            in_place_parents=[parent["name"]]) for _ in range(2 if rng.random() < 0.35 else 1)]
            for _ in range(rng.randint(0, 2)):  # third buffers live on the hand-off tick
                first = rng.randint(max(0, tick - 2), tick)
                last = rng.randint(tick, tick + 2)
                add(rng.randint(1, hi // 2), [first] + ([last] if last > first else []))
            parent = children[0]
    horizon = max(s["uses"][-1] for s in specs)
    for _ in range(rng.randint(0, 3)):
        add(rng.randint(1, hi), random_uses(rng, rng.randint(0, horizon), rng.randint(0, 2)),
            first_use_is_read=rng.random() < 0.2)
    if rng.random() < 0.2:
        specs[rng.randrange(len(specs))]["residency_reason"] = "op not allowed"
    rng.shuffle(specs)
    peak = aligned_peak(specs, alignment)
    capacity = max(int(peak * rng.uniform(0.3, 0.8)), min(peak - 1, hi // 2))
    return specs, capacity, alignment


def hand_off_ticks(specs):
    by = {s["name"]: s for s in specs}
    return {by[p]["uses"][-1] for s in specs for p in s.get("in_place_parents", ())}


def test_generator_makes_the_cases_it_claims():
    """The property inputs do contain hand-offs, siblings, third buffers on hand-off ticks,
    remainders (child smaller than parent) and both alignments."""
    seen = collections.Counter()
    for seed in SEEDS:
        specs, capacity, alignment = random_chains(random.Random(seed))
        by = {s["name"]: s for s in specs}
        seen[f"alignment {alignment}"] += 1
        kids = collections.Counter(p for s in specs for p in s.get("in_place_parents", ()))
        seen["siblings"] += any(n > 1 for n in kids.values())
        seen["chain of 3"] += any(by[p].get("in_place_parents") for p in kids)
        seen["remainder"] += any(s["size"] < by[p]["size"] for s in specs for p in s.get("in_place_parents", ()))
        ticks = hand_off_ticks(specs)
        seen["third on hand-off"] += any(not s.get("in_place_parents") and s["name"] not in kids
                                         and any(lifetime(s)[0] <= t < lifetime(s)[1] for t in ticks) for s in specs)
        seen["tight"] += capacity < aligned_peak(specs, alignment)
    for what in ("alignment 1", "alignment 128", "siblings", "chain of 3", "remainder", "third on hand-off"):
        assert seen[what] >= 10, seen
    assert seen["tight"] == len(SEEDS)


@pytest.mark.parametrize("seed", SEEDS)
def test_property_solve(seed):
    """Every solver's plan is legal, its spill cost is what it says, "proven" means cost ==
    bound, and no legal plan of any solver is below any solver's bound."""
    specs, capacity, alignment = random_chains(random.Random(seed))
    barred = {s["name"] for s in specs if s.get("residency_reason")}
    legal_costs, bounds = [], []
    for solver in SOLVERS:
        bufs = lbb(specs, parents_as_objects=seed % 2 == 0)
        r = sp.spyre.solve(bufs, capacity, alignment=alignment, time_limit=TIME_LIMIT, solver=solver)
        check_buffers(bufs, capacity, alignment, barred)
        assert r.spill_cost == total_spill(bufs), solver
        assert r.lower_bound <= r.spill_cost and (not r.proven or r.spill_cost == r.lower_bound), (solver, r)
        legal_costs.append(r.spill_cost)
        bounds.append(r.lower_bound)
    assert max(bounds) <= min(legal_costs), (bounds, legal_costs)


@pytest.mark.parametrize("seed", SEEDS)
def test_property_solve_core_divisions(seed):
    """The co-optimizer on the same buffers (one whole division each): legal, HBM bytes as
    stated, "proven" only at the bound; its plan is a legal torch-spyre layout, so neither
    entry point's bound may exceed the other's plan."""
    specs, capacity, alignment = random_chains(random.Random(seed))
    barred = {s["name"] for s in specs if s.get("residency_reason")}
    bufs = cdb(specs)
    r = sp.spyre.solve_core_divisions(bufs, capacity, alignment=alignment, time_limit=TIME_LIMIT)
    check_buffers(bufs, capacity, alignment, barred, cd=True)
    assert r.hbm_bytes == total_hbm(bufs)
    assert r.lower_bound <= r.hbm_bytes <= r.seed_hbm_bytes
    assert not r.proven or r.hbm_bytes == r.lower_bound, r
    plain = lbb(specs)
    s = sp.spyre.solve(plain, capacity, alignment=alignment, time_limit=TIME_LIMIT)
    assert s.lower_bound <= total_spill(bufs)
    assert r.lower_bound <= total_hbm(plain) or violations(records(plain), capacity, alignment)


@pytest.mark.parametrize("seed", SEEDS)
def test_property_alloc(seed):
    """The alloc engine on the alloc JSON form of the same buffers (objective select)."""
    specs, capacity, alignment = random_chains(random.Random(seed))
    r = sp.alloc.alloc(alloc_doc(specs, capacity, alignment), capacity=capacity, objective="select",
                       time_limit=TIME_LIMIT)
    bufs = copy.deepcopy(specs)
    for b, off in zip(bufs, r.offsets):
        b["address"] = None if off < 0 else int(off)
    check_buffers(bufs, capacity, alignment, {s["name"] for s in specs if s.get("residency_reason")})
    assert r.spill_cost == total_spill(bufs)
    assert r.lower_bound <= r.spill_cost and (not r.proven or r.spill_cost == r.lower_bound)


@pytest.fixture(scope="module")
def cli_binary():
    """conftest's CLI, else the one in the build tree the package was imported from (a worktree
    without its own build runs against another tree's build via PYTHONPATH)."""
    for path in (conftest.CLI, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(sp.__file__))), "scratchplan")):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    pytest.skip("scratchplan CLI not built")


@pytest.mark.parametrize("seed", [0, 1, 8, 18, 32])
def test_property_alloc_cli(seed, cli_binary, tmp_path):
    """The same through `scratchplan alloc FILE.json --objective select -o OUT.json` (seeds 1,
    8, 18 and 32 drew a third buffer into a parent's footprint before the hand-off fix)."""
    specs, capacity, alignment = random_chains(random.Random(seed))
    problem, plan = tmp_path / "p.json", tmp_path / "plan.json"
    problem.write_text(json.dumps(alloc_doc(specs, capacity, alignment)))
    run = subprocess.run([cli_binary, "alloc", str(problem), "--capacity", str(capacity), "--objective", "select",
                          "--time-limit", str(TIME_LIMIT), "-o", str(plan)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    out = json.loads(plan.read_text())
    offsets = {b["id"]: b["offset"] for b in out["buffers"]}
    bufs = [dict(s, address=offsets[s["name"]]) for s in specs]
    check_buffers(bufs, capacity, alignment, {s["name"] for s in specs if s.get("residency_reason")})
    assert out["spill_cost"] == total_spill(bufs)
    assert out["lower_bound"] <= out["spill_cost"]
    assert not out["proven_optimal"] or out["spill_cost"] == out["lower_bound"]


# --------------------------------------------------------------------------------------------
# The LX planner: random pointwise chains in place on dying inputs, with side values

POINTWISE_2D = ["(d0, d1) -> (d0, d1)"]


def random_program(rng):
    """Two families of [rows, 64] fp16 tensors (two per-core sizes); pointwise ops with one or
    two inputs and one or two outputs, inputs dying at random (so outputs may take their slot,
    siblings may compete for it, and the other input is a third value live on the hand-off op).
    Returns (program, capacity)."""
    rows = [rng.choice([8, 16, 24, 32]), rng.choice([2, 4, 8])]
    tensors, ops, pool, read = [], [], {0: [], 1: []}, set()

    def tensor(family, graph_input=False):
        t = {"name": f"t{len(tensors)}", "shape": [rows[family], 64], "dtype": "fp16"}
        if graph_input:
            t["graph_input"] = True
        tensors.append(t)
        return t["name"]

    for family in (0, 0, 1):
        pool[family].append(tensor(family, graph_input=True))
    for k in range(rng.randint(6, 14)):
        family = 0 if rng.random() < 0.65 else 1
        ins = rng.sample(pool[family], rng.randint(1, min(2, len(pool[family]))))
        outs = [tensor(family) for _ in range(2 if rng.random() < 0.3 else 1)]
        for t in ins:
            read.add(t)
            if len(pool[family]) > 1 and rng.random() < 0.6:
                pool[family].remove(t)
        pool[family].extend(outs)
        ops.append({"name": f"op{k}", "kind": "pointwise", "inputs": ins, "outputs": outs,
                    "iterator_types": ["parallel", "parallel"],
                    "indexing_maps": POINTWISE_2D * (len(ins) + len(outs))})
    for t in tensors:
        if not t.get("graph_input") and t["name"] not in read:
            t["graph_output"] = True
    program = {"format": "scratchplan-program", "version": 1, "name": "chains",
               "tensors": tensors, "ops": ops}
    return program, 128 * rng.randint(rows[1] + rows[0], 3 * rows[0] + rows[1])


def lx_records(plan):
    """One record per LX segment (ops inclusive -> half-open ticks); the in-place parent is the
    value named by in_place_of."""
    recs = []
    for b in plan["buffers"]:
        for seg in b.get("lx_segments") or ():
            recs.append(Rec(b["name"], seg["first_op"], seg["last_op"] + 1, seg["address"], b["per_core_bytes"],
                            {b["in_place_of"]} if b.get("in_place_of") else set()))
    return recs


def lx_plan(seed):
    program, capacity = random_program(random.Random(seed))
    plan = sp.lx.plan(program, cores=1, hardware={"name": "tiny", "capacity": capacity}, time_limit=0.2).to_dict()
    assert plan["capacity_per_core"] == capacity
    return plan


@pytest.mark.parametrize("seed", range(30))
def test_property_lx_plan(seed):
    plan = lx_plan(seed)
    recs = lx_records(plan)
    problems = violations(recs, plan["capacity_per_core"], plan["hardware"]["alignment"])
    assert not problems, "\n".join(problems)
    names = {b["name"] for b in plan["buffers"]}
    for b in plan["buffers"]:
        if b.get("in_place_of"):
            assert b["in_place_of"] in names and b.get("location") == "lx", b


def test_lx_generator_exercises_in_place_and_pressure():
    """The LX programs do produce in-place hand-offs with a third value live on the hand-off op,
    and values left in HBM for lack of room."""
    hand_offs = crowded = full = 0
    for seed in range(30):
        plan = lx_plan(seed)
        recs = lx_records(plan)
        for child in recs:
            for parent in recs:
                if parent.name in child.parents and parent.end == child.start + 1:
                    hand_offs += 1
                    tick = child.start
                    crowded += any(r.start <= tick < r.end and r.name not in (child.name, parent.name) for r in recs)
        full += any("did not fit" in (b.get("reason") or "") for b in plan["buffers"])
    assert hand_offs >= 10 and crowded >= 5 and full >= 5, (hand_offs, crowded, full)

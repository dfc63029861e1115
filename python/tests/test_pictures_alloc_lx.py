"""The alloc picture and the LX plan picture (issue 43, section 2): each passes check_svg (viewBox,
under 2 MB, labels inside and apart, renders with rsvg-convert at the viewBox's size) and shows
what it should: a legend of the roles drawn, byte ticks in KiB/MiB, tooltips with the full text
of ellipsized labels, and large inputs aggregated into an occupancy band."""
import os
import re
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import scratchplan as sp
from conftest import EXAMPLES
from pictures import SVG_NS, check_svg

LONG_ID = "encoder.layer_07.attention.self.query_key_value.output_activation_buffer"


def legend_names(svg):
    # Legend entries are the texts right after a swatch (a rect with the legend's thin stroke).
    return set(re.findall(r'stroke="#444" stroke-width="0.5"/>\n<text [^>]*>(?:<title>[^<]*</title>)?([^<]+)</text>', svg))


def titles(svg):
    root = ET.fromstring(svg)
    return [t.text or "" for t in root.iter(SVG_NS + "title")]


def tick_texts(svg):
    return set(re.findall(r">([0-9.]+ (?:B|KiB|MiB|GiB))</text>", svg))


def small_problem():
    bufs = [
        {"id": LONG_ID, "size": 96 * 1024, "start": 0, "end": 3},
        {"id": "w", "size": 64 * 1024, "start": 1, "end": 6},
        {"id": "x", "size": 32 * 1024, "start": 3, "end": 8},
        {"id": "y", "size": 128 * 1024, "start": 5, "end": 9},
    ]
    return {"buffers": bufs}


def test_alloc_small_with_capacity_line_and_long_id():
    r = sp.alloc.alloc(small_problem(), capacity=256 * 1024)
    svg = r.svg()
    check_svg(svg)
    assert "resident buffer" in legend_names(svg) and "capacity" in legend_names(svg)
    assert any(t.endswith("KiB") for t in tick_texts(svg)), tick_texts(svg)
    assert ">time step</text>" in svg and ">address</text>" in svg
    # the long id was cut inside its rectangle; the full text is its tooltip
    assert f"<title>{LONG_ID}</title>" in svg
    assert any(t.startswith(LONG_ID + ": 96 KiB") for t in titles(svg))
    assert "\u2026" in svg
    assert "occupancy" not in svg  # nothing below a pixel here


def test_alloc_minimize_draws_the_lower_bound_and_scales_to_the_height():
    r = sp.alloc.alloc(small_problem(), minimize=True)
    svg = r.svg()
    check_svg(svg)
    names = legend_names(svg)
    assert "lower bound" in names and "capacity" not in names
    top = max(float(t.split()[0]) * (1024 if t.endswith("KiB") else 1) for t in tick_texts(svg) if "B" in t)
    assert top <= r.height / 1024 * 1024  # no tick beyond the height reached


def test_alloc_spills_are_listed_and_bounded():
    n = 60
    bufs = [{"id": f"spill_candidate_with_a_long_name_{i:03d}", "size": 4096 * (1 + i % 5), "start": 0, "end": 4}
            for i in range(n)]
    r = sp.alloc.alloc({"buffers": bufs}, capacity=16384, objective="select")
    spilled = int((r.offsets < 0).sum())
    assert spilled > 40
    svg = r.svg()
    w, h = check_svg(svg)
    assert h < 900  # 40 listed in columns, not one line each
    assert f"spilled ({spilled}), largest first:" in svg
    assert f">and {spilled - 40} more</text>" in svg
    assert svg.count("spill_candidate_with_a_long_name_") <= 2 * 40 + 10  # shown + tooltips, bounded


def test_alloc_in_place_role():
    bufs = [{"id": "a", "size": 4096, "start": 0, "end": 3},
            {"id": "b", "size": 4096, "start": 2, "end": 6, "in_place_parents": ["a"]}]
    r = sp.alloc.alloc({"buffers": bufs}, capacity=4096)
    svg = r.svg()
    check_svg(svg)
    assert "in place (hand-off)" in legend_names(svg)


def test_alloc_many_buffers_become_an_occupancy_band():
    # 20k buffers: most are below a pixel; the budget of rectangles holds.
    sizes, starts, ends = sp.alloc.generate_stream(20_000, seed=3)
    r = sp.alloc.pack(sizes, starts, ends, solver="sweep")
    svg = r.svg()
    check_svg(svg)
    assert "buffers below one pixel (occupancy)" in legend_names(svg)
    assert svg.count("<rect") <= 2500 + 50
    assert len(svg) < 1_000_000
    assert any(t.endswith("MiB") for t in tick_texts(svg)), tick_texts(svg)


def test_alloc_200k_buffers_stays_small_and_fast():
    # sweep: the fastest solver with a tight height at this size (~3-5 s here; firstfit is quadratic)
    sizes, starts, ends = sp.alloc.generate_stream(200_000, seed=1)
    r = sp.alloc.pack(sizes, starts, ends, solver="sweep", time_limit=60)
    t = time.perf_counter()
    svg = r.svg()
    seconds = time.perf_counter() - t
    size = len(svg.encode())
    assert size < 1_000_000, size  # well under the 2 MB cap (35 MB before aggregation)
    assert seconds < 5, seconds
    check_svg(svg)
    assert "200000 buffers" in svg


def prog(name):
    return os.path.join(EXAMPLES, "programs", name + ".json")


@pytest.mark.parametrize("name,cores", [("layernorm", 1), ("swiglu", 32), ("moe_mlp", 32), ("sdpa", 32),
                                        ("softmax_lastdim", 32)])
def test_lx_plan_picture(name, cores):
    p = sp.lx.plan(prog(name), cores=cores)
    svg = p.svg()
    check_svg(svg)
    names = legend_names(svg)
    assert "value on LX" in names or "in place of a dying input" in names, names
    assert ">op index</text>" in svg and ">LX address</text>" in svg
    assert any(t.endswith(("KiB", "MiB")) for t in tick_texts(svg)), tick_texts(svg)
    assert re.search(r">cores? [0-9-]+</text>", svg)
    # every label cut inside a rectangle carries the full name as its tooltip
    root = ET.fromstring(svg)
    for el in root.iter(SVG_NS + "text"):
        shown = "".join(el.itertext())
        if "\u2026" in shown:
            assert el.find(SVG_NS + "title") is not None, shown


def test_lx_large_plan_aggregates_past_the_budget():
    p = sp.lx.plan(sp.program.synthetic(3000, seed=3), cores=32, time_limit=2)
    svg = p.svg()
    check_svg(svg)
    assert "segments below one pixel (occupancy)" in legend_names(svg)
    assert svg.count("<rect") <= 2500 + 50
    assert len(svg.encode()) < 1_000_000


def test_lx_plan_with_nothing_on_lx_says_so():
    p = sp.lx.plan(prog("swiglu"), cores=1)
    svg = p.svg()
    check_svg(svg)
    assert ">no value on LX: every tensor stays in HBM</text>" in svg
    assert ">core 0</text>" in svg

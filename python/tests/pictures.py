"""Checks every picture and timeline must pass, shared by the tests of each module.

check_svg(text): the SVG has a viewBox and no fixed size, stays under 2 MB, renders with
rsvg-convert (Debian's librsvg2-bin, installed by scripts/setup.sh) to a PNG of the viewBox's
size, and its horizontal labels stay inside the canvas and do not overlap one another (by the
same kind of width estimate the drawing code uses, made a little narrower here so that the test
only fails on a real overlap).

check_trace(text): the document follows the Trace Event Format as Perfetto reads it: complete
events ("X") with ts/dur in microseconds, counters ("C"), metadata ("M") naming every process and
thread used; timestamps never go backwards on a track. Returns the parsed document.
"""
import json
import shutil
import struct
import subprocess
import tempfile
import os
import xml.etree.ElementTree as ET

SVG_NS = "{http://www.w3.org/2000/svg}"
MAX_SVG_BYTES = 2 * 1024 * 1024


def _char_em(c):
    # Narrower than the drawing code's estimate (src/core/svg.cpp) so only real overlaps fail.
    if ord(c) >= 0x80:
        return 0.5
    if c in "il.,:;'|!()[]{} ":
        return 0.25
    if c in "mwMW@%":
        return 0.8
    if c.isupper():
        return 0.6
    return 0.5


def _width(text, font):
    return sum(_char_em(c) for c in text) * font


def _font(el, default):
    v = el.get("font-size")
    return float(v) if v else default


def _text_of(el):
    # The shown text, without the <title> tooltip child.
    parts = [el.text or ""]
    for ch in el:
        if ch.tag != SVG_NS + "title":
            parts.append("".join(ch.itertext()))
        parts.append(ch.tail or "")
    return "".join(parts).strip()


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "rsvg-convert did not write a PNG"
    return struct.unpack(">II", head[16:24])


def text_boxes(svg_text):
    """(x0, y0, x1, y1, text) of every horizontal text element, by estimate."""
    root = ET.fromstring(svg_text)
    base = float(root.get("font-size", "11"))
    boxes = []
    for el in root.iter(SVG_NS + "text"):
        if el.get("transform"):
            continue  # rotated captions are checked by rendering only
        s = _text_of(el)
        if not s:
            continue
        f = _font(el, base)
        w = _width(s, f)
        x, y = float(el.get("x", 0)), float(el.get("y", 0))
        anchor = el.get("text-anchor", "start")
        x0 = x - w / 2 if anchor == "middle" else x - w if anchor == "end" else x
        boxes.append((x0, y - 0.7 * f, x0 + w, y + 0.2 * f, s))
    return boxes


def check_svg(svg_text, min_size=(200, 100)):
    """Asserts the rules above; returns (width, height) of the rendered PNG."""
    data = svg_text.encode()
    assert len(data) < MAX_SVG_BYTES, f"SVG is {len(data)} bytes, over 2 MB"
    root = ET.fromstring(svg_text)
    assert root.tag == SVG_NS + "svg"
    vb = root.get("viewBox")
    assert vb, "no viewBox"
    x, y, w, h = (float(v) for v in vb.split())
    assert (x, y) == (0, 0) and w >= min_size[0] and h >= min_size[1], vb
    assert root.get("width") is None and root.get("height") is None, "fixed size: it would not scale"
    boxes = text_boxes(svg_text)
    for (x0, y0, x1, y1, s) in boxes:
        assert x0 >= -0.5 and x1 <= w + 0.5 and y0 >= -0.5 and y1 <= h + 0.5, f"label outside the canvas: {s!r}"
    # Pairwise overlap by a sweep over x.
    boxes.sort()
    active = []
    for b in boxes:
        active = [a for a in active if a[2] > b[0] + 0.5]
        for a in active:
            if a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5:
                raise AssertionError(f"labels overlap: {a[4]!r} and {b[4]!r}")
        active.append(b)
    exe = shutil.which("rsvg-convert")
    assert exe, "rsvg-convert missing: run scripts/setup.sh (Debian package librsvg2-bin)"
    with tempfile.TemporaryDirectory() as d:
        src, png = os.path.join(d, "p.svg"), os.path.join(d, "p.png")
        with open(src, "wb") as f:
            f.write(data)
        r = subprocess.run([exe, "-o", png, src], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        pw, ph = _png_size(png)
    assert abs(pw - w) <= 1 and abs(ph - h) <= 1, f"rendered {pw}x{ph}, viewBox {w}x{h}"
    return pw, ph


def check_trace(text):
    doc = json.loads(text)
    events = doc["traceEvents"]
    assert isinstance(events, list) and events
    named_p, named_t = set(), set()
    for e in events:
        assert e["ph"] in ("X", "C", "M"), e
        if e["ph"] == "M":
            if e["name"] == "process_name":
                named_p.add(e["pid"])
            if e["name"] == "thread_name":
                named_t.add((e["pid"], e["tid"]))
    last = {}
    for e in events:
        if e["ph"] == "M":
            continue
        assert e["pid"] in named_p, f"unnamed process {e['pid']}"
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert (e["pid"], e["tid"]) in named_t, f"unnamed thread {e}"
            assert e["dur"] >= 0 and isinstance(e["name"], str) and e["name"], e
            key = ("X", e["pid"], e["tid"])
        else:
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
            key = ("C", e["pid"], e["name"])
        assert e["ts"] >= last.get(key, 0), f"time goes backwards on {key}"
        last[key] = e["ts"]
    other = doc.get("otherData", {})
    assert "time_unit" in other and other.get("us_per_unit", 0) > 0
    return doc

"""NKI dtypes: stand-in dtype objects and their canonical names and sizes."""
from __future__ import annotations


from .context import np
from .context import TraceError, _where


_DTYPES = {}  # canonical name -> (bytes, stand-in dtype object)
_NAME_OF = {}  # id(dtype object) or numpy dtype -> canonical name


# Value ranges kernels read as `nl.fp32.min` (reference_attention's -inf stand-in); numpy's
# finfo/iinfo for numpy types, the formats' own limits for the others.
_RANGES = {"bfloat16": 3.3895313892515355e38, "tfloat32": 3.4028234663852886e38, "float8": 448.0}


class NkiDtype:
    """A dtype stand-in: compares and hashes like its numpy dtype (so `np.dtype(x)`, `x == nl.bfloat16`,
    dict keys and `.itemsize` work as with NKI's numpy/ml_dtypes types) and carries the value range
    (`.min`, `.max`) and `.bits` kernels read."""
    __slots__ = ("name", "itemsize", "dtype", "min", "max", "bits", "kind", "label")

    def __init__(self, name, size, np_dtype, label=None):
        self.name, self.itemsize, self.dtype, self.bits = name, size, np_dtype, 8 * size
        self.label = label or name  # str(): NKI's own name, distinct per format (nki-library's sizeinbytes compares it)
        self.kind = np_dtype.kind if np_dtype.kind != "V" else "f"
        if np_dtype.kind in "iu":
            info = np.iinfo(np_dtype)
            self.min, self.max = int(info.min), int(info.max)
        elif np_dtype.kind == "f":
            info = np.finfo(np_dtype)
            self.min, self.max = float(info.min), float(info.max)
        else:
            self.min, self.max = -_RANGES.get(name, 448.0), _RANGES.get(name, 448.0)

    def __eq__(self, other):
        if isinstance(other, NkiDtype):
            return self.label == other.label
        if isinstance(other, str):
            return other == self.label or _ALIASES.get(other, other) == self.label
        try:
            return self.dtype == other
        except TypeError:
            return False

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.dtype) if self.dtype.kind != "V" else hash(self.label)

    def __repr__(self):
        return f"dtype('{self.label}')"

    __str__ = lambda self: self.label


def _mk_dtype(name, size, np_name=None, label=None):
    if np is not None:
        npd = np.dtype(np_name) if np_name else np.dtype(f"V{size}")
        obj = NkiDtype(name, size, npd, label)
        if np_name:
            _NAME_OF[npd] = name
    else:
        obj = name
    if label is None:
        _DTYPES[name] = (size, obj)
    else:
        _VARIANTS[label] = obj
    _NAME_OF[id(obj)] = name
    return obj


_VARIANTS = {}  # NKI's name -> stand-in, for formats the kernel model knows by a shared name (float8_e4m3 -> float8)


for _n, _s, _npn in [("float32", 4, "float32"), ("float16", 2, "float16"), ("int8", 1, "int8"), ("uint8", 1, "uint8"),
                     ("int16", 2, "int16"), ("int32", 4, "int32"), ("uint32", 4, "uint32"), ("bfloat16", 2, None),
                     ("tfloat32", 4, None), ("float8", 1, None)]:
    _mk_dtype(_n, _s, _npn)
_DTYPES["bool_"] = (1, _DTYPES["uint8"][1])
# Formats the model sizes under a shared name (its memory is all that matters); each keeps its own
# str(). Packed formats (x4: four values per element) are their own model dtypes.
for _n, _s, _lbl in [("float8", 1, "float8_e4m3"), ("float8", 1, "float8_e5m2"), ("float8", 1, "float8_e4m3fn"),
                     ("float8", 1, "float8_e5m2fnuz"), ("float8", 1, "float8_e4m3fnuz"), ("int16", 2, "uint16")]:
    _mk_dtype(_n, _s, None if _lbl != "uint16" else "uint16", _lbl)
for _n, _s in [("float4_e2m1fn_x4", 2), ("float8_e4m3fn_x4", 4), ("float8_e5m2_x4", 4)]:
    _mk_dtype(_n, _s)
_ALIASES = {"bf16": "bfloat16", "fp32": "float32", "f32": "float32", "fp16": "float16", "f16": "float16",
            "fp8": "float8", "float8_e4m3": "float8", "float8_e5m2": "float8", "float8_e4m3fn": "float8",
            "tf32": "tfloat32", "uint16": "int16", "int64": "int32", "float64": "float32", "bool": "uint8"}


def _dtype_name(dt, what="dtype"):
    if dt is None:
        return None
    if isinstance(dt, str):
        n = _ALIASES.get(dt, dt)
        if n in _DTYPES and n != "bool_":
            return n
        raise TraceError(f"{_where()}: unknown {what} {dt!r}")
    if id(dt) in _NAME_OF:
        return _NAME_OF[id(dt)]
    if np is not None:
        try:
            d = np.dtype(dt)
        except TypeError:
            d = None
        if d is not None:
            if d in _NAME_OF:
                return _NAME_OF[d]
            if d.name in _ALIASES:
                return _ALIASES[d.name]
            if d.itemsize in (1, 2, 4) and d.kind in "iufbV":
                return {1: "int8", 2: "bfloat16" if d.kind == "V" else "int16", 4: "float32"}[d.itemsize]
    raise TraceError(f"{_where()}: unknown {what} {dt!r}")


def _itemsize(name):
    return _DTYPES[name][0]

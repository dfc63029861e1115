"""Helpers shared by the submodules: documents (dict or path) and result objects."""
from __future__ import annotations

import json
import numbers
import operator
import os
from typing import Any, Union

from . import _core

BadInput = _core.BadInput

Document = Union[str, "os.PathLike[str]", dict, list, Any]


def doc(x: Any, what: str) -> "_core.Doc":
    """A JSON document for the engines: a path (read by the CLI's reader, so errors name the
    file) or a dict / list / object with ``to_dict()``, sent as JSON text named ``<what>``."""
    if isinstance(x, (str, os.PathLike)):
        return _core.Doc(os.fspath(x), "", True)
    if hasattr(x, "to_dict") and not isinstance(x, (dict, list)):
        x = x.to_dict()
    if not isinstance(x, (dict, list)):
        raise BadInput(f"<{what}>: expected a dict in the documented JSON format or a path, got {type(x).__name__}")
    try:
        text = json.dumps(x, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise BadInput(f"<{what}>: not JSON: {e}") from None
    except RecursionError:  # (nesting far past what the readers accept: kMaxJsonDepth)
        raise BadInput(f"<{what}>: nesting too deep to be a document") from None
    return _core.Doc(text, f"<{what}>", False)


def exact_int(value: Any, where: str) -> int:
    """``value`` as an int when it is an integer by type: a Python ``int``, a numpy integer, or
    any integral type (``__index__`` or ``numbers.Integral``: sympy's ``Integer``, which
    torch-spyre passes). Anything else is refused, never rounded: a float (even 100.0: a size
    computed with ``/`` must be made an int by the caller), a string, a bool. Raises BadInput
    ``<where>: expected an integer, got ...``."""
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_", "bool8"):
        raise BadInput(f"{where}: expected an integer, got the bool {value!r}")
    if isinstance(value, int):
        return int(value)
    if not isinstance(value, (float, complex, str, bytes)):
        try:
            return operator.index(value)  # numpy integers, sympy Integer
        except TypeError:
            pass
        if isinstance(value, numbers.Integral):
            return int(value)
    kind = "the string" if isinstance(value, (str, bytes)) else f"a {type(value).__name__}"
    raise BadInput(f"{where}: expected an integer, got {kind} {value!r}")


def _text(value: Any) -> str:
    """An option value as the text a user would type on the command line."""
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        f = float(value)
        return str(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)
    return str(value)


def flag(name: str, kind: str, value: Any, lo: int = 0, hi: int = 0, words: Any = ()) -> Any:
    """Checks a keyword argument with the CLI's rule for the flag ``name`` (core/flags.h: kind
    "count" in lo..hi, "seconds", "bytes", "gbps", "enum" of ``words``) and returns it as int,
    float or str. Raises BadInput with the CLI's words, e.g. ``--cores: expected an integer
    1..32, got 40``."""
    if kind in ("count", "bytes") and isinstance(value, float) and value.is_integer():
        text = str(value)  # 2.0 is not an integer flag value, as on the command line
    else:
        text = value if isinstance(value, str) else _text(value)
    _core.check_flag(name, kind, text, int(lo), int(hi), list(words))
    if kind in ("count", "bytes"):
        return int(text)
    if kind in ("seconds", "gbps"):
        return float(text)
    return text


class Result:
    """Base of every result object: ``to_dict()``, ``to_json()``, ``svg()`` and the notebook
    picture ``_repr_svg_()``. Subclasses hold the C++ result in ``_r``."""

    __slots__ = ("_r", "_dict")

    def __init__(self, r: Any) -> None:
        self._r = r
        self._dict = None

    def to_json(self) -> str:
        """The JSON text the CLI writes for the same input."""
        return self._r.to_json()

    def to_dict(self) -> dict:
        """The CLI's JSON output as a dict (a fresh copy each call)."""
        if self._dict is None:
            self._dict = self._r.to_json()
        return json.loads(self._dict)

    def svg(self, path: "str | os.PathLike[str] | None" = None) -> str:
        """The SVG picture (also written to ``path`` when given)."""
        return write_text(self._r.svg(), path)

    def _repr_svg_(self) -> str:
        return self.svg()


def write_text(text: str, path: "str | os.PathLike[str] | None") -> str:
    """Returns ``text``, also written to ``path`` when given (``svg(path)``, ``to_trace(path)``)."""
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return text

from typing import Any, Callable, Iterable, List, Optional

from . import alloc as alloc, layout as layout, lx as lx, mlsys as mlsys, nki as nki, program as program
from . import spyre as spyre, workdiv as workdiv
from . import torch as torch  # imported on first attribute access (it imports PyTorch)
from ._common import BadInput as BadInput

__version__: str

def sweep(fn: Callable[[Any], Any], configs: Iterable[Any], executor: Optional[Any] = ...) -> List[Any]: ...

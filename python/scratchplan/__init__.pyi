from . import alloc as alloc, layout as layout, lx as lx, mlsys as mlsys, nki as nki, program as program
from . import spyre as spyre, workdiv as workdiv
from ._common import BadInput as BadInput

__version__: str

# The compiled engines; use the scratchplan package's functions instead.
from typing import Any

class BadInput(ValueError): ...

class Doc:
    def __init__(self, data: str, source: str, is_path: bool) -> None: ...
    data: str
    source: str
    is_path: bool

def __getattr__(name: str) -> Any: ...

"""Grid sweeps of planning functions over any ``concurrent.futures.Executor``.

``sweep(fn, configs)`` runs ``fn(config)`` for every config, in order; with ``executor`` (a
``ProcessPoolExecutor``, a ``ThreadPoolExecutor`` or Dask's ``Client.get_executor()``) the calls
run there, so the same code scales from one process to a multi-machine Dask cluster.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, List, Optional

__all__ = ["sweep"]


def sweep(fn: Callable[[Any], Any], configs: Iterable[Any], executor: Optional[Any] = None) -> List[Any]:
    """``[fn(c) for c in configs]``, through ``executor.submit`` when one is given (results in
    config order; the first exception is raised). ``fn`` and the configs must be picklable for
    process and Dask executors (a module-level function, plain dicts / tuples)."""
    configs = list(configs)
    if executor is None:
        return [fn(c) for c in configs]
    if not hasattr(executor, "submit"):
        raise TypeError(f"sweep: executor must have submit() (a concurrent.futures.Executor), got {type(executor).__name__}")
    futures = [executor.submit(fn, c) for c in configs]
    return [f.result() for f in futures]

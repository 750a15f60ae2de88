"""Type stubs of the extension kiln._tune (src/tune.cc); use kiln.tune."""

from typing import Any, Callable

def tune(source: str, is_path: bool, function: str, db: str, trials: int, seed: int, threads: int, repeats: int,
         timeout_s: float, batch: int, search: str, space: str, cost_model: str, cold_cache_bytes: int,
         progress: Callable[[str], object]) -> dict[str, Any]:
    """Tunes one PrimFunc of a .relax file (is_path) or text into the database db; returns the summary as a dict."""

"""Kiln's tuner from Python: :func:`tune` and :class:`TuneResult`.

    result = kiln.tune("mm.relax", function="mm", db="tuning/", trials=64)
    print(result)                      # default and best time, trials, failures
    exe = kiln.compile("mm.relax", tuning_db="tuning/")

The tuner is the extension ``kiln._tune`` (the search ``kiln-tune`` runs, with its XGBoost
cost model), present when the package was built with the compiler and imported on the first
call, so ``import kiln`` does not load XGBoost. See docs/guide/tuning.md for the search, the
design spaces and the database.
"""

import importlib
import logging
import os
from typing import Callable, List, Optional, Union

from .errors import InvalidArgumentError, NotFoundError, UnimplementedError

_logger = logging.getLogger("kiln.tune")


class TuneResult:
    """What one :func:`tune` call measured (times in microseconds, medians of repeats).

    ``default_us`` is the default schedule's time (its fastest median of the run: it is
    measured again after every round), ``best_us`` the fastest of the default and every
    candidate (never above ``default_us``), ``trials`` the candidates measured and
    ``failures`` those that failed to build, crashed, timed out or computed other numbers.
    ``best_trace`` is the winning schedule's trace as text, empty when no candidate beat the
    default (the default stays). ``best_after[i]`` is ``best_us`` after trial ``i + 1``.
    ``workload`` is the PrimFunc's structural hash in the database ``db``.
    """

    __slots__ = ("function", "workload", "db", "default_us", "best_us", "trials", "failures", "best_trace",
                 "best_after")

    def __init__(self, summary: dict, db: str) -> None:
        self.function: str = summary["function"]
        self.workload: str = summary["workload"]
        self.db: str = db
        self.default_us: float = summary["default_us"]
        self.best_us: float = summary["best_us"]
        self.trials: int = summary["trials"]
        self.failures: int = summary["failures"]
        self.best_trace: str = summary["best_trace"]
        self.best_after: List[float] = list(summary["best_after"])

    @property
    def speedup(self) -> float:
        """``default_us / best_us`` (1.0 when the default stayed best)."""
        return self.default_us / self.best_us if self.best_us > 0 else 1.0

    @property
    def improved(self) -> bool:
        """Whether a candidate beat the default schedule (``best_trace`` is its schedule)."""
        return bool(self.best_trace)

    def __repr__(self) -> str:
        return (f"kiln.TuneResult(function={self.function!r}, default {self.default_us:.1f} us, "
                f"best {self.best_us:.1f} us ({self.speedup:.2f}x), {self.trials} trials, "
                f"{self.failures} failed)")


def _log_line(line: str) -> None:
    if line.startswith("error: "):
        _logger.warning("%s", line)
    else:
        _logger.info("%s", line)


def _looks_like_text(source: str) -> bool:
    return "\n" in source or "@I.ir_module" in source or "@T.prim_func" in source


def _integer(name: str, value: object, lowest: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise InvalidArgumentError(f"kiln.tune: {name} must be an integer >= {lowest}, got {value!r}",
                                   "INVALID_ARGUMENT")
    return value


def _invalid(message: str) -> InvalidArgumentError:
    return InvalidArgumentError("kiln.tune: " + message, "INVALID_ARGUMENT")


def tune(
    source: Union[str, "os.PathLike[str]"],
    *,
    function: str,
    db: Union[str, "os.PathLike[str]"],
    trials: int = 16,
    threads: int = 1,
    seed: int = 1,
    search: str = "evolutionary",
    space: str = "all",
    repeats: int = 7,
    timeout: float = 10.0,
    batch: int = 8,
    cost_model: Optional[Union[str, "os.PathLike[str]"]] = None,
    cold_cache: Union[bool, int] = False,
    progress: Optional[Callable[[str], object]] = None,
) -> TuneResult:
    """Tunes the schedule of one PrimFunc by measurement, as ``kiln-tune`` does.

    ``source`` is a ``.relax`` file or Relax text (a string holding a newline or
    ``@I.ir_module``) and ``function`` the name of one of its PrimFuncs (in block form,
    float32 buffers of static shape). The default schedule is measured first, then
    ``trials`` candidates from the design spaces (``space``: ``"all"``, ``"default"`` for
    the default schedules' knobs, ``"generic"`` for the block rules), picked by ``search``
    (``"evolutionary"``: mutations ranked by a learned cost model, or ``"random"``), in
    rounds of ``batch``. Each candidate is compiled and run in a child process on
    ``threads`` kernel threads, ``repeats`` timed runs (the median kept), killed after
    ``timeout`` seconds, its outputs checked against the default's. Every measurement is
    appended to the database folder ``db`` (created when absent), and the cost model saved
    to ``cost_model`` (default ``db/cost_model.json``). ``kiln.compile(...,
    tuning_db=db)`` then builds with the best records.

    ``cold_cache`` times each run on cold caches, as ``kiln-tune --cold-cache``: before
    each timed run the measuring process reads a buffer (``True``: twice the last-level
    cache; an integer: that many bytes, at least 1 MiB), untimed, on every kernel thread,
    so the operands come from memory as large weights do in a model. The records say how
    they were measured (``"cache": "cold"`` and ``"flush_bytes"`` in ``records.jsonl``); a
    run reuses only records of its own regime, and ``kiln.compile(..., tuning_db=db)``
    applies warm records unless given ``options={"tuning_cache": "cold"}``.

    ``progress`` receives each progress line (one per trial, as ``kiln-tune`` prints); by
    default the lines go to the ``logging`` logger ``"kiln.tune"`` (INFO; a damaged database
    line, which is skipped, as WARNING). The GIL is released while tuning; one tuning runs
    at a time per process. If ``progress`` raises, or Ctrl-C is pressed, the tuning stops
    before its next trial and the exception propagates; the records measured so far stay
    in the database.

    Raises :class:`kiln.Error` subclasses with Kiln's message: a missing file is
    :class:`kiln.NotFoundError`, as is a ``function`` that is not a PrimFunc of the module
    (the message lists its PrimFuncs); a parse error or a bad argument
    :class:`kiln.InvalidArgumentError`; a function whose default schedule cannot be measured
    :class:`kiln.FailedPreconditionError`.
    """
    try:
        _tune = importlib.import_module(__package__ + "._tune")  # sys.modules first, as a test relies on
    except ImportError:  # built without the compiler
        raise UnimplementedError(
            "kiln.tune: this kiln package was built without the compiler (KILN_WITH_LLVM=OFF); "
            "pip install ./python builds it with the compiler where LLVM 19 is installed "
            "(scripts/setup.sh)",
            "UNIMPLEMENTED",
        ) from None
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise _invalid(f"source must be a path or Relax text, got {type(source).__name__}")
    if not isinstance(function, str) or not function:
        raise _invalid(f"function must be the name of a PrimFunc, got {function!r}")
    if not isinstance(db, (str, os.PathLike)):
        raise _invalid(f"db must be a folder path, got {type(db).__name__}")
    _integer("trials", trials, 0)
    _integer("threads", threads, 1)
    _integer("seed", seed, 0)
    _integer("repeats", repeats, 1)
    _integer("batch", batch, 1)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise _invalid(f"timeout must be a positive number of seconds, got {timeout!r}")
    if search not in ("evolutionary", "random"):
        raise _invalid(f"search must be 'evolutionary' or 'random', got {search!r}")
    if space not in ("all", "default", "generic"):
        raise _invalid(f"space must be 'all', 'default' or 'generic', got {space!r}")
    if cold_cache is True:
        cold_cache_bytes = 0  # the measuring process's default
    elif cold_cache is False:
        cold_cache_bytes = -1
    elif isinstance(cold_cache, int) and cold_cache >= 1 << 20:
        cold_cache_bytes = cold_cache
    else:
        raise _invalid(f"cold_cache must be True, False or a flush size in bytes >= 1048576, got {cold_cache!r}")
    if progress is not None and not callable(progress):
        raise _invalid(f"progress must be a callable taking a line of text, got {type(progress).__name__}")
    is_path = not _looks_like_text(source)
    if is_path and not os.path.exists(source):
        raise NotFoundError(f"kiln.tune: no such file '{source}'", "NOT_FOUND")
    db = os.fspath(db)
    cost_model = os.fspath(cost_model) if cost_model is not None else os.path.join(db, "cost_model.json")
    summary = _tune.tune(source, is_path, function, db, trials, seed, threads, repeats, float(timeout), batch,
                         search, space, cost_model, cold_cache_bytes,
                         progress if progress is not None else _log_line)
    return TuneResult(summary, db)


__all__ = ["TuneResult", "tune"]

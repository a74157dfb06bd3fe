"""Progress bars for long operations (large writes, index builds).

The C library reports progress through ``hs_progress_fn(ctx, what, done,
total)``; the extension calls a Python callable ``cb(what, done, total)`` at
most every 0.1 s (and once at the end) with the GIL taken back.  This module
turns that into a bar:

* ``tqdm`` (``tqdm.auto``, so notebooks get a widget) when it is importable;
* otherwise a one-line text bar redrawn on stderr.

Bars are shown when ``progress=True`` is passed to a method, or when the
global switch (``set_progress``) is on.  The default (``None``) is "auto":
on when stderr is a terminal or the code runs in a Jupyter kernel, off
otherwise (CI logs, pipes).  ``progress=False`` turns one call's bar off; a
callable is called as is (``cb(what, done, total)``) for custom reporting.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, Optional, Union

ProgressArg = Union[None, bool, Callable[[str, int, int], object]]

_enabled: Optional[bool] = None  # None = auto


def set_progress(enabled: Optional[bool]) -> None:
    """Turn progress bars on (True), off (False) or back to auto (None).

    Auto shows bars when stderr is a terminal or inside a Jupyter kernel."""
    global _enabled
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError("set_progress takes True, False or None")
    _enabled = enabled


def get_progress() -> Optional[bool]:
    """The global switch: True, False, or None (auto)."""
    return _enabled


def _in_notebook() -> bool:
    ip = sys.modules.get("IPython")
    if ip is None:
        return False
    try:
        shell = ip.get_ipython()  # type: ignore[attr-defined]
    except Exception:
        return False
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def _auto() -> bool:
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):
        pass
    return _in_notebook()


class _TextBar:
    """A minimal bar on stderr: ``desc [#####.....]  52%  52000/100000``."""

    def __init__(self, desc: str, unit: str):
        self.desc, self.unit = desc, unit
        self.started = time.monotonic()
        self.drawn = False

    def update(self, done: int, total: int) -> None:
        width = 30
        if total > 0:
            frac = min(1.0, max(0.0, done / total))
            bar = "#" * int(frac * width) + "." * (width - int(frac * width))
            text = f"\r{self.desc} [{bar}] {frac * 100:3.0f}%  {done}/{total} {self.unit}"
        else:
            text = f"\r{self.desc} {done} {self.unit}"
        sys.stderr.write(text)
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            elapsed = time.monotonic() - self.started
            sys.stderr.write(f"  ({elapsed:.1f}s)\n")
            sys.stderr.flush()


class _TqdmBar:
    def __init__(self, tqdm_cls, desc: str, unit: str):
        self._cls, self.desc, self.unit = tqdm_cls, desc, unit
        self.bar = None
        self.last = 0

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = self._cls(total=total if total > 0 else None, desc=self.desc,
                                 unit=self.unit, unit_scale=True, leave=True)
        if total > 0 and self.bar.total != total:
            self.bar.total = total
        if done > self.last:
            self.bar.update(done - self.last)
            self.last = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Progress:
    """Context manager giving the callback for one operation (or None).

    with Progress(progress_arg, "writing", "rows") as cb:
        handle.append(data, progress=cb)
    """

    def __init__(self, arg: ProgressArg, desc: str, unit: str = "rows"):
        self.arg, self.desc, self.unit = arg, desc, unit
        self.bar = None

    def _wanted(self) -> bool:
        if self.arg is None:
            return _enabled if _enabled is not None else _auto()
        return bool(self.arg)

    def __enter__(self):
        if callable(self.arg) and not isinstance(self.arg, bool):
            return self.arg
        if self.arg is not None and not isinstance(self.arg, bool):
            raise TypeError("progress must be True, False, None or a callable "
                            "cb(what, done, total)")
        if not self._wanted():
            return None
        try:
            from tqdm.auto import tqdm  # type: ignore
            self.bar = _TqdmBar(tqdm, self.desc, self.unit)
        except Exception:
            self.bar = _TextBar(self.desc, self.unit)
        bar = self.bar

        def cb(what: str, done: int, total: int) -> None:
            bar.update(done, total)

        return cb

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()

"""icml26: the methods of nineteen ICML 2026 papers as library code.

Each paper lives in ``icml26.papers.<key>`` (its public API) with a reproduction in
``icml26.papers.<key>.experiment``. From Python::

    import icml26
    icml26.list_papers()                      # the registry
    result = icml26.run("ou_steady", quick=True, seed=0)
    print(result.verdict())

From the shell: ``icml26 list | info KEY | run KEY|all [--quick] | report``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "list_papers", "run"]


def list_papers(area: str | None = None):
    """All registered papers (:class:`icml26.registry.PaperSpec`), optionally one area's."""
    from icml26.registry import list_papers as _list

    return _list(area)


def run(key: str, quick: bool = True, seed: int = 0, overrides=None, **kwargs):
    """Run a paper's reproduction; see :func:`icml26.runner.run`."""
    from icml26.runner import run as _run

    return _run(key, quick=quick, seed=seed, overrides=overrides, **kwargs)

"""One sub-package per paper; see :mod:`icml26.registry` for the table."""

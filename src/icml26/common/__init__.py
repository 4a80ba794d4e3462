"""Shared substrate used by several papers: configs, seeding, progress, optional
dependencies, an offline text corpus, a tokenizer and tiny causal LMs, small data sets.

Submodules are imported on use (``from icml26.common import tiny_lm``) so that the
optional ``lm`` extra is only needed by the papers that use it.
"""

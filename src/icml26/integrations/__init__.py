"""Integrations of the methods with training frameworks (imported on use).

* :mod:`icml26.integrations.hf` — Hugging Face ``Trainer``: an LLR callback and optimizer, a
  Trainer with the curvature regulariser, a Trainer for HAMU's paired retain/forget steps.
"""

"""Shared helpers of the robust_ntp tests: the rock-paper-scissors loss."""

from __future__ import annotations

from icml26.papers.robust_ntp import rock_paper_scissors_loss


L = rock_paper_scissors_loss()

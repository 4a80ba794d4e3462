"""Shared helper of the VimRAG tests: the issue's worked memory graph, a chain with a dead end."""

from __future__ import annotations

from icml26.papers.vimrag import MemoryGraph


def chain_with_dead_end():
    """root -> a -> b -> ans and root -> c (a dead end): the issue's worked example."""
    g = MemoryGraph("question")
    a = g.add_node("a", parents=[g.root])
    c = g.add_node("c", parents=[g.root])
    b = g.add_node("b", parents=[a])
    ans = g.add_node("answer", parents=[b], action="answer")
    return g, a, b, c, ans

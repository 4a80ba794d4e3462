"""SubspacePath's hostile-input probes and its module case (the registry-wide suites run them)."""

from __future__ import annotations

import math

import numpy as np
import torch

from icml26.contract import ModuleCase, Probe
from icml26.papers.subspace_path import (
    DomainOraclePruner,
    DomainProbes,
    RandomPruner,
    SubspacePathPruner,
    as_batch,
    breadth,
    collect_activations,
    compile_mask,
    fit_probes,
    head_alignment,
    head_importance,
    mask_heads,
    prune_heads,
    reference_compile,
    scale_heads,
    select_heads,
    similarity,
    synthesize_basis,
    whitelist_heads,
)
from icml26.papers.subspace_path.analysis import fraction_of_dense, speedup, split_accuracy
from icml26.papers.subspace_path.skills import make_skill_set


def _model():
    from icml26.common.extras import require

    transformers = require("transformers", "lm")
    cfg = transformers.LlamaConfig(vocab_size=32, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=32)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(cfg).eval()


def _keep(rows):
    return torch.tensor(rows, dtype=torch.bool)


def _imp():
    return torch.rand(2, 4, 3, generator=torch.Generator().manual_seed(0))


S = torch.tensor([0.9, 0.2, 0.0])


def _nan_residuals():
    x = torch.randn(6, 2, 8)
    x[0, 0, 0] = math.nan
    return fit_probes(x, torch.tensor([0, 1, 0, 1, 0, 1]))


def _cal():
    ids = torch.randint(0, 32, (3, 6), generator=torch.Generator().manual_seed(0))
    return {"a": {"input_ids": ids}, "b": {"input_ids": ids.flip(0)}}


HOSTILE = [
    # head removal
    Probe("mask of the wrong shape", lambda: prune_heads(_model(), torch.ones(2, 3, dtype=torch.bool)),
          raises=ValueError, match="shape"),
    Probe("mask with too many layers", lambda: mask_heads(_model(), torch.ones(3, 4, dtype=torch.bool)).__enter__(),
          raises=ValueError, match="shape"),
    Probe("a layer with no heads (structural)", lambda: prune_heads(_model(), _keep([[0, 0, 0, 0], [1, 1, 1, 1]])),
          raises=ValueError, match="layer"),
    Probe("a layer with no heads (masking)", lambda: mask_heads(_model(), _keep([[1, 1, 1, 1], [0, 0, 0, 0]])).__enter__(),
          raises=ValueError, match="layer"),
    Probe("a float mask", lambda: prune_heads(_model(), torch.ones(2, 4)), raises=TypeError, match="boolean"),
    Probe("a string mask", lambda: prune_heads(_model(), "all"), raises=TypeError, match="keep"),
    Probe("prune a non-model", lambda: prune_heads("llama", torch.ones(2, 4, dtype=torch.bool)), raises=TypeError,
          match="model"),
    Probe("prune a model without decoder blocks", lambda: prune_heads(torch.nn.Linear(2, 2), torch.ones(1, 1, dtype=torch.bool)),
          raises=ValueError, match="config"),
    Probe("scale_heads of the wrong shape", lambda: scale_heads(_model(), torch.ones(2, 5)).__enter__(),
          raises=ValueError, match="scale"),
    Probe("scale_heads with integer gates", lambda: scale_heads(_model(), torch.ones(2, 4, dtype=torch.long)).__enter__(),
          raises=TypeError, match="scale"),
    # compiler
    Probe("target_prune_ratio = 1", lambda: compile_mask(S, 0.5, _imp(), None, target_prune_ratio=1.0),
          raises=ValueError, match="target_prune_ratio"),
    Probe("target_prune_ratio < 0", lambda: compile_mask(S, 0.5, _imp(), None, target_prune_ratio=-0.2),
          raises=ValueError, match="target_prune_ratio"),
    Probe("target_prune_ratio NaN", lambda: select_heads(torch.rand(2, 4), target_prune_ratio=math.nan),
          raises=ValueError, match="target_prune_ratio"),
    Probe("both budget knobs", lambda: compile_mask(S, 0.5, _imp(), None, target_prune_ratio=0.3, strength=1.0),
          raises=ValueError, match="exactly one"),
    Probe("no budget knob", lambda: compile_mask(S, 0.5, _imp(), None), raises=ValueError, match="exactly one"),
    Probe("whitelist of the wrong shape",
          lambda: compile_mask(S, 0.5, _imp(), torch.zeros(3, 4, dtype=torch.bool), strength=1.0),
          raises=ValueError, match="whitelist"),
    Probe("float whitelist", lambda: compile_mask(S, 0.5, _imp(), torch.zeros(2, 4), strength=1.0), raises=TypeError,
          match="whitelist"),
    Probe("infeasible budget", lambda: compile_mask(S, 0.5, _imp(), torch.ones(2, 4, dtype=torch.bool),
                                                    target_prune_ratio=0.5), raises=ValueError, match="whitelist"),
    Probe("negative importance", lambda: compile_mask(S, 0.5, -_imp(), None, strength=1.0), raises=ValueError,
          match="importance"),
    Probe("NaN importance", lambda: compile_mask(S, 0.5, _imp() * math.nan, None, strength=1.0), raises=ValueError,
          match="importance"),
    Probe("similarity above 1", lambda: compile_mask(torch.tensor([1.5, 0.0, 0.0]), 0.5, _imp(), None, strength=1.0),
          raises=ValueError, match="similarity"),
    Probe("similarity of the wrong length", lambda: compile_mask(torch.tensor([0.5, 0.5]), 0.5, _imp(), None,
                                                                 strength=1.0), raises=ValueError, match="similarity"),
    Probe("breadth outside [0, 1]", lambda: compile_mask(S, 1.5, _imp(), None, strength=1.0), raises=ValueError,
          match="breadth"),
    Probe("negative strength", lambda: compile_mask(S, 0.5, _imp(), None, strength=-1.0), raises=ValueError,
          match="strength"),
    Probe("floors of the wrong length", lambda: compile_mask(S, 0.5, _imp(), None, strength=1.0, floors=(1, 0.1)),
          raises=ValueError, match="floors"),
    Probe("floor fraction above 1", lambda: compile_mask(S, 0.5, _imp(), None, strength=1.0, floors=(1, 1.5, 0.05)),
          raises=ValueError, match="floors"),
    Probe("reference_compile with mismatched domains",
          lambda: reference_compile(torch.full((2, 2), 0.5), _imp()), raises=ValueError, match="domains"),
    Probe("breadth of an all-zero profile", lambda: breadth(torch.zeros(4)), raises=ValueError, match="zero"),
    Probe("breadth with a negative entry", lambda: breadth(torch.tensor([0.5, -0.1])), raises=ValueError,
          match="non-negative"),
    Probe("breadth of one domain", lambda: breadth(torch.tensor([0.7])), returns=lambda v: v == 0.0,
          doc="K = 1 has no spread: c = 0"),
    Probe("similarity of probabilities above 1", lambda: similarity(torch.full((2, 3), 2.0)), raises=ValueError,
          match="probabilities"),
    # importance, probes, DBS
    Probe("axes that are not unit vectors", lambda: head_alignment(torch.randn(4, 2, 3, 5), torch.ones(2, 5)),
          raises=ValueError, match="unit"),
    Probe("writes of the wrong rank", lambda: head_alignment(torch.randn(4, 3, 5), torch.eye(5)[:2]),
          raises=ValueError, match="writes"),
    Probe("NaN writes", lambda: head_alignment(torch.full((2, 1, 1, 3), math.nan), torch.eye(3)[:2]),
          raises=ValueError, match="writes"),
    Probe("a domain without inputs", lambda: head_importance(torch.randn(4, 1, 2, 3), torch.eye(3)[:3],
                                                            torch.tensor([0, 0, 1, 1])), raises=ValueError,
          match="no input"),
    Probe("whitelist alpha = 0", lambda: whitelist_heads(torch.randn(4, 1, 2, 3), torch.eye(3)[:2],
                                                       torch.tensor([0, 1, 0, 1]), alpha=0.0), raises=ValueError,
          match="alpha"),
    Probe("probes on NaN residuals", _nan_residuals, raises=ValueError, match="NaN"),
    Probe("probe labels out of range", lambda: fit_probes(torch.randn(4, 1, 3), torch.tensor([0, 1, 2, 5]),
                                                         n_domains=3), raises=ValueError, match="labels"),
    Probe("probe epochs = 0", lambda: fit_probes(torch.randn(4, 1, 3), torch.tensor([0, 1, 0, 1]), epochs=0),
          raises=ValueError, match="epochs"),
    Probe("probes on the wrong residual shape", lambda: DomainProbes(2, 4, 3)(torch.randn(5, 3, 4)),
          raises=ValueError, match="residuals"),
    Probe("DBS asks for more axes than domains", lambda: synthesize_basis([torch.randn(5, 3), torch.randn(5, 3)], 3),
          raises=ValueError, match="n_axes"),
    Probe("DBS on no domains", lambda: synthesize_basis({}, 1), raises=ValueError, match="empty"),
    Probe("DBS with NaN embeddings", lambda: synthesize_basis([torch.full((2, 3), math.nan), torch.ones(2, 3)], 1),
          raises=ValueError, match="NaN"),
    Probe("DBS with negative coverage weight", lambda: synthesize_basis([torch.randn(3, 2), torch.randn(3, 2)], 1,
                                                                        coverage_weight=-1.0), raises=ValueError,
          match="coverage_weight"),
    # pruner and baselines
    Probe("unknown axes", lambda: SubspacePathPruner(_model(), axes="pca"), raises=ValueError, match="axes"),
    Probe("compile before fit", lambda: SubspacePathPruner(_model()).compile(torch.ones(1, 4, dtype=torch.long),
                                                                             target_prune_ratio=0.3),
          raises=RuntimeError, match="fit"),
    Probe("fit on one domain", lambda: SubspacePathPruner(_model()).fit({"a": torch.ones(3, 4, dtype=torch.long)}),
          raises=ValueError, match="2 domains"),
    Probe("fit on a list", lambda: SubspacePathPruner(_model()).fit([torch.ones(3, 4, dtype=torch.long)]),
          raises=TypeError, match="mapping"),
    Probe("text without a tokenizer", lambda: as_batch("hello"), raises=TypeError, match="tokenizer"),
    Probe("empty input ids", lambda: as_batch(torch.zeros(0, 4, dtype=torch.long)), raises=ValueError, match="empty"),
    Probe("float input ids", lambda: as_batch(torch.ones(2, 3)), raises=ValueError, match="integer"),
    Probe("a row without real tokens", lambda: as_batch({"input_ids": torch.ones(2, 3, dtype=torch.long),
                                                        "attention_mask": torch.tensor([[1, 1, 0], [0, 0, 0]])}),
          raises=ValueError, match="no real token"),
    Probe("collect_activations batch_size = 0", lambda: collect_activations(_model(), as_batch(torch.ones(1, 3, dtype=torch.long)),
                                                                            batch_size=0),
          raises=ValueError, match="batch_size"),
    Probe("random pruner seed = -1", lambda: RandomPruner(_model(), seed=-1), raises=ValueError, match="seed"),
    Probe("oracle without the scenario's domains", lambda: DomainOraclePruner(_model()).fit(_cal()).compile(
        target_prune_ratio=0.3), raises=ValueError, match="domains"),
    Probe("oracle with an unknown domain", lambda: DomainOraclePruner(_model()).fit(_cal()).compile(
        target_prune_ratio=0.3, domains=["zzz"]), raises=ValueError, match="unknown"),
    # data and analysis
    Probe("unknown skill", lambda: make_skill_set("juggle", 3, np.random.default_rng(0)), raises=ValueError,
          match="skills"),
    Probe("zero examples", lambda: make_skill_set("copy", 0, np.random.default_rng(0)), raises=ValueError, match="n="),
    Probe("split_accuracy of unequal lengths", lambda: split_accuracy([0.5], ["a", "b"]), raises=ValueError,
          match="equal-length"),
    Probe("speedup with a zero timing", lambda: speedup([1.0], [0.0]), raises=ValueError, match="positive"),
    Probe("fraction of a zero dense score", lambda: fraction_of_dense(0.4, 0.0), returns=lambda v: math.isnan(v),
          doc="undefined ratio: NaN (a check on it is not held)"),
]

MODULES = [
    ModuleCase("DomainProbes", build=lambda: DomainProbes(3, 16, 4),
               inputs=lambda g: (torch.randn(5, 3, 16, generator=g),)),
]


# ---------------------------------------------------------------------------
# the hostile-input walk (tests/test_hostile_walk.py)
# ---------------------------------------------------------------------------
_PRUNED_DIR: list = []  # a TemporaryDirectory holding one tiny pruned model, made on first use


def _pruned_folder() -> str:
    """A folder with a tiny Llama pruned to 3 of 4 heads per layer, saved by save_pruned (removed at exit)."""
    if not _PRUNED_DIR:
        import tempfile

        from icml26.papers.subspace_path import save_pruned

        folder = tempfile.TemporaryDirectory(prefix="subspace-path-walk-")
        save_pruned(prune_heads(_model(), _keep([[1, 1, 1, 0], [0, 1, 1, 1]])), folder.name)
        _PRUNED_DIR.append(folder)
    return _PRUNED_DIR[0].name


def _ids(n: int = 3, t: int = 5, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 32, (n, t), generator=torch.Generator().manual_seed(seed))


def _labels4() -> torch.Tensor:
    return torch.tensor([0, 1, 0, 1])


def _writes() -> torch.Tensor:
    """``(N=4, L=2, H=4, d=32)`` head writes of the walk's tiny Llama."""
    return torch.randn(4, 2, 4, 32, generator=torch.Generator().manual_seed(1))


def _axes2() -> torch.Tensor:
    return torch.eye(32)[:2]


_KEEP = lambda: torch.ones(2, 4, dtype=torch.bool)  # noqa: E731

VALID = {
    "AttentionLayout": lambda: ((4, 2, 8), {}),
    "Batch": lambda: ((_ids(), torch.ones(3, 5, dtype=torch.long)), {}),
    "DomainOraclePruner": lambda: ((_model(),), {"batch_size": 2, "max_length": 16}),
    "DomainProbes": lambda: ((2, 4, 3), {}),
    "GlobalGradientPruner": lambda: ((_model(),), {"batch_size": 2, "max_length": 16}),
    "RandomPruner": lambda: ((_model(),), {"seed": 1}),
    "ScenarioProfile": lambda: ((torch.tensor([[0.9, 0.2, 0.1], [0.7, 0.4, 0.0]]),), {}),
    "SubspacePathPruner": lambda: ((_model(),), {"whitelist_max_fraction": 0.5, "whitelist_share": 0.25}),
    "WandaSPPruner": lambda: ((_model(),), {"batch_size": 2, "max_length": 16}),
    "Whitelist": lambda: ((torch.zeros(2, 4, dtype=torch.bool), torch.rand(2, 4), 1e-3), {}),
    "as_batch": lambda: ((_ids(),), {"max_length": 16}),
    "attention_layout": lambda: ((_model(),), {}),
    "attention_modules": lambda: ((_model(),), {}),
    "basis_coverage": lambda: ((torch.randn(6, 4), torch.eye(4)[:2]), {}),
    "breadth": lambda: ((torch.tensor([[0.9, 0.2, 0.1], [0.7, 0.4, 0.0]]),), {}),
    "collect_activations": lambda: ((_model(), as_batch(_ids())), {"batch_size": 2}),
    "compile_mask": lambda: ((S, 0.5, _imp(), torch.zeros(2, 4, dtype=torch.bool)), {"target_prune_ratio": 0.25}),
    "count_heads": lambda: ((_model(),), {}),
    "domain_axes": lambda: (([torch.randn(3, 4), torch.randn(2, 4) + 1.0],), {}),
    "domain_pools": lambda: (({"a": _ids(), "b": _ids(2, 4, seed=1)},), {"max_length": 16}),
    "fit_probes": lambda: ((torch.randn(6, 2, 4), torch.tensor([0, 1, 2, 0, 1, 2])),
                           {"n_domains": 3, "epochs": 1, "lr": 1e-2, "batch_size": 4, "validation_fraction": 0.3}),
    "gradient_head_importance": lambda: ((_model(), as_batch(_ids()), _ids()), {"batch_size": 2}),
    "head_alignment": lambda: ((_writes(), _axes2()), {"eps": 1e-8}),
    "head_importance": lambda: ((_writes(), _axes2(), _labels4()), {"eps": 1e-8}),
    "head_writes": lambda: ((_model(), torch.randn(3, 4, 8)), {"layer": 1}),
    "importance_from_alignment": lambda: ((torch.rand(4, 2, 4, 2), _labels4()), {}),
    "labelled_batch": lambda: (({"input_ids": _ids(), "labels": _ids()},), {"max_length": 16}),
    "load_pruned": lambda: ((_pruned_folder(),), {}),
    "mask_heads": lambda: ((_model(), _KEEP()), {}),
    "mask_output_blocks": lambda: ((_model(), _KEEP()), {}),
    "prune_heads": lambda: ((_model(), _keep([[1, 0, 1, 1], [1, 1, 1, 1]])), {}),
    "reference_compile": lambda: ((torch.tensor([[0.9, 0.2, 0.1], [0.7, 0.4, 0.0]]), _imp()),
                                  {"strength": 1.0, "rho_min": 0.1}),
    "save_pruned": lambda: ((prune_heads(_model(), _keep([[1, 0, 1, 1], [1, 1, 1, 1]])), _walk_tmp()), {}),
    "scale_heads": lambda: ((_model(), torch.ones(2, 4)), {}),
    "select_heads": lambda: ((torch.rand(2, 4),), {"target_prune_ratio": 0.25}),
    "similarity": lambda: ((torch.tensor([[0.9, 0.2, 0.1], [0.7, 0.4, 0.0]]),), {}),
    "synthesize_basis": lambda: (([torch.randn(3, 4), torch.randn(3, 4) + 1.0, torch.randn(3, 4) - 1.0], 2),
                                 {"coverage_weight": 0.5, "min_separation": 0.05}),
    "wanda_sp_scores": lambda: ((_model(), as_batch(_ids())), {"batch_size": 2}),
    "whitelist_from_alignment": lambda: ((torch.rand(4, 2, 4, 2), _labels4()),
                                         {"alpha": 0.05, "max_fraction": 0.5, "share": 0.25}),
    "whitelist_heads": lambda: ((_writes(), _axes2(), _labels4()),
                                {"alpha": 0.05, "max_fraction": 0.5, "share": 0.25, "eps": 1e-8}),
}


def _walk_tmp() -> str:
    """A fresh empty folder under the walk's temporary directory."""
    import tempfile

    return tempfile.mkdtemp(dir=_pruned_folder())


NOT_WALKED = {
    "Activations": "a plain record of pooled activations that collect_activations fills; collect_activations, "
                   "head_writes (head_outputs) and fit_probes (residuals) are walked and refuse NaN",
    "Basis": "a plain record of the chosen axes and their scores that synthesize_basis fills; synthesize_basis, "
             "domain_axes and basis_coverage are walked",
}

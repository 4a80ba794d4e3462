"""SmolLM2 section of the reproduction (full setting; a further run of the quick one): stdlib docstrings
grouped by package as domains.

Domains (brief §4.1, optional real-text variant): the docstrings of the standard library's
``email``, ``asyncio``, ``tkinter``, ``_pydecimal``, ``xml`` and ``unittest`` (nothing is
downloaded). DBS on mean-pooled layer-0 states picks ``n_axes`` of them; the method is fitted
on their docstrings, the baselines on the same docstrings with the next-token loss, the
oracle on every package; SubspacePath is also scored with the magnitude-aware importance
``E[(uᵀw̃)²]`` and with whole key/value groups selected (SmolLM2 has 3 query heads per group; both
ours). A scenario's mask is compiled from its first docstring and scored
by next-token top-1 accuracy on ``real_turns`` further docstrings of its package(s).
Experiment code: the library never imports it.
"""

from __future__ import annotations

import ast
import itertools
import sysconfig
import warnings
from pathlib import Path

import torch

from icml26.contract import RunContext
from icml26.papers.subspace_path.analysis import split_accuracy
from icml26.papers.subspace_path.config import Config

__all__ = ["PACKAGES", "package_docstrings", "smollm2_section"]

PACKAGES = ("email", "asyncio", "tkinter", "_pydecimal", "xml", "unittest")
"""The six candidate domains: stdlib packages (``_pydecimal`` is one module)."""


def package_docstrings(package: str, *, min_chars: int = 80) -> list[str]:
    """Docstrings (modules, classes, functions) of one stdlib package, in sorted file order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    path = root / package
    files = sorted(path.rglob("*.py")) if path.is_dir() else [root / f"{package}.py"]
    docs: list[str] = []
    for file in files:
        if any(part in ("test", "tests", "idle_test") for part in file.relative_to(root).parts):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(file.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=True)
                if doc and len(doc) >= min_chars:
                    docs.append(doc.strip())
    return list(dict.fromkeys(docs))


@torch.no_grad()
def _next_token_accuracy(model, batch) -> float:
    device = next(model.parameters()).device
    logits = model(input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device)).logits
    pred = logits[:, :-1].argmax(-1).cpu()
    target = batch["input_ids"][:, 1:]
    valid = batch["attention_mask"][:, 1:].bool()
    return float((pred == target)[valid].float().mean())


def smollm2_section(cfg: Config, ctx: RunContext) -> tuple[dict, list[str]]:
    """Metrics ``{"smollm2_<arm>": {...}}`` and notes of the real-model section."""
    from icml26.common.extras import extra_installed

    if not extra_installed("pretrained"):
        return {}, ["SmolLM2 section skipped: the pretrained extra is not installed."]
    from icml26.common.pretrained import load_pretrained_lm
    from icml26.papers.subspace_path import (
        DomainOraclePruner,
        GlobalGradientPruner,
        RandomPruner,
        SubspacePathPruner,
        WandaSPPruner,
        mask_heads,
        synthesize_basis,
    )

    ctx.stage("SmolLM2 section: docstrings by package")
    lm = load_pretrained_lm(ctx.device)
    model, tok = lm.model, lm.tokenizer
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "right"  # positions count from the first real token
    rng = ctx.rng("real_docs")
    need = cfg.real_pool_size + cfg.real_scenarios * (1 + cfg.real_turns) * 2
    texts = {}
    for pkg in PACKAGES:
        docs = package_docstrings(pkg)
        order = rng.permutation(len(docs))
        texts[pkg] = [docs[i] for i in order[:need]]

    def encode(docs):
        return tok(docs, return_tensors="pt", padding=True, truncation=True, max_length=cfg.real_tokens)

    pools = {p: encode(t[:cfg.real_pool_size]) for p, t in texts.items()}
    emb = {}
    for p, enc in pools.items():
        e = model.get_input_embeddings()(enc["input_ids"].to(ctx.device)).float().cpu()
        m = enc["attention_mask"].unsqueeze(-1).float()
        emb[p] = (e * m).sum(1) / m.sum(1)
    basis = synthesize_basis(emb, cfg.n_axes, cfg.coverage_weight)
    selected = list(basis.names)
    held_out = [p for p in PACKAGES if p not in selected]
    ctx.stage("SmolLM2 section: fit")
    inputs = {p: pools[p] for p in selected}
    method = dict(alpha=cfg.whitelist_alpha, whitelist_max_fraction=cfg.whitelist_max_fraction,
                  whitelist_share=cfg.whitelist_share or None, probe_epochs=cfg.probe_epochs, batch_size=8,
                  seed=ctx.seed_for("probes"))
    fitted = {
        "SubspacePath": SubspacePathPruner(model, **method).fit(inputs),
        # the magnitude-aware score E[(uᵀw̃)²] (ours): the same probes, axes and whitelist
        "SubspacePath_magnitude": SubspacePathPruner(model, importance="magnitude", **method).fit(inputs),
        "global_gradient": GlobalGradientPruner(model, batch_size=4).fit(inputs),
        "wanda_sp": WandaSPPruner(model, batch_size=8).fit(inputs),
        "oracle": DomainOraclePruner(model, batch_size=4).fit(pools),
    }
    cursor = {p: cfg.real_pool_size for p in PACKAGES}

    def take(p, n):
        out = texts[p][cursor[p]:cursor[p] + n]
        if len(out) < n:
            raise ValueError(f"package {p!r} has too few docstrings for real_pool_size, real_scenarios and real_turns; "
                             "lower them")
        cursor[p] += n
        return out

    plan = [("selected", (p,)) for p in selected for _ in range(cfg.real_scenarios)]
    plan += [("ood", (p,)) for p in held_out for _ in range(cfg.real_scenarios)]
    pairs = list(itertools.combinations(selected, 2))[:cfg.real_scenarios]
    plan += [("cross", pair) for pair in pairs]
    arms = ("SubspacePath", "SubspacePath_magnitude", "SubspacePath_groups", "global_gradient", "wanda_sp", "random",
            "oracle")
    acc = {(a, r): [] for a in arms for r in cfg.prune_ratios}
    dense, splits = [], []
    ctx.stage("SmolLM2 section: evaluate")
    for i, (split, pkgs) in enumerate(ctx.progress(plan, desc="SmolLM2 scenarios")):
        first = encode([d for p in pkgs for d in take(p, 1)])
        turns = encode([d for p in pkgs for d in take(p, max(1, cfg.real_turns // len(pkgs)))])
        splits.append(split)
        dense.append(_next_token_accuracy(model, turns))
        for r in cfg.prune_ratios:
            for arm in arms:
                if arm == "random":
                    keep = RandomPruner(model, seed=ctx.seed_for("random_heads", 50_000 + i)).fit().compile(
                        target_prune_ratio=r)
                elif arm == "oracle":
                    keep = fitted["oracle"].compile(target_prune_ratio=r, domains=list(pkgs))
                elif arm == "SubspacePath_groups":  # GQA-aware: whole key/value groups
                    keep = fitted["SubspacePath"].compile(first, target_prune_ratio=r, whole_groups=True)
                elif arm.startswith("SubspacePath"):
                    keep = fitted[arm].compile(first, target_prune_ratio=r)
                else:
                    keep = fitted[arm].compile(target_prune_ratio=r)
                with mask_heads(model, keep):
                    acc[(arm, r)].append(_next_token_accuracy(model, turns))
    metrics = {}
    for arm in arms:
        row = {}
        for r in cfg.prune_ratios:
            for split, v in split_accuracy(acc[(arm, r)], splits).items():
                row[f"{split}_{round(100 * r)}"] = v
        metrics[f"smollm2_{arm}"] = row
    metrics["smollm2_dense"] = split_accuracy(dense, splits)
    notes = [f"SmolLM2 section: DBS selected {selected}, OOD {held_out}; whitelist "
             f"{fitted['SubspacePath'].whitelist.count} of {fitted['SubspacePath'].n_layers * fitted['SubspacePath'].n_heads}"
             " heads; next-token top-1 accuracy per split in the smollm2_* rows."]
    del lm, model
    return metrics, notes

"""One sub-package per paper; see :mod:`icml26.registry` for the table."""

#: What a user applies, one line per paper (``icml26 list``; ``icml26 info KEY`` prints the README's tested example).
APPLIES: dict[str, str] = {
    "asym_perturb": "solve_matrix_game(A, 'asymmetric_reference') / solve_efg(open_spiel game): last-iterate equilibria",
    "confsleepnet": "aggregate(lift(opinions)): conflict-aware fusion of per-view evidential opinions",
    "curvature": "layerwise_curvature_entropy(hf_model, ids); CurvatureLoss in training (curvature_trainer)",
    "dmanet": "DMANet(seq_len, pred_len, n_channels) + fit_forecaster: an anti-aliased multiscale forecaster",
    "fox": "fox_generate(llava, inputs, FoxConfig()) / fox_logits_processor: LLaVA decoding against hallucination",
    "hamu": "unlearn(model, retain_batches, forget_batches, method='hamu_q') / HamuOptimizer / hamu_trainer",
    "hici": "hici.patch(llama, HiCIConfig(...)): segment attention with slots for long-context fine-tuning",
    "instemb": "InstEmbModel(hf_lm, num_lookahead, tokenizer=...) + train_instemb: instruction-following embeddings",
    "llr": "LayerwiseLR(model, optimizer, total_steps=...) / llr_optimizer + LLRCallback: per-layer rates",
    "lmcleaner": "TrajectoryRecorder + OnlineUnlearner: certified deletion of a training batch after the fact",
    "ou_steady": "fit_lsq(regimes, interventions): an OU drift from steady-state samples, one intervention per component",
    "revit": "ReViT2d / ReViT3d: rotation-equivariant ViTs for PDE fields (rotate_field to test)",
    "robuq": "quantize_dit(pipe.transformer, ...): W1.58 A2-4 quantisation of a diffusers DiT (Hadamard, AMPN)",
    "robust_ntp": "Robustified(your_model, loss, beta, threshold): next-token play with bounded regret vs any adversary",
    "spard": "spag_finetune(model, task_loader, safety_loader, steps=...) + dpp_select: fine-tuning that stays safe",
    "stream_spr": "StreamQSPR(gymnasium env): streaming Q(lambda) with SPR and orthogonalised updates",
    "subspace_path": "SubspacePathPruner(hf_model).fit(...) then prune_heads / mask_heads: head pruning",
    "vimrag": "MemoryGraph + graph_modulated_allocation(...) -> processor_kwargs: a visual-memory budget",
    "zs_expand": "ClassifierExpander().fit(...) then .expand(...): add zero-shot classes to a trained linear head",
}

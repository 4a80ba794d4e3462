"""InstEmb: instruction-following embeddings with look-ahead tokens, self-distillation and DAAP.

Gao et al., "Instruction-Following Embeddings through Glimpses of the Future", ICML 2026
(earlier: OpenReview SeqQdBV6YP; no public code). Wrap any Hugging Face causal LM (or the
offline all-MiniLM-L6-v2) with :meth:`InstEmbModel.wrap`, train with :func:`train_instemb`,
embed with ``.encode(texts, instruction)``. See README.md.
"""

from icml26.papers.instemb.analysis import (
    instruction_nmi,
    instruction_sensitivity,
    inst_sts_pairs,
    inst_sts_spearman,
    kmeans_nmi,
    spearman_ceiling,
)
from icml26.papers.instemb.baselines import contrastive_last_token, input_last, instemb_last_token
from icml26.papers.instemb.data import (
    ATTRIBUTES,
    INSTRUCTIONS,
    AttrWorld,
    Example,
    attrworld_tokenizer,
    attrworld_vocabulary,
)
from icml26.papers.instemb.losses import distill_loss, info_nce
from icml26.papers.instemb.model import (
    POOLINGS,
    VIEWS,
    InstEmbLoss,
    InstEmbModel,
    InstEmbOutput,
    InstEmbSettings,
)
from icml26.papers.instemb.pooling import daap_pool
from icml26.papers.instemb.training import TrainLog, fit_instemb, train_instemb

#: The method as one call: ``fit_instemb(causal_lm, data, steps, tokenizer=…) -> InstEmbModel``.
METHOD = fit_instemb
#: The paper's baselines, drop-in alternatives to :data:`METHOD`.
BASELINES = {
    "input_last": input_last,
    "contrastive_last_token": contrastive_last_token,
    "instemb_last_token": instemb_last_token,
}

__all__ = [
    "ATTRIBUTES",
    "AttrWorld",
    "BASELINES",
    "Example",
    "INSTRUCTIONS",
    "InstEmbLoss",
    "InstEmbModel",
    "InstEmbOutput",
    "InstEmbSettings",
    "METHOD",
    "POOLINGS",
    "TrainLog",
    "VIEWS",
    "attrworld_tokenizer",
    "attrworld_vocabulary",
    "contrastive_last_token",
    "daap_pool",
    "distill_loss",
    "fit_instemb",
    "info_nce",
    "input_last",
    "inst_sts_pairs",
    "inst_sts_spearman",
    "instemb_last_token",
    "instruction_nmi",
    "instruction_sensitivity",
    "kmeans_nmi",
    "spearman_ceiling",
    "train_instemb",
]

"""revtx_twin: a PyTorch twin of the revtx engine's transformer.

``model`` is the engine's model (crates/revtx-engine/src/model/) in PyTorch, with its
greedy decoding; ``tasks`` draws the engine's batches, token for token; ``train`` is its
loss, optimisers, schedule and training step; ``weights`` reads the engine's trained
weights (a site's exported models, or a run's safetensors file). A model the engine
trained loads as it is::

    from revtx_twin import Alphabet, Transformer, greedy, load_export

    config, task, state = load_export("site/models", "reference")
    model = Transformer(config)
    model.load_state_dict(state)
    greedy(model, ["fgcabe"], Alphabet.of_model(task, model.cfg.vocab))  # ["ebacgf"]
"""

from .model import (
    CHAPTER,
    AttnOptions,
    ModelConfig,
    Transformer,
    attention,
    attention_of,
    generate,
    greedy,
    ids_to_letters,
    letters_to_ids,
)
from .tasks import Alphabet
from .weights import load_export, load_safetensors

__all__ = [
    "CHAPTER",
    "Alphabet",
    "AttnOptions",
    "ModelConfig",
    "Transformer",
    "attention",
    "attention_of",
    "generate",
    "greedy",
    "ids_to_letters",
    "letters_to_ids",
    "load_export",
    "load_safetensors",
]

# The template of every chapter's notebook (book.toml's `[notebook]`): Python in the
# "percent" format, `# %%` a code cell and `# %% [markdown]` a text cell, rendered with
# minijinja by `revtx-book build` into `chapter-N.ipynb` beside the chapter's page. Its
# context: `book`, `chapter` (title, number, page, url), `run` (id, seed, and config, the
# run's resolved configuration as JSON) and `modules` (the twin's files).

# %% [markdown]
# # {{ chapter.number }}{% if chapter.number %}: {% endif %}{{ chapter.title }}, in PyTorch
#
# This notebook trains the configuration of the chapter's `{{ run.id }}` run with the
# book's PyTorch twin of its engine, on the CPU, then decodes a few strings and plots the
# loss. {% if chapter.url %}The chapter is at <{{ chapter.url }}>.{% else %}It goes with
# `{{ chapter.page }}` of *{{ book.title }}*.{% endif %}
#
# The twin is the same model, data and optimiser as the engine that trained the book's
# runs, and the book's tests check that it agrees with the engine: the same greedy
# answers from the same weights, attention weights within 1e-5, and one training step
# within a stated tolerance. Its numbers will not equal the book's bit for bit. PyTorch's
# kernels add in another order than the engine's, and the twin starts from PyTorch's own
# random weights, so expect the same behaviour, not the same digits.

# %% [markdown]
# ## The twin
#
# Each of the next cells writes one file of the `{{ modules[0].package }}` package, so
# that the notebook needs nothing but PyTorch (and matplotlib for the plot). Read them
# top to bottom: the model, then the tasks that make the batches, then the training loop.

# %%
import os
os.makedirs("{{ modules[0].package }}", exist_ok=True)
{% for m in modules %}
# %%
%%writefile {{ m.package }}/{{ m.name }}
{{ m.code }}
{% endfor %}
# %% [markdown]
# ## The run
#
# The configuration of `{{ run.id }}`, as the engine read it: the model, the data, the
# training and the evaluation, each value that differs from the engine's default (the
# data's task is `reverse` unless it says otherwise). Change a value and run the cells
# below again.
# `REVTX_NOTEBOOK_STEPS` shortens the run (the book's tests run every notebook that way).

# %%
import json
config = json.loads("""{{ run.config }}""")
steps = int(os.environ.get("REVTX_NOTEBOOK_STEPS", config["train"]["steps"]))
print(config["model"])
task = config["data"].get("task", "reverse")
print(f"{task}, {steps} steps of {config['train']['batch_size']} strings")

# %%
import torch
from revtx_twin import Alphabet, greedy
from revtx_twin.train import train

torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
model, losses = train(config, seed={{ run.seed }}, steps=steps, log_every=max(1, steps // 10))

# %% [markdown]
# ## What it learned
#
# Greedy decoding, as the engine's evaluation does it: the prompt and the separator go
# in, and the most likely next token is appended until the answer is complete. The last
# strings are longer than any the model trained on.

# %%
alphabet = Alphabet.of_model(task, config["model"]["vocab"])
problems = config["eval"].get("decode") or ["fgcabe", "jihgfedcba"]
model.eval()
for prompt, answer in zip(problems, greedy(model, problems, alphabet)):
    print(f"{prompt:>16} -> {answer}")

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(range(1, len(losses) + 1), losses, linewidth=0.8)
ax.set_yscale("log")
ax.set_xlabel("step")
ax.set_ylabel("training loss")
ax.set_title("{{ run.id }}, seed {{ run.seed }}, in PyTorch")
plt.show()

# %% [markdown]
# ## Switch a head off
#
# The book's intervening runs zero a head's output and decode again (its chapter "What the
# heads do"). Here the same is done with a hook: the head's slice of the attention output,
# before the block's output projection, is set to zero. A head that matters changes the
# answers; a head whose work another can do changes little. (After a few steps of
# training, every head still matters little.)

# %%
def decoded_without(model, block, head, problems):
    """Greedy answers with head `head` of block `block` giving zero."""
    d_head = model.cfg.d_model // model.cfg.n_heads

    def zero_head(_module, inputs):
        y = inputs[0].clone()  # (batch, tokens, d_model): the heads side by side
        y[..., head * d_head:(head + 1) * d_head] = 0
        return (y,)

    handle = model.blocks[block].attn.out.register_forward_pre_hook(zero_head)
    try:
        with torch.no_grad():
            return greedy(model, problems, alphabet)
    finally:
        handle.remove()


for block in range(model.cfg.n_layers):
    for head in range(model.cfg.n_heads):
        answers = decoded_without(model, block, head, problems)
        print(f"block {block} head {head} off: " + ", ".join(answers))

# %% [markdown]
# ## Try it
#
# The chapter's exercises change one thing at a time. Here that is one value of `config`
# above: `config["model"]["position_encoding"] = "rope"`, `config["train"]["warmup"] = 100`,
# `config["model"]["norm"] = "post"`. Then run the training cell and the ones after it.

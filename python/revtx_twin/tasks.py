"""The engine's training data, in Python: the same random numbers, the same batches.

The engine does not draw its data from libtorch's generator but from a small generator
of its own (``crates/revtx-engine/src/rng.rs``): SplitMix64 expands the seed into the
state of a xoshiro256** generator. This module is that generator, and the batch code of
``data.rs`` and ``crates/revtx-spec/src/task.rs`` on top of it, line for line, so that
for the same seed and step the twin trains on exactly the engine's tokens and targets.

Python's integers have no fixed width, so every 64-bit operation is masked back to 64
bits by hand (``& MASK64``); that is all the Rust's ``wrapping_*`` calls do.

A sequence is a problem's prompt, a separator, the answer, then pads up to the model's
``positions``::

    position:  0 .. P-1   P     P+1 .. P+A    P+A+1 ..
    input:     prompt     |     answer        . . .
    target:    _ .. _     a0    a1 .. _       _ _ _      (target[t] = input[t+1])

``_`` is ``IGNORE``, a label the loss skips.
"""

from dataclasses import dataclass

import torch

MASK64 = (1 << 64) - 1
"""All 64 bits set: ``x & MASK64`` wraps ``x`` as a Rust ``u64`` would."""

IGNORE = -100
"""The target label that the loss ignores (shown as ``_``)."""

DATA_SEED = 0x5EED_DA7A
"""The training data's generator is seeded with ``seed ^ DATA_SEED`` (``train.rs``)."""

TASKS = ("reverse", "copy", "sort", "add", "recall")

DATA_DEFAULTS = {"task": "reverse", "letters": 10}
"""The keys of ``RunConfig["data"]`` that a config leaves out when they are default."""


def _rotl(x, k):
    """Rotates the 64-bit ``x`` left by ``k`` bits."""
    return ((x << k) | (x >> (64 - k))) & MASK64


class Rng:
    """xoshiro256** seeded by SplitMix64, as ``rng.rs`` (Blackman and Vigna)."""

    def __init__(self, seed):
        x = seed & MASK64
        state = []
        for _ in range(4):  # SplitMix64: four outputs become the four words of state
            x = (x + 0x9E37_79B9_7F4A_7C15) & MASK64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58_476D_1CE4_E5B9) & MASK64
            z = ((z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB) & MASK64
            state.append(z ^ (z >> 31))
        self.s = state

    def next_u64(self):
        """The next 64-bit output, and the state moved on one step."""
        s = self.s
        result = (_rotl((s[1] * 5) & MASK64, 7) * 9) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def range(self, lo, hi):
        """A uniform integer in ``lo..=hi`` (both included), without modulo bias.

        Lemire's method: the high 64 bits of ``r * n`` fall in ``0..n``; outputs above
        ``zone``, the largest multiple of ``n`` that fits in 64 bits, less one, are drawn
        again, so that every value has the same number of ``r`` mapping to it.
        """
        n = hi - lo + 1
        zone = MASK64 - (MASK64 - n + 1) % n
        while True:
            r = self.next_u64()
            if r <= zone:
                return lo + ((r * n) >> 64)


# The tasks (task.rs). A problem of size n is drawn as `symbols(n)` letter ids; its prompt
# is `prompt_len(n)` tokens, its answer `answer_len(n)`.


def symbols(task, n):
    """Letters drawn for a problem of size ``n``."""
    return {"add": 2 * n, "recall": 2 * n + 1}.get(task, n)


def size(task, n_symbols):
    """The size of a problem drawn as ``n_symbols`` letters (the inverse of ``symbols``)."""
    return n_symbols // 2 if task in ("add", "recall") else n_symbols


def prompt_len(task, n):
    """Tokens before the separator: ``add`` writes ``a+b``, ``recall`` its pairs and query."""
    return 2 * n + 1 if task in ("add", "recall") else n


def answer_len(task, n):
    """Tokens of the answer: a sum has one digit more than its terms; a recall one letter."""
    return {"add": n + 1, "recall": 1}.get(task, n)


def sequence_len(task, n):
    """Tokens a problem of size ``n`` occupies: prompt, separator, answer."""
    return prompt_len(task, n) + 1 + answer_len(task, n)


@dataclass(frozen=True)
class Alphabet:
    """A task over ``letters`` symbols: token ids ``0..letters``, then the separator, the
    pad and, under ``add``, the plus sign (the chapter's: ten letters, ``|`` = 10, ``.`` =
    11, vocabulary 12)."""

    task: str = "reverse"
    letters: int = 10

    @classmethod
    def of_model(cls, task, vocab):
        """The alphabet of a model trained on ``task`` with ``vocab`` tokens."""
        return cls(task, vocab - 2 - (task == "add"))

    @property
    def sep(self):
        return self.letters

    @property
    def pad(self):
        return self.letters + 1

    @property
    def plus(self):
        return self.letters + 2 if self.task == "add" else None

    @property
    def vocab(self):
        return self.letters + 2 + (self.task == "add")

    def prompt(self, s):
        """The prompt of problem ``s`` as tokens (``add``: the plus sign between its numbers)."""
        if self.task == "add":
            half = len(s) // 2
            return list(s[:half]) + [self.plus] + list(s[half:])
        return list(s)

    def answer(self, s):
        """The answer to problem ``s``, as letter ids."""
        if self.task == "reverse":
            return s[::-1]
        if self.task == "copy":
            return list(s)
        if self.task == "sort":
            return sorted(s)
        if self.task == "add":
            # Digits in base `letters`, most significant first; the sum is written least
            # significant digit first, then the final carry.
            half = len(s) // 2
            a, b = s[:half], s[half:]
            out, carry = [], 0
            for x, y in zip(reversed(a), reversed(b)):
                d = x + y + carry
                carry, digit = divmod(d, self.letters)
                out.append(digit)
            return out + [carry]
        if self.task == "recall":
            pairs, query = s[:-1], s[-1]
            for k in range(0, len(pairs), 2):
                if pairs[k] == query:
                    return [pairs[k + 1]]
            return [0]
        raise ValueError(f"unknown task {self.task!r}")

    def char(self, t):
        """A token's character, as the engine prints it (``a``.., ``|``, ``.``, ``_``)."""
        add = self.task == "add"
        if 0 <= t < self.letters:
            return chr((ord("0") if add else ord("a")) + t)
        if t == self.sep:
            return "=" if add else "|"
        if t == self.pad:
            return "."
        if t == self.plus:
            return "+"
        return "_"

    def text(self, ids):
        """Tokens as text, one character each."""
        return "".join(self.char(int(t)) for t in ids)

    def encode(self, text):
        """Text as tokens, one per character (the inverse of ``text``): a prompt such as
        ``fgca`` → [5, 6, 2, 0] (``12+34`` under add), or a whole sequence ``fgc|cgf``."""
        ids = {self.char(t): t for t in range(self.vocab)}
        try:
            return [ids[ch] for ch in text]
        except KeyError as e:
            raise ValueError(f"{e.args[0]!r} is not a token of the {self.task} task") from None

    def answer_tokens(self, prompt_tokens):
        """Tokens of the answer to a prompt of ``prompt_tokens`` tokens (task.rs)."""
        if self.task in ("reverse", "copy", "sort"):
            return prompt_tokens
        return answer_len(self.task, (prompt_tokens - 1) // 2)

    def render_row(self, row):
        """A row of tokens as the engine's result shows it: characters and spaces."""
        return " ".join(self.char(int(t)) for t in row)

    def problem_text(self, s):
        """A problem as a run block writes it: its prompt (``abc``, ``12+34``)."""
        return "".join(self.char(t) for t in self.prompt(s))


def alphabet_of(data_cfg):
    """The ``Alphabet`` of ``RunConfig["data"]`` (absent keys take their defaults)."""
    d = {**DATA_DEFAULTS, **data_cfg}
    if d["task"] not in TASKS:
        raise ValueError(f"unknown task {d['task']!r}")
    return Alphabet(d["task"], d["letters"])


# The batches (data.rs).


def draw(rng, alphabet, n):
    """One problem of size ``n``: letters uniform over the alphabet, except that recall's
    keys are distinct (a partial Fisher-Yates shuffle) and its query one of them."""

    def letter():
        return rng.range(0, alphabet.letters - 1)

    if alphabet.task == "recall":
        keys = list(range(alphabet.letters))
        for i in range(n):
            j = rng.range(i, alphabet.letters - 1)
            keys[i], keys[j] = keys[j], keys[i]
        s = []
        for k in keys[:n]:
            s += [k, letter()]  # the key, then its value (drawn in this order)
        s.append(keys[rng.range(0, n - 1)])
        return s
    return [letter() for _ in range(symbols(alphabet.task, n))]


def sample_problems(rng, alphabet, count, lo, hi):
    """``count`` problems, each of a size drawn uniformly in ``lo..=hi`` and then drawn."""
    problems = []
    for _ in range(count):
        n = rng.range(lo, hi)
        problems.append(draw(rng, alphabet, n))
    return problems


def encode(s, alphabet, seq_len, targets, offset):
    """Problem ``s`` as ``(input, target)`` rows of ``seq_len`` tokens from ``offset``.

    ``targets`` is ``"answer"`` (from the separator up to the answer's second-last token)
    or ``"all-positions"`` (every position whose next token is part of the sequence).
    """
    prompt, answer = alphabet.prompt(s), alphabet.answer(s)
    p = len(prompt)
    total = p + 1 + len(answer)
    if offset + total > seq_len:
        raise ValueError(f"a problem of {total} tokens at offset {offset} does not fit "
                         f"in {seq_len} positions")
    x = [alphabet.pad] * seq_len
    x[offset:offset + p] = prompt
    x[offset + p] = alphabet.sep
    x[offset + p + 1:offset + total] = answer
    if targets == "answer":
        first = offset + p
    elif targets == "all-positions":
        first = offset
    else:
        raise ValueError(f"unknown targets {targets!r}")
    y = [IGNORE] * seq_len
    last = offset + total - 1  # the answer's last token has no next token to predict
    y[first:last] = x[first + 1:last + 1]
    return x, y


@dataclass
class Batch:
    """A batch as ``data.rs`` draws it: the problems, and rows of ``seq_len`` tokens."""

    strings: list
    x: list
    y: list
    pad: int


def training_batch(rng, rows, lo, hi, alphabet, seq_len, targets, random_offset):
    """One training batch of ``rows`` problems of sizes ``lo..=hi``. Under
    ``random_offset`` each sequence starts at an offset drawn uniformly among those where
    it fits; the offsets are drawn after all the problems, one per row, in row order."""
    strings = sample_problems(rng, alphabet, rows, lo, hi)
    xs, ys = [], []
    for s in strings:
        offset = 0
        if random_offset:
            n = size(alphabet.task, len(s))
            offset = rng.range(0, seq_len - sequence_len(alphabet.task, n))
        x, y = encode(s, alphabet, seq_len, targets, offset)
        xs.append(x)
        ys.append(y)
    return Batch(strings, xs, ys, alphabet.pad)


def used_width(batch):
    """Columns up to and including the last non-pad token of any row (``train.rs``)."""
    width = 1
    for row in batch.x:
        real = [i for i, t in enumerate(row) if t != batch.pad]
        width = max(width, real[-1] + 1 if real else 1)
    return width


class TrainingData:
    """The training loop's stream of batches for one run and seed, as ``train.rs`` feeds
    them to the model: ``next()`` returns ``(x, y)``, two ``LongTensor`` of shape
    ``(batch_size, width)``.

    Under a causal mask with the softmax over keys, trailing pads cannot influence any
    earlier position and carry no target, so the engine cuts each batch after its last real
    token (``width`` below ``positions``); that changes no loss and no gradient. We cut
    where it cuts, so that the two compute on tensors of the same shape.
    """

    def __init__(self, run_config, seed):
        m, d, t = run_config["model"], run_config["data"], run_config["train"]
        self.rng = Rng(seed ^ DATA_SEED)
        self.alphabet = alphabet_of(d)
        self.rows = t["batch_size"]
        self.lengths = (d["min_len"], d["max_len"])
        self.seq_len = m["positions"]
        self.targets = d["targets"]
        self.random_offset = d["random_offset"]
        attn = m.get("attn", {})
        self.trim = attn.get("causal", True) and attn.get("softmax", "keys") == "keys"
        self.last = None  # the last `Batch` drawn, for inspection

    def batch(self):
        """The next ``Batch``, uncut."""
        self.last = training_batch(self.rng, self.rows, *self.lengths, self.alphabet,
                                   self.seq_len, self.targets, self.random_offset)
        return self.last

    def next(self):
        """The next batch's inputs and targets, cut as the engine cuts them."""
        b = self.batch()
        width = used_width(b) if self.trim else self.seq_len
        x = torch.tensor(b.x, dtype=torch.long)[:, :width]
        y = torch.tensor(b.y, dtype=torch.long)[:, :width]
        return x, y

"""Lesson: train a character-level GPT on any text, checkpoint it, resume it, and sample from it.

A decoder-only Transformer (transformer.GPT) learns to continue a text one character at a
time.  The causal language-model loss (transformer.next_token_loss):

    logits = GPT(ids)                              (B, n, vocab): position t predicts ids[t + 1]
    L = cross_entropy(logits[:, :-1], ids[:, 1:])  starts near ln(vocab) (a uniform guess)

The text: --corpus poem (24 lines, the tour's quick run), --corpus stdlib (every docstring of
this Python's standard library, ~2 MB, read from the running interpreter: no download), or
--text FILE (any UTF-8 text).  Its last --val-fraction is held out: every --eval-every steps
the validation loss is printed next to the unigram baseline, the loss of a model that only
counts characters.  A model that does not beat it has learned nothing about context.

Presets: --preset tiny (the default: 100k parameters, seconds on a CPU) and --preset gpu
(d_model 384, 6 layers, context 256, batch 64, the stdlib corpus: 10.7M parameters, for a
GPU).  Options given with a preset override its values (--help shows the preset's values).

Training uses AdamW with a warmup + cosine learning-rate schedule and gradient clipping, the
usual Transformer recipe.  Inside a step nothing comes back to the host: the batch goes to the
device in one copy, the clipping stays on the device, and the losses are fetched once every
--log-every steps, which is also where a NaN/inf loss is caught.  Every --ckpt-every steps the
model, optimizer, schedule and loss history go to one .npz file (mt.save: atomic, never
pickled), after its steps' losses and the weights were checked finite; --resume continues from
it.  Batches are a function of (seed, step), so a resumed run computes exactly the losses the
uninterrupted run would have.

Then it writes, from the prompt, at several temperatures (the attention article §2.4.2):
T = 0.2 "extremely sharp, close to argmax", 0.7 "moderate", 1.0 "the standard
softmax", 1.5 "smooth, diverse"; and greedily (always the most likely character).

    python -m demos.train_gpt                                  # the short CPU run of the tour
    python -m demos.train_gpt --corpus stdlib --steps 1000     # Python's docstrings, on the CPU
    python -m demos.train_gpt --preset gpu --device auto       # a run worth a GPU
    python -m demos.train_gpt --text notes.txt --steps 2000    # your own text
    python -m demos.train_gpt --steps 2000 --resume            # continue the last run
    python -m demos.train_gpt --full                           # the tour's run from 5 seeds, for the verdicts
"""
import argparse
import hashlib
import math
import os
import random
import signal
import sys
import tempfile
import threading
import time

import numpy as np

import microtensor as mt
from microtensor import i18n, optim
from microtensor.i18n import N_, _
from transformer import GPT, generate, next_token_loss

from . import budget, claims
from . import corpus as texts
from .report import (RUNS, Diverged, Interrupted, Option, Refused, check_learned, check_loss, command_line, run_lesson,
                     save_plot, table, window_means, wrote)

# the articles' sections this lesson checks (demos/articles.py)
SECTIONS = [('architecture', '2.8'), ('architecture', '2.9.1'), ('attention', '2.4.2')]

TEMPERATURES = (0.2, 0.7, 1.0, 1.5)
PRESETS = {
    'tiny': dict(corpus='poem', steps=300, batch_size=16, context=64, d_model=64, n_layers=2, n_heads=4, lr=3e-3,
                 warmup=30, val_fraction=0.2, log_every=30, eval_every=100, eval_batches=4, ckpt_every=100),
    'gpu': dict(corpus='stdlib', steps=2000, batch_size=64, context=256, d_model=384, n_layers=6, n_heads=6,
                lr=1e-3, warmup=100, val_fraction=0.1, log_every=50, eval_every=250, eval_batches=8, ckpt_every=500),
}
HELP = dict(steps=N_('training steps'), batch_size=N_('windows per batch'),
            context=N_("characters per window (the model's max_len)"), d_model=N_('model width'),
            n_layers=N_('decoder layers'), n_heads=N_('attention heads (divide d_model)'), lr=N_('peak learning rate'),
            warmup=(N_('learning-rate warmup steps (at most steps - 1)'), 0),
            val_fraction=(N_('the share of the text held out for validation (0: none)'), 0),
            log_every=N_('steps between progress lines (the only time losses come to the host)'),
            eval_every=N_('steps between validation passes'), eval_batches=N_('batches in a validation pass'),
            ckpt_every=N_('steps between checkpoints'), seed=N_('random seed (weights and batches)'),
            sample_length=(N_('characters to write at each temperature after training (0: none)'), 0))
# what a resumed run must share with the checkpoint's (the others may change between runs)
RUN_KEYS = ('batch_size', 'context', 'd_model', 'n_layers', 'n_heads', 'lr', 'warmup', 'val_fraction', 'seed')
PROMPTS = {'poem': 'Twinkle', 'stdlib': 'Return the '}
TRIES = (N_('a lower --lr (say 10x smaller)'), N_('a longer --warmup'))
FULL = dict(seeds=5)  # --full: the articles' verdicts over 5 seeds


class Characters:
    """The tokenizer: one id per distinct character of the text."""

    def __init__(self, vocab):
        self.vocab = vocab
        self.ids = {c: i for i, c in enumerate(vocab)}

    @classmethod
    def of(cls, text):
        return cls(''.join(sorted(set(text))))

    def encode(self, text):
        unknown = sorted(set(text) - set(self.ids))
        if unknown:
            raise ValueError(_("train_gpt: the characters {unknown} are not in the training text's vocabulary").format(
                unknown=unknown))
        return [self.ids[c] for c in text]

    def decode(self, ids):
        return ''.join(self.vocab[i] for i in ids)


def batch_at(data, step, batch_size, context, seed):
    """(batch_size, context) windows of `data` (a 1-D numpy id array), chosen by (seed, step) alone."""
    rng = random.Random(seed * 1_000_003 + step)
    starts = np.array([rng.randrange(len(data) - context + 1) for _ in range(batch_size)])
    return data[starts[:, None] + np.arange(context)]


def validation_batches(data, context, batch_size, n_batches, device):
    """Fixed windows spread evenly over the validation ids, as tensors on `device` (moved once)."""
    n = min(n_batches * batch_size, len(data) - context + 1)
    starts = np.linspace(0, len(data) - context, n).round().astype(np.int64)
    windows = data[starts[:, None] + np.arange(context)]
    return [mt.tensor(windows[i:i + batch_size], device=device) for i in range(0, n, batch_size)]


def validation_loss(model, batches):
    """Mean next-token loss over `batches` (no gradients; one number comes to the host)."""
    model.eval()
    with mt.no_grad():
        total = sum(next_token_loss(model(ids), ids) * len(ids) for ids in batches)
    model.train()
    return total.item() / sum(len(ids) for ids in batches)


def clip_gradients(parameters, max_norm):
    """Scale all gradients together so that their global norm is at most max_norm, on the device.

        total = ||(g_1, ..., g_n)||,   g_i <- g_i * min(1, max_norm / (total + 1e-6))

    The rule of nn.utils.clip_grad_norm_, which returns the norm as a Python float: a host
    sync in every step.  Here the norm stays a tensor, so the GPU never waits for the host.
    """
    grads = [p for p in parameters if p.grad is not None]
    with mt.no_grad():
        total = mt.stack([(p.grad * p.grad).sum() for p in grads]).sum().sqrt()
        scale = (max_norm / (total + 1e-6)).clip(max=1.0)
        for p in grads:
            p.grad = p.grad * scale


def check_weights(parameters, step):
    """Raise Diverged unless every weight is finite (one number comes to the host)."""
    with mt.no_grad():
        finite = mt.stack([(p.abs() < math.inf).sum() for p in parameters]).sum().item()
    if finite != sum(p.numel() for p in parameters):
        tries = _(', or ').join(_(t) for t in TRIES)
        raise Diverged(_("train_gpt: a weight became nan or inf in step {step} (its loss was still finite), so "
                         "training stopped before writing the checkpoint. Try {tries}.").format(step=step, tries=tries))


def text_problem(text, context, val_fraction, prompt=None):
    """Why `text` cannot be trained on with these settings, or None."""
    train, val = texts.split(text, val_fraction)
    if len(train) < context:
        return (_("the training part of the text has {n} characters; a --context of {context} needs at least that "
                  "many (use a smaller --context, a smaller --val-fraction or a longer text)") if val else
                _("the training part of the text has {n} characters; a --context of {context} needs at least that "
                  "many (use a smaller --context or a longer text)")).format(n=len(train), context=context)
    if val and len(val) < context:
        return _("the validation part (--val-fraction {val_fraction}) has {n} characters, fewer than --context "
                 "{context}: raise --val-fraction, lower --context, or use --val-fraction 0").format(
            val_fraction=val_fraction, n=len(val), context=context)
    return prompt_problem(prompt, text)


def prompt_problem(prompt, text):
    """Why the samples cannot start from `prompt` (None: the default), or None."""
    if prompt == '':
        return _("the prompt is empty: the samples continue it, so give at least one character (or leave --prompt "
                 "out)")
    unknown = sorted(set(prompt or '') - set(text))
    return _("the prompt holds characters the text never uses: {unknown}").format(unknown=unknown) if unknown else None


def train(text=texts.POEM, out=os.path.join(RUNS, 'train_gpt'), device='cpu', resume=False, stop_after=None,
          preset='tiny', **options):
    """Train (or resume) a GPT on `text`; returns a dict: model, chars, losses (one per step), val
    ([step, loss] pairs), baseline (the unigram loss), memory ([step, bytes] on cuda), step, seconds,
    tokens_per_s (median over the log windows), checkpoint.

    options: the keys of PRESETS[preset] (but corpus) and seed, overriding the preset's values.
    Checkpoints go to <out>/ckpt.npz every ckpt_every steps and at the end; stop_after=n stops
    after step n as if interrupted (resume=True continues).
    """
    config = {k: v for k, v in PRESETS[preset].items() if k != 'corpus'}
    unknown = sorted(set(options) - set(config) - {'seed'})
    if unknown:
        raise TypeError(f"train_gpt.train: unknown options {unknown}; known: {sorted(config)} and seed")
    config.update({'seed': 0, **options})
    steps, context = config['steps'], config['context']
    problem = text_problem(text, context, config['val_fraction'])
    if problem:
        raise ValueError(f"train_gpt: {problem}")
    chars = Characters.of(text)
    train_text, val_text = texts.split(text, config['val_fraction'])
    data = np.array(chars.encode(train_text), dtype=np.int64)  # on the host: a batch is copied once per step
    val_batches = validation_batches(np.array(chars.encode(val_text), dtype=np.int64), context,
                                     config['batch_size'], config['eval_batches'], device) if val_text else []
    mt.manual_seed(config['seed'])
    model = build_model(len(chars.vocab), config).to(device)
    parameters = model.parameters()
    opt = optim.AdamW(parameters, lr=config['lr'], weight_decay=0.01)
    schedule = optim.WarmupCosine(opt, warmup_steps=min(config['warmup'], steps - 1), total_steps=steps)
    path = os.path.join(out, 'ckpt.npz')
    text_id = {'sha256': hashlib.sha256(text.encode()).hexdigest(),   # what the checkpoint says of its text
               'about': f"{len(text):,} characters beginning {text[:20]!r}"}
    history = {'losses': [], 'val': [], 'memory': []}
    start = 0
    if resume and os.path.exists(path):
        start = _restore(path, device, config, text_id, model, opt, schedule, history)
        print(_("resumed from {path} at step {step}").format(path=path, step=start))
        if stop_after is not None and stop_after <= start:
            raise Refused(_("train_gpt: --stop-after {stop_after}, but {path} is already at step {step}: nothing "
                            "would be trained. Give a --stop-after above {step}, or leave it out to train on to "
                            "step {steps}").format(stop_after=stop_after, path=path, step=start, steps=steps))
        if start >= steps:
            print(_("the checkpoint is already at step {step}, --steps is {steps}: nothing to train (a larger "
                    "--steps trains on)").format(step=start, steps=steps))
    elif resume:
        print(_("no checkpoint at {path} yet: starting a new run").format(path=path))
    elif os.path.exists(path):
        print(_("starting a new run: {path} will be overwritten (--resume continues it instead)").format(path=path))
    os.makedirs(out, exist_ok=True)
    baseline = texts.unigram_loss(train_text, val_text)

    last = steps if stop_after is None else min(steps, stop_after)
    progress = Progress(start, last, steps)
    tokens_per_step, rates = config['batch_size'] * context, []
    pending, clock = [], time.perf_counter()  # losses of the steps since the last log, still on the device
    began = clock
    done, saved = start, start if start > 0 else None  # saved: the step of the file at `path`, if this run's
    updating = False  # True while the optimizer and the schedule take a step: the state is then half old, half new

    def keep(upto):
        """Bring the losses of the steps up to `upto` to the host (checked finite), then the weights
        (checked finite) and everything a resumed run needs to <out>/ckpt.npz."""
        nonlocal pending, saved
        window = mt.stack(pending).tolist() if pending else []
        checked = [check_loss(value, upto - len(window) + i + 1, 'train_gpt', TRIES) for i, value in enumerate(window)]
        history['losses'].extend(checked)  # (one call: a second Ctrl-C cannot leave it half done)
        pending = []
        check_weights(parameters, upto)
        mt.save({'model': model.state_dict(), 'optim': opt.state_dict(), 'schedule': schedule.state_dict(),
                 'step': upto, 'config': config, 'vocab': chars.vocab, 'text_sha256': text_id['sha256'],
                 'text_about': text_id['about'], **history},
                path)
        saved = upto
        wrote(path, 'checkpoint')
        return window

    try:
        with StopAfterThisStep() as ctrl_c:
            for step in range(start, last):
                ids = mt.tensor(batch_at(data, step, config['batch_size'], context, config['seed']), device=device)
                loss = next_token_loss(model(ids), ids)
                opt.zero_grad()
                loss.backward()
                clip_gradients(parameters, max_norm=1.0)
                updating = True
                opt.step()
                schedule.step()
                done, updating = step + 1, False
                pending.append(loss.detach())
                progress.advance()
                stop = ctrl_c.pressed  # the step is whole: it ends as usual, is kept, and the run stops
                evaluate = val_batches and (done % config['eval_every'] == 0 or done == last)
                save = done % config['ckpt_every'] == 0 or done == last or stop
                if not (done % config['log_every'] == 0 or evaluate or save):
                    continue
                if evaluate:  # (before the save, which keeps the validation losses too)
                    history['val'].append([done, validation_loss(model, val_batches)])
                window = keep(done) if save else None
                if window is None:  # the host copy: this window's losses, checked before anything is kept
                    window = mt.stack(pending).tolist()
                    for i, value in enumerate(window):
                        history['losses'].append(check_loss(value, done - len(window) + i + 1, 'train_gpt', TRIES))
                    pending = []
                rates.append(len(window) * tokens_per_step / (time.perf_counter() - clock))
                memory = mt.cuda.memory_pool_bytes(device)
                if memory is not None:
                    history['memory'].append([done, memory])
                progress.log(done, sum(window) / len(window), schedule.lr, rates[-1], memory)
                if evaluate:
                    progress.note(_("step {step}: validation loss {loss:.4f} (unigram baseline {baseline:.4f})")
                                  .format(step=done, loss=history['val'][-1][1], baseline=baseline))
                if stop:
                    raise KeyboardInterrupt
                clock = time.perf_counter()
    except KeyboardInterrupt:  # one line from run_lesson instead of a traceback; the checkpoint read back
        progress.close()
        if not updating and done > start and saved != done:  # a whole step: keep the work done up to it
            keep(done)
        checkpoint = (path, mt.load(path)['step']) if saved is not None else None
        first = min(last, (done // config['ckpt_every'] + 1) * config['ckpt_every'])
        raise Interrupted(done, steps, checkpoint, first) from None
    progress.close()
    if last < steps:
        print(_("stopped at step {step}; continue with --resume").format(step=last))
    return {'model': model, 'chars': chars, 'step': max(start, last), 'seconds': time.perf_counter() - began,
            'tokens_per_s': float(np.median(rates)) if rates else None, 'baseline': baseline, 'checkpoint': path,
            'config': config, **history}


class StopAfterThisStep:
    """Ctrl-C while training: the step under way finishes, then the run stops and keeps it (.pressed
    turns True; the loop stops after its step).  A second Ctrl-C stops at once.  Outside the main
    thread (where Python cannot take the signal) Ctrl-C stops at once, as usual."""

    def __enter__(self):
        self.pressed, self.installed = False, threading.current_thread() is threading.main_thread()
        if self.installed:
            self.previous = signal.signal(signal.SIGINT, self._press)
        return self

    def _press(self, signum, frame):
        if self.pressed:
            raise KeyboardInterrupt
        self.pressed = True  # (no line here: run_lesson prints one, once the step is kept)

    def __exit__(self, *exception):
        if self.installed:  # (None: a handler not set from Python; the default one is Python's KeyboardInterrupt)
            signal.signal(signal.SIGINT, signal.default_int_handler if self.previous is None else self.previous)


def build_model(vocab_size, config):
    """The GPT a run's config describes (the sizes of PRESETS; context is its max_len)."""
    return GPT(vocab_size, d_model=config['d_model'], n_layers=config['n_layers'], n_heads=config['n_heads'],
               max_len=config['context'])


def load_checkpoint(path, device='cpu'):
    """(model, chars): the trained GPT of a train_gpt checkpoint (in eval mode) and its characters,
    in one call; chars.encode(text) gives ids, chars.decode(ids) text.

        model, chars = load_checkpoint('runs/train_gpt/ckpt.npz')
        ids = generate(model, mt.tensor(chars.encode('Twinkle')), 40, temperature=0.7)
        print(chars.decode(ids.tolist()))

    A damaged file is a mt.CheckpointError; another kind of checkpoint a ValueError naming what it lacks.
    """
    ckpt = mt.load(path, device=device)
    missing = [k for k in ('model', 'config', 'vocab') if not isinstance(ckpt, dict) or k not in ckpt]
    if missing:
        raise ValueError(_("train_gpt.load_checkpoint: {path} is not a train_gpt checkpoint (it has no {missing}); "
                           "give the ckpt.npz of a train_gpt run (runs/train_gpt/ckpt.npz by default)").format(
            path=path, missing=missing))
    model = build_model(len(ckpt['vocab']), ckpt['config']).to(device)
    model.load_state_dict(ckpt['model'])
    return model.eval(), Characters(ckpt['vocab'])


def sample_checkpoint(path, prompt=None, length=160, device='cpu'):
    """Print continuations of `prompt` by the checkpoint's model at each temperature, and greedily;
    returns them ({label: text}).  prompt=None: a new line (or the vocabulary's first character)."""
    model, chars = load_checkpoint(path, device)
    if prompt is None:
        prompt = '\n' if '\n' in chars.ids else chars.vocab[0]
    step = mt.load(path)['step']
    print(_("{path}: a GPT of {parameters:,} parameters after {step} steps, {vocab} characters").format(
        path=path, parameters=model.num_parameters(), step=step, vocab=len(chars.vocab)))
    print(_("\nContinuations of {prompt}:").format(prompt=repr(prompt)))
    out = samples(model, chars, prompt, length)
    for label, text in out.items():
        print(f"--- {shown_label(label)}\n{text}")
    return out


def _restore(path, device, config, text_id, model, opt, schedule, history):
    """Load the checkpoint into model, opt, schedule and history; its step.  The settings must
    match, except steps and how often to log/evaluate/save: a longer run continues along the
    longer run's schedule.  Refused, saying why, for any other checkpoint."""
    try:
        ckpt = mt.load(path, device=device)
    except mt.CheckpointError as error:
        if error.version == 2:  # saved before nn.Linear took PyTorch's layout; a GPT has no nn.Linear
            raise Refused(_("train_gpt: cannot resume: {path} is in checkpoint format version 2, from before "
                            "nn.Linear took PyTorch's (out, in) layout. A train_gpt model has no nn.Linear, so the "
                            "conversion changes no weight: run python -c \"import microtensor as mt; "
                            "mt.upgrade_checkpoint('{path}', None)\" once, then --resume").format(path=path)) from None
        raise Refused(_("train_gpt: cannot resume: {error}. Start a new run without --resume, or with another "
                        "--out").format(error=error)) from None
    missing = [k for k in ('model', 'optim', 'schedule', 'step', 'config', 'text_sha256', *history)
               if not isinstance(ckpt, dict) or k not in ckpt]
    if missing:
        holds = (_("its keys are {keys}").format(keys=sorted(ckpt)) if isinstance(ckpt, dict) else
                 _("it holds a {kind}").format(kind=type(ckpt).__name__))
        raise Refused(_("train_gpt: {path} is not a train_gpt checkpoint ({holds}; a train_gpt checkpoint also "
                        "has {missing}). Give --out the folder of a train_gpt run, or start a new run without "
                        "--resume").format(path=path, holds=holds, missing=missing))
    saved = ckpt['config']
    different = [(f"--{k.replace('_', '-')}", saved.get(k), config[k]) for k in RUN_KEYS if saved.get(k) != config[k]]
    if ckpt['text_sha256'] != text_id['sha256']:
        different.append(('the text', ckpt.get('text_about', 'another text'), text_id['about']))
    if different:
        listed = '; '.join(_("{name}: {was} in the checkpoint, {now} now").format(
            name=_('the text') if name == 'the text' else name, was=was, now=now) for name, was, now in different)
        options = ' '.join(f"{name} {was}" for name, was, now in different if name.startswith('--'))
        text = [_('its text, the same --corpus or --text')] if different[-1][0] == 'the text' else []
        theirs = _(' and ').join(([options] if options else []) + text)
        raise Refused(_("train_gpt: {path} was made with other settings. {listed}. To resume it, give the "
                        "checkpoint's settings ({theirs}); or start a new run without --resume, or with another "
                        "--out").format(path=path, listed=listed, theirs=theirs))
    if saved['steps'] != config['steps']:
        print(_("the checkpoint's run was {was} steps long; the schedule now runs to {now}").format(
            was=saved['steps'], now=config['steps']))
    model.load_state_dict(ckpt['model'])
    opt.load_state_dict(ckpt['optim'])
    schedule.load_state_dict(ckpt['schedule'])
    for key in history:
        history[key] = [list(v) if isinstance(v, (list, tuple)) else v for v in ckpt[key]]
    return ckpt['step']


class Progress:
    """A tqdm bar (when tqdm is installed and stderr is a terminal) or one plain line per log."""

    def __init__(self, start, stop, total):
        self.total, self.bar = total, None
        if sys.stderr.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self.bar = tqdm(total=stop, initial=start, desc='training', unit='step')

    def advance(self):
        if self.bar is not None:
            self.bar.update(1)

    def log(self, step, loss, lr, tokens_per_s, memory):
        fields = {_('loss'): f"{loss:.4f}", 'lr': f"{lr:.2e}", 'tok/s': f"{tokens_per_s:,.0f}"}
        if memory is not None:  # cupy's pool: flat from the first steps on, or something leaks
            fields['pool'] = f"{memory / 2**20:,.0f} MiB"
        if self.bar is not None:
            self.bar.set_postfix(fields, refresh=False)
        else:
            print(_("step {step:5d}/{total}  {fields}").format(
                step=step, total=self.total, fields='  '.join(f"{k} {v}" for k, v in fields.items())), flush=True)

    def note(self, line):
        (self.bar.write if self.bar is not None else print)(line)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def plot_losses(result, name, folder):
    """Training loss per step and validation loss, with the unigram baseline; <folder>/loss.png or None."""
    def draw(ax):
        ax.plot(range(1, len(result['losses']) + 1), result['losses'], lw=0.8, label=_('training loss'))
        if result['val']:
            ax.plot(*zip(*result['val']), 'o-', label=_('validation loss'))
        ax.axhline(result['baseline'], ls='--', color='gray', label=_('unigram baseline (counting characters)'))
        ax.set(xlabel=_('step'), ylabel=_('cross-entropy (nats per character)'))
        ax.legend()
    return save_plot('loss', draw, _("train_gpt on {name}").format(name=name), folder)


def validation_summary(val, baseline):
    """What the validation losses ([step, loss] pairs) say, against the unigram baseline."""
    step, loss = val[-1]
    text = (_("validation loss at step {step}: {loss:.4f} (below the baseline)") if loss < baseline else
            _("validation loss at step {step}: {loss:.4f} (not below the baseline)")).format(step=step, loss=loss)
    best_step, best = min(val, key=lambda v: v[1])
    if loss > best + 0.05:
        text += _("\nIt was lowest at step {step} ({best:.4f}): since then the model has been memorising its "
                  "training text instead of learning what carries over to new text (overfitting; a longer text "
                  "such as --corpus stdlib helps)").format(step=best_step, best=best)
    return text


def samples(model, chars, prompt='Twinkle', length=160, temperatures=TEMPERATURES, seed=0):
    """{label: text} continuations of `prompt`: one per temperature, and greedy."""
    ids = mt.tensor(chars.encode(prompt), dtype='int64', device=model.parameters()[0].device)
    out = {f"T = {T}": chars.decode(continue_text(model, ids, length, temperature=T, seed=seed).tolist())
           for T in temperatures}
    out['greedy'] = chars.decode(continue_text(model, ids, length, greedy=True).tolist())
    return out


def shown_label(label):
    """A samples() label as printed: 'T = 0.2' stays a formula in every language, 'greedy' is a word."""
    return _('greedy') if label == 'greedy' else label


def continue_text(model, ids, length, seed=None, **sampling):
    """ids (T,) followed by `length` generated ids.  The learned position table ends at max_len, so
    a long text is written in pieces, each conditioned on the last max_len / 2 ids (KV cache within
    a piece)."""
    window = model.max_len // 2
    while length > 0:
        context = ids[-window:]
        n = min(length, model.max_len - len(context) + 1)
        ids = mt.concatenate([ids[:-len(context)], generate(model, context, n, seed=seed, **sampling)])
        length, seed = length - n, None  # seed once: the pieces continue one random stream
    return ids


def default_prompt(corpus, text_file, text):
    return PROMPTS[corpus] if text_file is None else text.lstrip().split('\n', 1)[0][:10]


def run(preset='tiny', corpus=None, text_file=None, out=os.path.join(RUNS, 'train_gpt'), device='cpu', resume=False,
        stop_after=None, prompt=None, sample_length=160, fused=True, sample=None, seeds=1, full=False, **options):
    """Load the text (corpus: 'poem' or 'stdlib', default the preset's; text_file: a UTF-8 file),
    train on it (options: see train; fused=False: with the textbook ops instead of the fused
    layer's), print the losses, plot them and sample.  sample: a checkpoint to sample from
    instead, without training.  seeds (full: FULL['seeds']): the verdicts count that many trainings,
    seed, seed + 1, ... (the printout is the first's; the others' checkpoints go to a scratch folder)."""
    seeds = FULL['seeds'] if full else seeds
    if sample is not None:
        return sample_checkpoint(sample, prompt, sample_length, device)
    corpus = corpus or PRESETS[preset]['corpus']
    text, name = texts.load(corpus, text_file)
    prompt = default_prompt(corpus, text_file, text) if prompt is None else prompt
    problem = prompt_problem(prompt, text)
    if problem:  # found now, not after the training
        raise ValueError(f"train_gpt: {problem}")
    with mt.fused(fused):  # the same numbers, faster (mt.fused: the fused layer, microtensor/fused/)
        result = train(text, out, device, resume, stop_after, preset, **options)
    model, chars, losses, config = result['model'], result['chars'], result['losses'], result['config']
    train_text, val_text = texts.split(text, config['val_fraction'])
    print(_("\n{name}: {train:,} training and {val:,} validation characters; vocabulary of {vocab} (a uniform "
            "guess scores ln {vocab} = {uniform:.2f})").format(name=i18n.in_language(name), train=len(train_text), val=len(val_text),
                                                                vocab=len(chars.vocab),
                                                                uniform=math.log(len(chars.vocab))))
    print(_("{parameters:,} parameters on {device}; checkpoint: {checkpoint}").format(
        parameters=model.num_parameters(), device=device, checkpoint=result['checkpoint']))
    print((_("unigram baseline (a model that only counts characters): {baseline:.4f} nats per character on the "
             "validation text") if val_text else
           _("unigram baseline (a model that only counts characters): {baseline:.4f} nats per character on the "
             "training text")).format(baseline=result['baseline']))
    if result['val']:
        print(validation_summary(result['val'], result['baseline']))
    print(table([_('steps'), _('mean training loss')], window_means(losses)))
    check_learned(losses, 'train_gpt', rose=TRIES, flat=(N_('more --steps'), N_('a higher --lr')))
    plot_losses(result, i18n.in_language(name), out)
    written = samples(model, chars, prompt, sample_length) if sample_length else {}
    if written:
        print(_("\nContinuations of {prompt}:").format(prompt=repr(prompt)))
        for label, sample in written.items():
            print(f"--- {shown_label(label)}\n{sample}")
    if result['val']:
        runs = [_verdict_figures(result, written, prompt)]
        for seed in range(result['config']['seed'] + 1, result['config']['seed'] + seeds):
            with tempfile.TemporaryDirectory() as scratch, mt.fused(fused):
                again = train(text, scratch, device, False, stop_after, preset, **{**options, 'seed': seed})
            runs.append(_verdict_figures(again, samples(again['model'], chars, prompt, sample_length)
                                         if sample_length else {}, prompt))
        if seeds > 1:
            print(table([_('seed'), _('best validation loss'), _('T = 0.2 follows greedy'), _('T = 1.5 follows greedy')],
                        [[result['config']['seed'] + i, r['best'], r.get('T = 0.2', '-'), r.get('T = 1.5', '-')]
                         for i, r in enumerate(runs)], fmt='.4f'))
        _record(runs, result['baseline'], written, name, corpus)
    return result


def _common_prefix(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _verdict_figures(result, written, prompt):
    """What the verdicts count in one run: {'best', 'step' (of the best validation loss), 'below' (it beats the
    unigram baseline), 'continued' (samples that continue the prompt), and 'T = 0.2', 'T = 1.5': characters each
    follows the greedy continuation}."""
    best_step, best = min(result['val'], key=lambda v: v[1])
    figures = {'best': best, 'step': best_step, 'below': best < result['baseline'],
               'continued': sum(sample.startswith(prompt) and len(sample) > len(prompt) for sample in written.values())}
    if {'T = 0.2', 'T = 1.5', 'greedy'} <= set(written):
        figures.update({label: _common_prefix(written[label], written['greedy']) - len(prompt)
                        for label in ('T = 0.2', 'T = 1.5')})
    return figures


def _record(runs, baseline, written, name, corpus):
    """The verdicts on the articles' decoder-only and temperature claims (§2.8, §2.9.1, §2.4.2) from these runs
    (_verdict_figures of each seed, the first the printed one)."""
    n = len(runs)
    depends = N_('the Python version (the stdlib corpus is its docstrings)') if corpus == 'stdlib' else None
    below = sum(r['below'] for r in runs)
    best = claims.between([r['best'] for r in runs])
    claims.record('architecture', '2.8', 'Decoder-only 因果掩码，只看前面 CLM（预测下一个 token）',
                  'holds' if below == n else 'partly',
                  N_("the GPT (causal mask, next-token loss) learns {name}: validation loss {best} at best against "
                     "the unigram baseline {baseline:.2f} (below it in {below} of {n} seeds)"),
                  N_('the validation lines (--full: the table "seed, best validation loss, ...")'), depends_on=depends,
                  seeds=claims.seeds_note(n), name=name, best=best, baseline=baseline, below=below, n=n)
    if 'T = 0.2' in runs[0]:
        sharper = sum(r['T = 0.2'] > r['T = 1.5'] for r in runs)
        claims.record('attention', '2.4.2', ['T = 0.2 极度尖锐，接近 Argmax', 'T = 1.5 平滑，多样性高'],
                      'holds' if sharper == n else 'partly',
                      N_("the GPT's T = 0.2 continuation follows the greedy (argmax) one for {low} characters, "
                         "T = 1.5's for {high} (T = 0.2 follows it longer in {sharper} of {n} seeds)"),
                      N_('the continuations "--- T = 0.2", "--- T = 1.5", "--- greedy" (--full: the table "seed, '
                         '...")'),
                      depends_on=depends, seeds=claims.seeds_note(n), low=claims.between([r['T = 0.2'] for r in runs], 'd'),
                      high=claims.between([r['T = 1.5'] for r in runs], 'd'), sharper=sharper, n=n)
    claims.record('architecture', '2.9.1', '都能统一表达成「续写」这一件事', 'holds' if below == n else 'partly',
                  N_("for what a lesson can show: one loss, next-token cross-entropy at every position, trains the "
                     "GPT on {name} (validation loss {best} at best, step {step}, against the unigram baseline "
                     "{baseline:.2f}; below it in {below} of {n} seeds), and {continued} of {samples} samples "
                     "continue the prompt") if written else
                  N_("for what a lesson can show: one loss, next-token cross-entropy at every position, trains the "
                     "GPT on {name} (validation loss {best} at best, step {step}, against the unigram baseline "
                     "{baseline:.2f}; below it in {below} of {n} seeds)"),
                  N_('the validation lines and the continuations'), depends_on=depends, seeds=claims.seeds_note(n),
                  name=name, best=best, step=claims.between([r['step'] for r in runs], 'd'), baseline=baseline,
                  below=below, n=n, continued=claims.between([r['continued'] for r in runs], 'd'), samples=len(written))


def main(argv=None):
    preset = _preset(argv)
    defaults = {**PRESETS[preset], 'seed': 0, 'sample_length': 160}
    corpus = defaults.pop('corpus')
    options = {name: Option(default, *((HELP[name],) if isinstance(HELP[name], str) else HELP[name]))
               for name, default in defaults.items()}

    def extra(parser):
        parser.add_argument('--preset', choices=list(PRESETS), default='tiny',
                            help=_('tiny: seconds on a CPU; gpu: d_model 384, 6 layers, context 256, batch 64, the '
                                   'stdlib corpus (use with --device auto). The options below show its values.'))
        source = parser.add_mutually_exclusive_group()
        source.add_argument('--corpus', choices=texts.CORPORA,
                            help=_("a built-in text: the poem, or the docstrings of this Python's standard library "
                                   "(default: the preset's, {corpus})").format(corpus=corpus))
        source.add_argument('--text', dest='text_file', metavar='FILE', help=_('train on this UTF-8 text file'))
        parser.add_argument('--resume', action='store_true', help=_('continue from <out>/ckpt.npz'))
        parser.add_argument('--out', default=os.path.join(RUNS, 'train_gpt'),
                            help=_('folder for the checkpoint and plot'))
        parser.add_argument('--stop-after', type=int, metavar='N',
                            help=_('stop after step N, as if interrupted (then --resume)'))
        parser.add_argument('--no-fused', dest='fused', action='store_false',
                            help=_('train with the textbook ops, to step through them (slower; the fused layer is on '
                                   'by default)'))
        parser.add_argument('--prompt', help=_("the start of the samples (default: {poem} for the poem, {stdlib} for "
                                               "stdlib, a file's first characters; with --sample, a new line)").format(
            poem=repr(PROMPTS['poem']), stdlib=repr(PROMPTS['stdlib'])))
        parser.add_argument('--seeds', type=int, default=1, metavar='N',
                            help=_('the verdicts also train from seed + 1, ..., seed + N - 1 (scratch checkpoints)'))
        parser.add_argument('--full', action='store_true', help=f"--seeds {FULL['seeds']}")
        parser.add_argument('--sample', metavar='CKPT', help=_('train nothing: load this checkpoint (a ckpt.npz of '
                                                               'train_gpt) and write from --prompt at each temperature'))

    return run_lesson(run, command_line('train_gpt', __doc__, options, argv, extra, check=_check))


def _preset(argv):
    """The --preset given in argv (its options' defaults depend on it); main's parser checks it."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument('--preset')
    preset = parser.parse_known_args(argv)[0].preset
    return preset if preset in PRESETS else 'tiny'


def cost(steps, batch_size, context, d_model, n_layers, n_heads, eval_every, eval_batches, sample_length=0, **_):
    """The budget.Cost of train() (its validation passes included) and of the samples: a lower bound,
    the vocabulary (unknown before the text is read) counted as empty."""
    sizes = dict(d_model=d_model, n_layers=n_layers, heads=n_heads)
    return (budget.transformer(batch_size, context, steps=steps, **sizes)
            + (steps // eval_every) * eval_batches * budget.transformer(batch_size, context, **sizes)
            + len(TEMPERATURES) * budget.transformer(1, context, steps=sample_length, **sizes))


def _check(args):
    """What the options cannot do together, found before training starts."""
    if args.sample is not None:
        return _sample_problem(args.sample, args.prompt)
    if args.d_model % args.n_heads:
        return _("--n-heads {heads} must divide --d-model {d_model}").format(heads=args.n_heads, d_model=args.d_model)
    if args.seeds < 1:
        return _("argument --seeds: must be an integer >= 1, got {value}").format(value=args.seeds)
    sizes = {**vars(args), 'steps': min(args.steps, args.stop_after or args.steps)}
    seeds = FULL['seeds'] if args.full else args.seeds
    too_much = budget.refuse({**{f"--{name.replace('_', '-')}": getattr(args, name) for name in
                                 ('steps', 'batch_size', 'context', 'd_model', 'n_layers', 'n_heads', 'eval_batches',
                                  'sample_length')}, '--seeds': seeds},
                             seeds * cost(**sizes), args.device)
    if too_much:
        return too_much
    if args.stop_after is not None and args.stop_after < 1:
        return _("argument --stop-after: must be an integer >= 1, got {value}").format(value=args.stop_after)
    if args.val_fraction >= 1:
        return _("argument --val-fraction: must be below 1 (the rest is trained on), got {value}").format(
            value=args.val_fraction)
    if args.prompt == '':
        return _("argument --prompt: {problem}").format(problem=prompt_problem('', ''))
    corpus = args.corpus or PRESETS[args.preset]['corpus']
    if args.text_file is None and corpus == 'stdlib':
        return None  # ~2 MB of text: every setting fits (and reading it takes a few seconds)
    try:
        text, _name = texts.load(corpus, args.text_file)
    except texts.CorpusError as error:
        return _("argument --text: {problem}").format(problem=error)
    problem = text_problem(text, args.context, args.val_fraction, args.prompt)
    return f"{'--text ' + args.text_file if args.text_file else corpus}: {problem}" if problem else None


def _sample_problem(path, prompt):
    """Why --sample PATH --prompt PROMPT cannot write, or None."""
    if not os.path.exists(path):
        return _("--sample {path}: no such file (a train_gpt run writes runs/train_gpt/ckpt.npz)").format(path=path)
    try:
        _model, chars = load_checkpoint(path)
    except (mt.CheckpointError, ValueError) as error:
        return f"--sample {path}: {error}"
    problem = prompt_problem(prompt, chars.vocab)
    return f"--prompt: {problem}" if problem else None


if __name__ == '__main__':
    main()

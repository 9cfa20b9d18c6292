"""Lesson: train a tiny character-level GPT, checkpoint it, resume it, and sample from it.

A decoder-only Transformer (transformer.GPT) learns to continue a short poem one
character at a time.  The causal language-model loss (transformer.next_token_loss):

    logits = GPT(ids)                              (B, T, vocab): position t predicts ids[t + 1]
    L = cross_entropy(logits[:, :-1], ids[:, 1:])  starts near ln(vocab) (a uniform guess)

Training uses AdamW with a warmup + cosine learning-rate schedule and gradient
clipping, the usual Transformer recipe.  Every --ckpt-every steps the model, the
optimizer, the schedule and the loss history go to one .npz file (mt.save: atomic,
never pickled); --resume continues from it.  Batches are a function of (seed, step),
so a resumed run computes exactly the losses the uninterrupted run would have.

Then it writes, from the prompt, at several temperatures (attention-atom §2.4.2):
T = 0.2 "extremely sharp, close to argmax", 0.7 "moderate", 1.0 "the standard
softmax", 1.5 "smooth, diverse"; and greedily (always the most likely character).

    python -m demos.train_gpt                            # the short CPU run of the tour
    python -m demos.train_gpt --device cuda --steps 2000 # the same on a GPU (cupy)
    python -m demos.train_gpt --steps 2000 --resume      # continue the last run
"""
import math
import os
import random
import time

import microtensor as mt
from microtensor import nn, optim
from transformer import GPT, generate, next_token_loss

from .report import RUNS, command_line, save_lines, table, window_means

# "The Star" by Jane Taylor (1806), public domain.
TEXT = """Twinkle, twinkle, little star,
How I wonder what you are!
Up above the world so high,
Like a diamond in the sky.

When the blazing sun is gone,
When he nothing shines upon,
Then you show your little light,
Twinkle, twinkle, all the night.

Then the traveller in the dark
Thanks you for your tiny spark;
He could not see which way to go,
If you did not twinkle so.

In the dark blue sky you keep,
And often through my curtains peep,
For you never shut your eye
Till the sun is in the sky.

As your bright and tiny spark
Lights the traveller in the dark,
Though I know not what you are,
Twinkle, twinkle, little star.
"""
TEMPERATURES = (0.2, 0.7, 1.0, 1.5)
DEFAULTS = dict(steps=300, batch_size=16, context=64, d_model=64, n_layers=2, n_heads=4, lr=3e-3, warmup=30,
                ckpt_every=100, seed=0)


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
            raise ValueError(f"train_gpt: the characters {unknown} are not in the training text's vocabulary")
        return [self.ids[c] for c in text]

    def decode(self, ids):
        return ''.join(self.vocab[i] for i in ids)


def batch_at(data, step, batch_size, context, seed):
    """(batch_size, context) windows of `data` (a 1-D id tensor), chosen by (seed, step) alone."""
    rng = random.Random(seed * 1_000_003 + step)
    starts = [rng.randrange(len(data) - context + 1) for _ in range(batch_size)]
    index = mt.tensor(starts, device=data.device).reshape(-1, 1) + mt.arange(context, device=data.device)
    return data[index]


def train(steps=DEFAULTS['steps'], out=os.path.join(RUNS, 'train_gpt'), device='cpu', resume=False,
          stop_after=None, log_every=None, text=TEXT, **options):
    """Train (or resume) a GPT on `text`; returns {'model', 'chars', 'losses', 'step', 'seconds'}.

    options: the keys of DEFAULTS.  Checkpoints go to <out>/ckpt.npz every ckpt_every steps and
    at the end; stop_after=n stops after step n as if interrupted (try --resume next).
    """
    config = {**DEFAULTS, **options, 'steps': steps}
    if device == 'cuda' and not mt.cuda.is_available():
        raise RuntimeError("train_gpt: --device cuda, but no GPU is usable here (cupy missing or no device); "
                           "run without --device to train on the CPU")
    chars = Characters.of(text)
    data = mt.tensor(chars.encode(text), dtype='int64', device=device)
    if len(data) <= config['context']:
        raise ValueError(f"train_gpt: the text has {len(data)} characters; "
                         f"it needs more than context={config['context']}")
    mt.manual_seed(config['seed'])
    model = GPT(len(chars.vocab), d_model=config['d_model'], n_layers=config['n_layers'], n_heads=config['n_heads'],
                max_len=config['context']).to(device)
    opt = optim.AdamW(model.parameters(), lr=config['lr'], weight_decay=0.01)
    schedule = optim.WarmupCosine(opt, warmup_steps=min(config['warmup'], steps - 1), total_steps=steps)
    path = os.path.join(out, 'ckpt.npz')
    start, losses = 0, []
    if resume and os.path.exists(path):
        start, losses = _restore(path, device, config, chars, model, opt, schedule)
        print(f"resumed from {path} at step {start}")
    elif resume:
        print(f"no checkpoint at {path} yet: starting a new run")
    elif os.path.exists(path):
        print(f"starting a new run: {path} will be overwritten (--resume continues it instead)")
    os.makedirs(out, exist_ok=True)

    last = steps if stop_after is None else min(steps, stop_after)
    log_every = log_every or max(1, steps // 10)
    progress = _progress(start, last)
    began = time.perf_counter()
    for step in progress:
        ids = batch_at(data, step, config['batch_size'], config['context'], config['seed'])
        loss = next_token_loss(model(ids), ids)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        schedule.step()
        losses.append(loss.item())
        done = step + 1
        if hasattr(progress, 'set_postfix'):
            progress.set_postfix(loss=f"{losses[-1]:.3f}")
        elif done % log_every == 0 or done == last:
            rate = (done - start) / (time.perf_counter() - began)
            print(f"step {done:5d}/{steps}  loss {losses[-1]:.4f}  lr {schedule.lr:.2e}  {rate:.1f} steps/s")
        if done % config['ckpt_every'] == 0 or done == last:
            mt.save({'model': model.state_dict(), 'optim': opt.state_dict(), 'schedule': schedule.state_dict(),
                     'step': done, 'losses': losses, 'config': config, 'vocab': chars.vocab}, path)
    return {'model': model, 'chars': chars, 'losses': losses, 'step': max(start, last),
            'seconds': time.perf_counter() - began, 'checkpoint': path}


def _restore(path, device, config, chars, model, opt, schedule):
    """Load the checkpoint into model, opt and schedule; (step, losses).  The settings must match,
    except steps: a longer run continues along the longer run's schedule."""
    ckpt = mt.load(path, device=device)
    saved = ckpt['config']
    different = {k: (saved.get(k), v) for k, v in config.items()
                 if k not in ('ckpt_every', 'steps') and saved.get(k) != v}
    if different or ckpt['vocab'] != chars.vocab:
        raise ValueError(f"train_gpt: {path} was made with other settings {different or '(another text)'} "
                         "(saved, now); resume with the same options, or start over without --resume "
                         "(or with another --out)")
    if saved['steps'] != config['steps']:
        print(f"the checkpoint's run was {saved['steps']} steps long; the schedule now runs to {config['steps']}")
    model.load_state_dict(ckpt['model'])
    opt.load_state_dict(ckpt['optim'])
    schedule.load_state_dict(ckpt['schedule'])
    return ckpt['step'], list(ckpt['losses'])


def _progress(start, stop):
    """range(start, stop), with a tqdm progress bar when tqdm is installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return range(start, stop)
    return tqdm(range(start, stop), initial=start, total=stop, desc='training', unit='step')


def samples(model, chars, prompt='Twinkle', length=160, temperatures=TEMPERATURES, seed=0):
    """{label: text} continuations of `prompt`: one per temperature, and greedy."""
    ids = mt.tensor(chars.encode(prompt), dtype='int64', device=model.parameters()[0].device)
    out = {f"T = {T}": chars.decode(continue_text(model, ids, length, temperature=T, seed=seed).tolist())
           for T in temperatures}
    out['greedy'] = chars.decode(continue_text(model, ids, length, greedy=True).tolist())
    return out


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


def run(steps=DEFAULTS['steps'], out=os.path.join(RUNS, 'train_gpt'), device='cpu', resume=False, stop_after=None,
        prompt='Twinkle', sample_length=160, **options):
    result = train(steps, out, device, resume, stop_after, **options)
    model, chars, losses = result['model'], result['chars'], result['losses']
    print(f"\n{sum(p.size for p in model.parameters())} parameters, vocabulary of {len(chars.vocab)} characters "
          f"(a uniform guess scores ln {len(chars.vocab)} = {math.log(len(chars.vocab)):.2f}); "
          f"checkpoint: {result['checkpoint']}")
    print(table(['steps', 'mean loss'], window_means(losses)))
    save_lines('loss', {'training loss': losses}, 'step', 'cross-entropy (nats)', 'train_gpt', folder=out)
    print(f"\nContinuations of {prompt!r}:")
    for label, text in samples(model, chars, prompt, sample_length).items():
        print(f"--- {label}\n{text}")
    return result


def main(argv=None):
    def extra(parser):
        parser.add_argument('--resume', action='store_true', help='continue from <out>/ckpt.npz')
        parser.add_argument('--out', default=os.path.join(RUNS, 'train_gpt'), help='folder for the checkpoint and plot')
        parser.add_argument('--stop-after', type=int, help='stop after this step, as if interrupted (then --resume)')
        parser.add_argument('--prompt', default='Twinkle')
        parser.add_argument('--sample-length', type=int, default=160)
    run(**vars(command_line('train_gpt', __doc__, DEFAULTS, argv, extra)))


if __name__ == '__main__':
    main()

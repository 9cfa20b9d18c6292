"""Outgrowing one machine: a tiny GPT trained in microtensor keeps training on PyTorch's
DistributedDataParallel (DDP), one process per device.

    python examples/ddp_train.py                         # 2 CPU processes (gloo) on this machine
    python examples/ddp_train.py --world-size 4 --ddp-steps 200
    torchrun --nproc_per_node=2 examples/ddp_train.py    # the same processes, started by torchrun

1. microtensor (rank 0 alone): a GPT learns a toy language -- each sequence counts from a random
   start in steps of 1, 2 or 3, modulo the vocabulary -- for --mt-steps of AdamW, and is saved with
   mt.save (weights and the constructor's arguments).
2. Every rank loads that checkpoint, exports the model with transformer.to_torch and wraps it in
   DDP.  Each rank draws its own batches; loss.backward() also averages the gradients of all ranks
   (an all-reduce), so every rank takes the same optimizer step and the weights stay identical,
   while the ranks together see world_size times as many sequences per step.
3. A fixed evaluation batch, the one microtensor was measured on, is scored before and after
   (and once more in microtensor, after transformer.from_torch brought the model back); each rank
   writes its weights (rank<r>.npz, PyTorch's names, no pickle) and losses (rank<r>.json) under
   --out, and rank 0 prints the summary, ending with its own check that every rank holds the same
   weights, bit for bit.

The optimizer starts afresh in PyTorch (the weights cross over, Adam's moments do not), with a
smaller learning rate than microtensor's so that its first steps do not undo the training.
Needs torch (pip install 'microtensor[torch]').
"""
import argparse
import datetime
import json
import os
import random
import socket

import numpy
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import microtensor as mt
from microtensor import optim
from transformer import GPT, from_torch, next_token_loss, save_torch_state_dict, to_torch


def counting_batch(rng, batch_size, seq_len, vocab_size):
    """(B, T) token ids as lists: row b counts start, start + s, start + 2s, ... modulo vocab_size."""
    rows = []
    for _ in range(batch_size):
        start, stride = rng.randrange(vocab_size), rng.choice((1, 2, 3))
        rows.append([(start + stride * t) % vocab_size for t in range(seq_len)])
    return rows


def train_microtensor(args, path):
    """Train the GPT in microtensor, save it to `path`; return its loss on the evaluation batch."""
    mt.manual_seed(args.seed)
    config = dict(vocab_size=args.vocab_size, d_model=args.d_model, n_layers=2, n_heads=4, max_len=args.seq_len,
                  init_std=0.1)
    model = GPT(**config)
    opt = optim.AdamW(model.parameters(), lr=args.mt_lr, weight_decay=0.0)
    rng = random.Random(args.seed)
    for step in range(args.mt_steps):
        ids = mt.tensor(counting_batch(rng, args.batch_size, args.seq_len, args.vocab_size))
        loss = next_token_loss(model(ids), ids)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with mt.no_grad():
        ids = mt.tensor(evaluation_batch(args))
        eval_loss = next_token_loss(model(ids), ids).item()
    print(f"microtensor: {args.mt_steps} steps, loss on the evaluation batch {eval_loss:.4f}", flush=True)
    mt.save({'model': model.state_dict(), 'config': config, 'eval_loss': eval_loss}, path)


def evaluation_batch(args):
    return counting_batch(random.Random(-1), 64, args.seq_len, args.vocab_size)


def torch_loss(net, ids):
    logits = net(ids)
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def worker(rank, world_size, args):
    """One process of the group: what torchrun starts once per device."""
    torch.set_num_threads(1)                       # one core each; on GPUs: torch.cuda.set_device(rank)
    dist.init_process_group('gloo', rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=args.timeout))
    checkpoint = os.path.join(args.out, 'microtensor.npz')
    if rank == 0:
        train_microtensor(args, checkpoint)
    dist.barrier()                                 # the others wait for rank 0's checkpoint

    saved = mt.load(checkpoint)
    model = GPT(**saved['config'])
    model.load_state_dict(saved['model'])
    net = to_torch(model)                          # the same weights in every process
    ddp = DistributedDataParallel(net)             # on GPUs: net.to(rank), DistributedDataParallel(net, [rank])
    opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr, weight_decay=0.0)
    eval_ids = torch.tensor(evaluation_batch(args))
    with torch.no_grad():
        eval_start = torch_loss(net, eval_ids).item()
    rng = random.Random(args.seed + 1000 * (rank + 1))   # each rank its own batches
    losses = []
    for step in range(args.ddp_steps):
        ids = torch.tensor(counting_batch(rng, args.batch_size, args.seq_len, args.vocab_size))
        loss = torch_loss(ddp, ids)
        opt.zero_grad()
        loss.backward()                            # gradients averaged over the ranks here
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        eval_end = torch_loss(net, eval_ids).item()
    back = from_torch(ddp)                         # and back to microtensor, to inspect what DDP trained
    with mt.no_grad():
        ids = mt.tensor(evaluation_batch(args))
        back_loss = next_token_loss(back(ids), ids).item()

    save_torch_state_dict(net, os.path.join(args.out, f"rank{rank}.npz"))
    result = {'rank': rank, 'world_size': world_size, 'microtensor_eval_loss': saved['eval_loss'],
              'eval_loss_start': eval_start, 'eval_loss_end': eval_end, 'back_in_microtensor': back_loss,
              'train_losses': losses}
    with open(os.path.join(args.out, f"rank{rank}.json"), 'w') as f:
        json.dump(result, f)
    dist.barrier()
    if rank == 0:
        report(args.out, world_size)
    dist.destroy_process_group()


def report(out, world_size):
    ranks = []
    for rank in range(world_size):
        with open(os.path.join(out, f"rank{rank}.json")) as f:
            ranks.append(json.load(f))
    first = ranks[0]
    print(f"PyTorch DDP, {world_size} processes, {len(first['train_losses'])} steps: loss on the evaluation batch "
          f"{first['microtensor_eval_loss']:.4f} (microtensor) -> {first['eval_loss_start']:.4f} (exported) -> "
          f"{first['eval_loss_end']:.4f} (back in microtensor: {first['back_in_microtensor']:.4f})")
    for r in ranks:
        print(f"  rank {r['rank']}: training loss {r['train_losses'][0]:.4f} -> {r['train_losses'][-1]:.4f} "
              f"(its own batches), evaluation {r['eval_loss_end']:.4f}")
    print(same_weights_line(out, world_size))
    print(f"weights and losses: {out}/rank<r>.npz, rank<r>.json")


def same_weights_line(out, world_size):
    """The check that DDP kept the ranks in step: every rank's rank<r>.npz against rank 0's, bit for bit."""
    weights = [dict(numpy.load(os.path.join(out, f"rank{rank}.npz"), allow_pickle=False)) for rank in range(world_size)]
    differ = sorted({name for w in weights[1:] for name in weights[0].keys() | w.keys()
                     if name not in w or name not in weights[0] or not numpy.array_equal(w[name], weights[0][name])})
    if differ:
        return (f"weights: the ranks DIFFER in {len(differ)} of {len(weights[0])} tensors ({', '.join(differ[:3])}"
                f"{', ...' if len(differ) > 3 else ''}): the gradients were not averaged alike")
    return f"weights: identical on all {world_size} ranks, bit for bit ({len(weights[0])} tensors)"


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--world-size', type=int, default=2, help='processes to start (without torchrun)')
    parser.add_argument('--mt-steps', type=int, default=150, help='training steps in microtensor')
    parser.add_argument('--ddp-steps', type=int, default=50, help='training steps in PyTorch, on every rank')
    parser.add_argument('--mt-lr', type=float, default=3e-3)
    parser.add_argument('--lr', type=float, default=1e-3, help="PyTorch's learning rate")
    parser.add_argument('--batch-size', type=int, default=16, help='sequences per rank and step')
    parser.add_argument('--seq-len', type=int, default=12)
    parser.add_argument('--vocab-size', type=int, default=16)
    parser.add_argument('--d-model', type=int, default=32)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--timeout', type=float, default=300, help='seconds a process waits for the others')
    parser.add_argument('--out', default=os.path.join('runs', 'ddp'), help='where the files go')
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if 'RANK' in os.environ:                       # started by torchrun, which set the address and the ranks
        worker(int(os.environ['RANK']), int(os.environ['WORLD_SIZE']), args)
    else:
        os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(free_port()))
        torch.multiprocessing.spawn(worker, args=(args.world_size, args), nprocs=args.world_size, join=True)


if __name__ == '__main__':
    main()

#!/usr/bin/python3
"""The PyTorch peer of bench/gpt_tokens.cc: the same GPT decoder as shardflow/models/gpt.h, trained
on the initial weights and batches that `gpt_tokens --dump DIR` wrote, so that every step's loss
can be compared with shardflow's (bench/compare_gpt_torch.sh) before their speeds are.

Identical math, written as a plain nn.Module: token embedding wte (padded vocab, hidden) plus the
position table wpe (seq, hidden); per block pre-LN: LayerNorm (eps 1e-5) -> q, k, v Linear
(weights (out, in), y = x W^T + b) -> heads (B, nh, S, d) -> q k^T / sqrt(d) -> causal mask
(-1e9, as shardflow's CausalMask fills) -> softmax -> context -> merged heads -> proj + bias ->
residual; LayerNorm -> fc1 (4h) + bias -> GELU(approximate='tanh') -> fc2 + bias -> residual;
final LayerNorm; logits = x wte^T (tied); loss = mean cross-entropy over logits[..., :vocab].
No dropout (the benchmark trains at 0). torch.optim.AdamW, betas 0.9/0.999, eps 1e-8, the decay
only on the parameters of 2+ dims (shardflow's decay_except_vectors). No gradient clipping.

Timing as gpt_tokens: step 1 is a warm-up; tokens/s = batch * seq * (steps - 1) / the wall time
from the end of step 1 to the end of the last step. The batches are pre-loaded tensors.

Usage: /usr/bin/python3 bench/gpt_peer_torch.py DIR [--threads 1] [--steps N (default: DIR's)]
Output: "step,k,loss" per step, then a "HEADER,..." and a "RESULT,..." CSV line.
"""
import argparse
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_config(path):
    with open(os.path.join(path, "config.txt")) as f:
        pairs = (line.split() for line in f if line.strip())
        return {k: (float(v) if k in ("lr", "weight_decay") else int(v)) for k, v in pairs}


class Block(nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.heads, self.hidden = heads, hidden
        h4 = 4 * hidden
        shapes = {"ln1_gamma": (hidden,), "ln1_beta": (hidden,), "wq": (hidden, hidden), "bq": (hidden,),
                  "wk": (hidden, hidden), "bk": (hidden,), "wv": (hidden, hidden), "bv": (hidden,),
                  "wo": (hidden, hidden), "bo": (hidden,), "ln2_gamma": (hidden,), "ln2_beta": (hidden,),
                  "w1": (h4, hidden), "b1": (h4,), "w2": (hidden, h4), "b2": (hidden,)}
        for name, shape in shapes.items():
            self.register_parameter(name, nn.Parameter(torch.zeros(shape)))
        # True above the diagonal: the keys after the query, which the mask hides.
        self.register_buffer("future", torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        a = F.layer_norm(x, (h,), self.ln1_gamma, self.ln1_beta, 1e-5)

        def heads(w, bias):
            return F.linear(a, w, bias).reshape(b, s, self.heads, d).transpose(1, 2)

        q, k, v = heads(self.wq, self.bq), heads(self.wk, self.bk), heads(self.wv, self.bv)
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
        scores = scores.masked_fill(self.future[:s, :s], -1e9)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, h)
        x = x + F.linear(ctx, self.wo, self.bo)
        m = F.layer_norm(x, (h,), self.ln2_gamma, self.ln2_beta, 1e-5)
        up = F.gelu(F.linear(m, self.w1, self.b1), approximate="tanh")
        return x + F.linear(up, self.w2, self.b2)


class Gpt(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.vocab = c["vocab"]
        self.wte = nn.Parameter(torch.zeros(c["padded_vocab"], c["hidden"]))
        self.wpe = nn.Parameter(torch.zeros(c["seq"], c["hidden"]))
        self.blocks = nn.ModuleList(Block(c["hidden"], c["heads"], c["seq"]) for _ in range(c["layers"]))
        self.lnf_gamma = nn.Parameter(torch.ones(c["hidden"]))
        self.lnf_beta = nn.Parameter(torch.zeros(c["hidden"]))

    def forward(self, ids, labels):
        x = F.embedding(ids, self.wte) + self.wpe
        for block in self.blocks:
            x = block(x)
        x = F.layer_norm(x, (x.shape[-1],), self.lnf_gamma, self.lnf_beta, 1e-5)
        logits = F.linear(x, self.wte)[..., :self.vocab]
        return F.cross_entropy(logits.reshape(-1, self.vocab), labels.reshape(-1))


def torch_name(sf_name):
    """shardflow's parameter name (embedding.wte, block3.wq, lnf_gamma...) -> this module's."""
    last = sf_name.split(".")[-1]
    if sf_name.startswith("block"):
        return f"blocks.{int(sf_name.split('.')[0][len('block'):])}.{last}"
    return last


def load_weights(model, path):
    params = dict(model.named_parameters())
    loaded = set()
    with open(os.path.join(path, "params.txt")) as f:
        for line in f:
            index, name, shape = line.split()
            value = torch.from_numpy(np.load(os.path.join(path, f"p{int(index):03}.npy")))
            target = params[torch_name(name)]
            if tuple(target.shape) != tuple(value.shape):
                raise SystemExit(f"gpt_peer_torch: {name} is {tuple(value.shape)} in {path}, "
                                 f"{tuple(target.shape)} here")
            with torch.no_grad():
                target.copy_(value)
            loaded.add(torch_name(name))
    missing = sorted(set(params) - loaded)
    if missing:
        raise SystemExit(f"gpt_peer_torch: {path} has no values for {', '.join(missing)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0, help="steps to train (0: all of DIR's batches)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    c = read_config(args.dir)
    model = Gpt(c)
    load_weights(model, args.dir)
    data = torch.from_numpy(np.load(os.path.join(args.dir, "data.npy"))).long()
    labels = torch.from_numpy(np.load(os.path.join(args.dir, "labels.npy"))).long()
    steps = args.steps or data.shape[0]
    if not 2 <= steps <= data.shape[0]:
        raise SystemExit(f"gpt_peer_torch: --steps must be in [2, {data.shape[0]}], got {steps}")
    decay = [p for p in model.parameters() if p.dim() >= 2]
    keep = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": c["weight_decay"]},
                             {"params": keep, "weight_decay": 0.0}],
                            lr=c["lr"], betas=(0.9, 0.999), eps=1e-8)
    ends = []
    for step in range(steps):
        loss = model(data[step, :, 1:], labels[step])  # column 0 is the dropout seed
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()
        ends.append(time.perf_counter())
        print(f"step,{step + 1},{value:.7f}", flush=False)
    tokens = c["batch"] * c["seq"] * (steps - 1)
    print("HEADER,what,threads,layers,hidden,seq,batch,steps,tokens_per_s,final_loss,torch")
    print(f"RESULT,torch,{args.threads},{c['layers']},{c['hidden']},{c['seq']},{c['batch']},{steps},"
          f"{tokens / (ends[-1] - ends[0]):.1f},{value:.6f},{torch.__version__}")


if __name__ == "__main__":
    main()

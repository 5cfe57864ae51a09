"""What the compatible code path's optimiser costs: PortableAdamW's update beside torch's AdamW, and both beside a
whole training step of FT-Transformer.

    python benchmarks/adamw_cost.py [--repeats 20] [--threads 2]

The default FT-Transformer (3 blocks, d_block 192) at UCI Adult's shape (6 numerical features, 8 categorical ones of
its cardinalities, one logit), in training mode on a batch of the recipe's 256 random rows: the forward and backward
pass, torch's AdamW step, PortableAdamW's step (rtdl's parameter groups and hyperparameters for both). Prints each
median time and the ratios. A measurement script, not a test: medians of --repeats rounds after a warm-up round,
timed in rounds so that a slow spell of a shared machine falls on all of them alike.
"""

from __future__ import annotations

import argparse

import torch
from _timing import interleaved_medians, machine

from rollout_equality.tabular.adamw import PortableAdamW
from rollout_equality.tabular.ftt import build_model, task_loss

ADULT = {"task": "binclass", "cont_features": [0] * 6, "cat_cardinalities": [9, 16, 7, 15, 6, 5, 2, 42]}
"""UCI Adult as the workflow prepares it: its numerical features and the categories of the others (with '?')."""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2, help="torch's threads (tabular.training.threads)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build_model(ADULT, "one_logit").train()
    x_cont = torch.randn(256, 6)
    x_cat = torch.stack([torch.randint(0, c, (256,)) for c in ADULT["cat_cardinalities"]], dim=1)
    y = torch.randint(0, 2, (256,)).float()
    torch_adamw = model.make_default_optimizer()
    portable = PortableAdamW.like(model.make_default_optimizer())
    state = {k: v.clone() for k, v in model.state_dict().items()}

    def forward_backward():
        model.zero_grad()
        task_loss("binclass", model(x_cont, x_cat), y).backward()

    forward_backward()  # gradients for the optimisers' steps (each step moves the weights; restored below)

    def step(optimizer):
        def run():
            optimizer.step()
            model.load_state_dict(state)

        return run

    restore = lambda: model.load_state_dict(state)  # noqa: E731  (the steps' own restore, timed alone)
    times = interleaved_medians([forward_backward, step(torch_adamw), step(portable), restore], args.repeats)
    train, torch_step, portable_step, restored = times
    torch_step, portable_step = torch_step - restored, portable_step - restored
    n = sum(p.numel() for p in model.parameters())
    print(f"{machine()}; torch {torch.__version__}, {args.threads} threads; {n:,} parameters")
    print(f"forward + backward, batch 256: {1e3 * train:.1f} ms")
    print(f"torch AdamW step:              {1e3 * torch_step:.2f} ms")
    print(f"PortableAdamW step:            {1e3 * portable_step:.2f} ms ({portable_step / torch_step:.1f}x torch's)")
    print(
        f"a training step on the compatible path: {(train + portable_step) / (train + torch_step):.3f}x "
        "its time with torch's AdamW"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

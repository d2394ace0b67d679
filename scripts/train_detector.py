#!/usr/bin/env python
"""Train the course's TinyDetector on synthetic shapes and write its weights.

    python scripts/train_detector.py                 # defaults: seed 0, 8 epochs
    python scripts/train_detector.py --out /tmp/t.pt --seed 1 --epochs 4

Every epoch draws a fresh synthetic training set from a seed derived from
``--seed`` (never the held-out ``EVAL_SEED``), so the model never sees the
evaluation images.  At the end it prints the held-out metrics and saves
``{'state_dict': ..., 'meta': {...}}`` to ``--out``.  CPU only, a few minutes
on two cores.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from autograder.detector import (  # noqa: E402
    ANCHORS, EVAL_SEED, IMAGE_SIZE, WEIGHTS_PATH, TinyDetector, evaluate, make_dataset, yolo_loss,
)


def epoch_seed(seed: int, epoch: int) -> int:
    s = 1_000_003 * (seed + 1) + 7919 * epoch + 17
    assert s != EVAL_SEED
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=WEIGHTS_PATH, help="where to write the weights file")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--images-per-epoch", type=int, default=6000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads; 1 is the robust choice on a shared 2-core machine "
                         "(with 2, any other busy process makes OpenMP threads thrash)")
    ap.add_argument("--eval-images", type=int, default=500)
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t0 = time.time()
    model = TinyDetector(nc=3, anchors=ANCHORS)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=5e-4)
    steps_per_epoch = math.ceil(args.images_per_epoch / args.batch_size)
    total = steps_per_epoch * args.epochs
    warmup = min(200, total // 10)

    def lr_at(step):  # linear warm-up then cosine decay to 2 %
        if step < warmup:
            return (step + 1) / warmup
        t = (step - warmup) / max(total - warmup, 1)
        return 0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * t))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    bar = tqdm(total=total, desc="train", unit="step", dynamic_ncols=True)
    step = 0
    for epoch in range(args.epochs):
        model.train()
        images, targets = make_dataset(args.images_per_epoch, epoch_seed(args.seed, epoch), IMAGE_SIZE)
        perm = torch.randperm(len(images), generator=torch.Generator().manual_seed(epoch_seed(args.seed, epoch)))
        for s in range(0, len(images), args.batch_size):
            idx = perm[s:s + args.batch_size]
            raw = model(images[idx])
            loss, parts = yolo_loss(model, raw, [targets[i] for i in idx.tolist()])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            bar.update(1)
            bar.set_postfix(epoch=epoch + 1, loss=f"{loss.item() / len(idx):.3f}",
                            box=f"{parts['box']:.3f}", obj=f"{parts['obj']:.3f}", cls=f"{parts['cls']:.3f}")
    bar.close()
    train_s = time.time() - t0

    model.eval()
    metrics = evaluate(model, n=args.eval_images, seed=EVAL_SEED)
    print(f"held-out ({args.eval_images} images, seed {EVAL_SEED}, conf 0.5, IoU 0.5): "
          f"precision {metrics['precision']:.3f}  recall {metrics['recall']:.3f}  "
          f"mAP@0.5 {metrics['map50']:.3f}  AP per class {[round(a, 3) for a in metrics['ap50']]}")
    meta = {
        "seed": args.seed,
        "image_size": IMAGE_SIZE,
        "epochs": args.epochs,
        "images_per_epoch": args.images_per_epoch,
        "batch_size": args.batch_size,
        "nc": 3,
        "anchors": [list(a) for a in ANCHORS],
        "width": list(model.width),
        "eval": {k: metrics[k] for k in ("precision", "recall", "f1", "map50", "ap50", "n_images", "seed")},
        "train_seconds": round(train_s, 1),
        "torch_version": str(torch.__version__),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": model.state_dict(), "meta": meta}, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB) after {time.time() - t0:.0f} s "
          f"(training {train_s:.0f} s)")
    return metrics


if __name__ == "__main__":
    main()

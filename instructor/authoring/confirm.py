"""The confirmation's verdicts of notebooks, or of every sample submission against its ``# expect:``
line: an author's tool around the engine's :func:`instructor.engine.confirm.confirm`.

``python -m instructor.authoring.confirm NOTEBOOK [...]`` prints the verdicts of notebooks;
``--samples ASSIGNMENT`` checks every sample of an assignment (exit 1 when one disagrees).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from ..engine.confirm import confirm
from ..layout import notebook_owner
from .samples import build_notebook, load_samples


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ..layout import notebook_owner
    from ..authoring.samples import build_notebook, load_samples

    parser = argparse.ArgumentParser(prog="python -m instructor.authoring.confirm",
                                     description="Confirmation verdicts of notebooks or sample submissions.")
    parser.add_argument("notebooks", nargs="*")
    parser.add_argument("--samples", metavar="ASSIGNMENT", help="check every sample of ASSIGNMENT")
    parser.add_argument("--only", nargs="*", help="with --samples: only these students")
    parser.add_argument("--no-sandbox", action="store_true")
    args = parser.parse_args(argv)
    status = 0
    items = []
    if args.samples:
        for s in load_samples(args.samples):
            if not args.only or s.student in args.only:
                items.append((f"{s.assignment}/{s.student}", build_notebook(s)[1], s.assignment, s))
    for p in args.notebooks:
        items.append((p, nbformat.read(p, as_version=4), notebook_owner()[Path(p).name], None))
    for label, nb, assignment, sample in items:
        conf = confirm(nb, assignment, use_sandbox=not args.no_sandbox)
        print(f"== {label}  ({conf.seconds:.1f} s, sandboxed={conf.sandboxed})")
        for flag in conf.flags:
            print(f"   flag: {flag}")
        for gid, v in conf.verdicts.items():
            line = f"   {gid:<45} {'pass' if v.passed else 'FAIL'}"
            if sample is not None and gid in sample.expect_questions:
                want = sample.expect_questions[gid] > 0
                if want != v.passed:
                    line += f"   <-- sample expects {'pass' if want else 'fail'}"
                    status = 1
            print(line)
            if not v.passed:
                print("      " + v.message.replace("\n", "\n      ")[:1200])
    return status


if __name__ == "__main__":
    sys.exit(main())

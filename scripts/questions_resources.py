"""Measure the C++ families' reference kernels with ``nvcc --resource-usage`` (no GPU needed)
and write ``cudaenv/questions/data/resources.json``, the table occupancy questions draw from.

    python scripts/questions_resources.py [--per-family 4] [--seed 2026]

Each entry names the family, its parameters and the SHA-256 of the source it measured; a
question uses an entry only while the family still renders that exact source. Rerun it when
the generator version or the CUDA toolkit changes (it records the nvcc version).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaenv.questions import adapter, occupancy

CPP = ["reduce-axis", "elementwise", "rownorm", "permute", "stencil", "scan", "matmul", "indexing"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-family", type=int, default=4)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", type=Path, default=occupancy.RESOURCES)
    args = ap.parse_args()
    entries = []
    for fam in CPP:
        rng = random.Random(f"{args.seed}:{fam}")
        seen: set[str] = set()
        while len(seen) < args.per_family:
            params = adapter.draw_params(fam, rng)
            key = json.dumps(params, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            r = adapter.render(fam, params)
            source = r.reference.source
            usage = occupancy.measure(source, r.headers)
            pretty = occupancy.demangle(sorted({u.kernel for u in usage}))
            entries.append(
                {
                    "family": fam,
                    "params": params,
                    "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
                    "kernels": [
                        {
                            "name": u.kernel,
                            "pretty": pretty[u.kernel],
                            "arch": u.arch,
                            "registers": u.registers,
                            "static_smem": u.static_smem,
                            "barriers": u.barriers,
                        }
                        for u in usage
                    ],
                }
            )
            sys.stdout.write(f"{fam} {key}: {len(usage)} kernels\n")
            sys.stdout.flush()
    table = {"nvcc": occupancy.nvcc_version(), "archs": occupancy.ARCHS, "kernels": entries}
    args.out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    sys.stdout.write(f"wrote {len(entries)} sources to {args.out}\n")


if __name__ == "__main__":
    main()

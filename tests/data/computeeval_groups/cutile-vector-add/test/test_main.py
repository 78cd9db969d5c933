"""vector_add against torch's own sum, for lengths on and off the tile size."""

import sys

import torch
from solution import vector_add


def main() -> int:
    torch.manual_seed(0)
    for n in (1, 255, 256, 1000, 1 << 20):
        a = torch.randn(n, device="cuda", dtype=torch.float32)
        b = torch.randn(n, device="cuda", dtype=torch.float32)
        got = vector_add(a, b)
        torch.cuda.synchronize()
        torch.testing.assert_close(got, a + b)
    print("PASS")  # noqa: T201 (the harness reports to its log)
    return 0


if __name__ == "__main__":
    sys.exit(main())

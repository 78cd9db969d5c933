import sys

import torch
from solution import scale


def main() -> int:
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    got = scale(x, 2.5)
    torch.testing.assert_close(got, x * 2.5)
    print("ok")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())

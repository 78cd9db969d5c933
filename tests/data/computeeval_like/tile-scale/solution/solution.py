"""Scale a vector with a cuTile kernel."""

import cuda.tile as ct
import torch
from tile_helpers import blocks_for

TILE = 256


@ct.kernel
def scale_kernel(x, out, alpha: float, tile: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(tile,))
    ct.store(out, index=(bid,), tile=t * alpha)


def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (blocks_for(x.shape[0], TILE), 1, 1)
    ct.launch(torch.cuda.current_stream(), grid, scale_kernel, (x, out, alpha, TILE))
    return out

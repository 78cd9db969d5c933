"""reduce-axis (cuda_cpp): sum, mean, norm, max, min, |max|, arg-max and arg-min of a matrix
along its rows, its columns, or the middle axis of a 3-D array; float, double, or half with
float accumulation; optionally a row pitch whose padding must not be read."""

from __future__ import annotations

from cudaenv.families import cpp
from cudaenv.families.base import Family, Mutant, Params, Parts
from cudaenv.families.parts import cpp_parts
from cudaenv.families.reduce_axis_src import (
    IDENTITY0,
    LAST_INDEX,
    NARROW,
    NO_SYNC,
    SIGNED,
    TAIL,
    baseline,
    out_type,
    reference,
    signature,
)
from cudaenv.families.reduce_ops import (
    CALLS,
    KIND_TEXT,
    OPS,
    PERF,
    SIZES,
    SPACE,
    cpp_cases,
    difficulty,
    tolerance_text,
    work,
)
from cudaenv.families.runners import Arg, Io


def io(p: Params, ct: cpp.CType) -> Io:
    """The call: ``x`` read at the row pitch ``cols + pad`` (pitched) or contiguous."""
    out = Arg("out", {"value": "f64" if ct.key == "f64" else "f32", "extreme": ct.key,
                      "arg": "i32"}[OPS[p["op"]].kind], "out")  # fmt: skip
    name = f"{p['axis']}_{p['op']}"
    if p["axis"] == "mid":
        call = f"{name}(@x@, batch, rows, cols, @out@)"
    else:
        call = f"{name}(@x@, rows, cols{', cols + pad' if p['pitched'] else ''}, @out@)"
    return Io(name, (Arg("x", ct.key), out), SIZES, call, shifted=True)


def _layout(params: Params, ct: cpp.CType) -> str:
    if params["axis"] == "mid":
        return (
            f"`x` is a `batch x rows x cols` array of {ct.label} values in device memory, "
            "contiguous and row-major: element `(b, r, c)` is `x[(b * rows + r) * cols + c]`."
        )
    pitch = (
        "with a row pitch of `ld` elements (`ld >= cols`): element `(r, c)` is "
        "`x[r * ld + c]`; the `ld - cols` padding elements at the end of each row hold "
        "garbage and must not be read (the tests fill them with huge values)"
        if params["pitched"]
        else "contiguous and row-major: element `(r, c)` is `x[r * cols + c]`"
    )
    return f"`x` is a `rows x cols` matrix of {ct.label} values in device memory, {pitch}."


def _prompt(params: Params, ct: cpp.CType) -> str:
    op, axis = OPS[params["op"]], params["axis"]
    header = f"include/{axis}_{op.key}.h"
    where = {
        "row": ("every row `r`", "`out[r]`", "the `cols` elements of the row", "rows",
                "`rows >= 0` (for `rows == 0` do nothing), `cols >= 1`"),
        "col": ("every column `c`", "`out[c]`", "the `rows` elements of the column", "cols",
                "`rows >= 1`, `cols >= 0` (for `cols == 0` do nothing)"),
        "mid": ("every `(b, c)`", "`out[b * cols + c]`", "the `rows` elements `x[b][0..rows-1][c]`",
                "batch * cols", "`batch >= 0`, `rows >= 1`, `cols >= 0` (nothing to do when "
                "`batch * cols == 0`)"),
    }[axis]  # fmt: skip
    target, slot, over, n_out, sizes = where
    index = " The index counts along the reduced axis, from 0." if op.kind == "arg" else ""
    accum = (
        " Accumulate in float: the inputs are halves, the result is a float."
        if ct.key == "f16" and op.kind == "value"
        else ""
    )
    pb, pr, pc = PERF[axis]
    perf = f"{pb} x {pr} x {pc}" if axis == "mid" else f"{pr} x {pc}"
    values = "; ".join(KIND_TEXT[k] for k in op.kinds)
    return f"""Implement a {axis}-wise reduction on the GPU: {op.what}. The interface is declared in
`{header}`:

```c++
{signature(params, ct)};
```

- {_layout(params, ct)}
- For {target}, write to {slot} {op.what} of {over}.{index}{accum}
- `out` is a device array of `{n_out}` elements of type `{out_type(op.key, ct)}`; its previous
  contents are garbage (NaN). Do not write outside it and do not modify `x`.
- Sizes: {sizes}, and fewer than 2^31 elements in all. The tests cover single elements,
  lengths that are not multiples of 32 or of any block size, very tall and very wide shapes
  (e.g. 100003 x 3 and 3 x 100003) and about a million elements; the benchmark times
  {CALLS} calls on {perf} inputs.
- Values are finite (no NaN or infinity); the test inputs are: {values}.

{tolerance_text(ct.acc, op)}

{cpp.closing(header)}
"""


class ReduceAxis(Family):
    name = "reduce-axis"
    slug = "red"
    problem_type = "cuda_cpp"
    group = "cuda-kernels"
    params_space = SPACE

    def render(self, params: Params, task_id: str) -> Parts:
        ct = cpp.CTYPES[params["dtype"]]
        op, axis = OPS[params["op"]], params["axis"]
        name = f"{axis}_{op.key}"
        out_size = {"value": 8 if ct.acc == "double" else 4, "extreme": ct.size, "arg": 4}
        return cpp_parts(self.name, params, task_id, header=f"{name}.h",
                         declaration=signature(params, ct),
                         comment=f"{name}: {op.what} along the {axis} axis (see the task statement for the layout).",
                         includes=[ct.include], io=io(params, ct), module="reduce_axis",
                         cases=cpp_cases(params), prompt=_prompt(params, ct),
                         reference=reference(params, ct), baseline=baseline(params, ct),
                         difficulty=difficulty(axis, op, params["dtype"], params["pitched"]),  # type: ignore[arg-type]
                         tags=["reduction", f"{axis}-reduction", params["dtype"], "memory-bound"],
                         work=work(op, params["dtype"], ct.acc, PERF[axis], axis, CALLS, ct.size,
                                   out_size[op.kind]))  # fmt: skip

    def mutants(self, params: Params) -> list[Mutant]:
        ct = cpp.CTYPES[params["dtype"]]
        op = OPS[params["op"]]

        def m(name: str, kind: str, why: str, *, swap: str | None = None, bug: str | None = None,
              det: bool = True) -> Mutant:  # fmt: skip
            src = reference(params, ct, op=swap, bug=bug)
            return Mutant(name, kind, why, {"solution.cu": src}, deterministic=det)  # type: ignore[arg-type]

        out = [
            m("tail", "tail", "skips the last (length mod 32 or 8) elements", bug=TAIL),
            m("operator", "operator", f"{op.swap_note}", swap=op.swapped),
        ]
        third = {
            "value": ("accumulation", NARROW, "accumulates in a narrower type"),
            "extreme": ("identity", IDENTITY0, "starts from 0 instead of the identity"),
            "arg": ("operator", LAST_INDEX, "returns the last index on ties"),
        }[op.kind]
        if op.key == "absmax":
            third = ("operator", SIGNED, "returns the signed element of largest magnitude")
        out.append(m(third[1], third[0], third[2], bug=third[1]))
        if params["axis"] != "row":
            out.append(m("no-sync", "sync", "no barrier before the shared tile is read",
                         bug=NO_SYNC, det=False))  # fmt: skip
        return out

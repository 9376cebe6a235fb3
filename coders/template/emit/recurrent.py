"""A recurrent layer (LSTM, GRU, RNN) as Triton kernels, in one of two forms (the config key
"time_loop"; coders/template/recurrent.py builds the kernel):

"kernel" (the default): one launch per layer for all time steps and both directions. Each program
owns BLOCK_B batch rows and ALL hidden units of one direction (grid: batch blocks x directions), so
its h_t depends only on its own rows' h_{t-1}: no program waits for another. It loops t over the
sequence; per step, per BLOCK units, it computes every gate as tl.dot over BLOCK_K slices of h_{t-1}
and W_hh (W_hh read again each step, from L2: at hidden 256 an LSTM's is 1 MB fp32, more than a
program's registers or shared memory), adds gx_t and b_hh, runs the cell update in fp32 and stores
h_t into the output sequence, where the next step reads it. A barrier ends each step: the next
step's loads read what other threads of the program stored. h_t goes to another slot (t) than the
h_{t-1} it reads (t - 1), and c_t to the same elements of c_n that c_{t-1} was read from, each one
by the value that was read: nothing is overwritten before it is read. A batch of 10 is one
program per direction: few programs, but a recurrence is latency-bound and its steps are serial.

"host": the launcher walks the sequence, one launch per time step (both directions in one). Each
program owns BLOCK_B batch rows and BLOCK hidden units of one direction (grid axis 2); the step
reads the whole previous state and writes only its own block, so it cannot update it in place.

In both forms the input projection gx (a matmul over all steps, bias b_ih included) comes before;
h_{t-1} is read from the output sequence (at t - 1 forwards, t + 1 backwards), at the first step
from h0 and c0 (zeros when the module got no state); the last step also writes h_n, and c_n holds
c_t. Gate order is PyTorch's: LSTM i, f, g, o; GRU r, z, n, with n = tanh(gx_n + r * (h W_hn + b_hn)).
"""

from __future__ import annotations

from coders.template.emit.common import Writer
from coders.template.emit.launch import Launcher, output_alloc, wrap_call
from coders.template.ir import Kernel
from coders.template.recurrent import GATES

PER_STEP = ("t_fwd", "t_rev", "hp_off", "hp_dir", "hp_b", "last")
PARAMS = ["gx_ptr", "whh_ptr", "bhh_ptr", "hp_ptr", "cp_ptr", "y_ptr", "hn_ptr", "cn_ptr", "B", "H",
          "t_fwd", "t_rev", "hp_off", "hp_dir", "hp_b", "s_gx_t", "s_gx_b", "s_y_t", "s_y_b", "last"]

LOOP_PARAMS = ["gx_ptr", "whh_ptr", "bhh_ptr", "h0_ptr", "c0_ptr", "y_ptr", "hn_ptr", "cn_ptr", "B", "H", "T",
               "s_gx_t", "s_gx_b", "s_y_t", "s_y_b"]


def _tanh(x: str) -> str:
    return f"(2.0 * tl.sigmoid(2.0 * {x}) - 1.0)"  # no libdevice: the interpreter runs it too


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    if in_kernel(kernel):
        _loop_kernel(w, kernel, name)
    else:
        _step_kernel(w, kernel, name)


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    """Outputs allocated, then one launch per layer ("kernel") or per time step ("host"); h0 / c0
    default to zeros. Local names start with "_": graph values never do (trace/signatures.py), so
    an operand is never shadowed."""
    space = kernel.space
    roles = space["roles"]
    gx, dirs = roles["gx"], space["dirs"]
    written = {o.src: o.value for o in kernel.outputs}
    y, hn, cn = (written.get(k, f"_{k}") for k in ("y", "h_n", "c_n"))
    launcher.begin(w)
    w.indent()
    launcher.contiguous(w)
    t_dim, b_dim = (1, 0) if space["batch_first"] else (0, 1)
    w(f"_steps, _batch, _hidden = {gx}.shape[{t_dim}], {gx}.shape[{b_dim}], {roles['whh']}.shape[1]")
    shape = f"({gx}.shape[0], {gx}.shape[1], {dirs} * _hidden)"
    w(f"{y} = {output_alloc(shape, f'like:{gx}', f'{gx}.device')}")
    lstm = space["mode"] == "lstm"  # the other cells keep no c: their c pointers are never read
    for value in (hn, cn) if lstm else (hn,):
        w(f"{value} = {output_alloc(f'({dirs}, _batch, _hidden)', f'like:{gx}', f'{gx}.device')}")
    for role in ("h0", "c0") if lstm else ("h0",):
        if role not in roles:
            w(f"_{role} = torch.zeros(({dirs}, _batch, _hidden), device={gx}.device, dtype={gx}.dtype)")
    w(f"_s_gx = ({gx}.stride({t_dim}), {gx}.stride({b_dim}))")
    w(f"_s_y = ({y}.stride({t_dim}), {y}.stride({b_dim}))")
    h0 = roles.get("h0", "_h0")
    c0, cn = (roles.get("c0", "_c0"), cn) if lstm else (hn, hn)
    if in_kernel(kernel):
        _loop_launch(w, kernel, name, [gx, roles["whh"], roles.get("bhh", roles["whh"]), h0, c0, y, hn, cn])
    else:
        _step_launches(w, kernel, name, [gx, roles["whh"], roles.get("bhh", roles["whh"]), h0, c0, y, hn, cn])
    launcher.finish(w)
    w.dedent()
    w()


def in_kernel(kernel: Kernel) -> bool:
    """The time loop inside the kernel (the default) or in the launcher."""
    return kernel.config.get("time_loop", "kernel") == "kernel"


def _constexprs(kernel: Kernel) -> list[str]:
    cfg = kernel.config
    return [f"HAS_BIAS={'bhh' in kernel.space['roles']}", f"BLOCK_B={cfg['BLOCK_B']}",
            f"BLOCK={cfg['BLOCK']}", f"BLOCK_K={cfg['BLOCK_K']}", f"num_warps={cfg['num_warps']}"]


def _step_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    """One time step: BLOCK_B batch rows and BLOCK hidden units of one direction a program."""
    # the step's offsets change every launch: specializing on their values (1, multiples of 16)
    # would compile several variants of one kernel
    w(f"@triton.jit(do_not_specialize={list(PER_STEP)!r})")
    constexprs = [f"{c}: tl.constexpr" for c in ("HAS_BIAS", "BLOCK_B", "BLOCK", "BLOCK_K")]
    for line in wrap_call(f"def {name}", PARAMS + constexprs, ":", w.depth):
        w(line)
    w.indent()
    w("pid_b = tl.program_id(0)")
    w("pid_h = tl.program_id(1)")
    w("d = tl.program_id(2)  # the direction: 0 forwards, 1 backwards")
    w("t = t_fwd + d * (t_rev - t_fwd)")
    w("rb = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)")
    w("rh = pid_h * BLOCK + tl.arange(0, BLOCK)")
    w("b_mask = rb < B")
    w("h_mask = rh < H")
    w("mask = b_mask[:, None] & h_mask[None, :]")
    w("hp = hp_ptr + hp_off + d * hp_dir + rb[:, None] * hp_b  # h_{t-1}, row by row")
    _gates(w, kernel, "tl.load(hp + rk[None, :], mask=hk_mask, other=0.0)")
    w("c_at = d * B * H + rb[:, None] * H + rh[None, :]")
    _cell(w, kernel.space["mode"], "tl.load(cp_ptr + c_at, mask=mask, other=0.0)",
          "tl.load(hp + rh[None, :], mask=mask, other=0.0)")
    w("y_at = y_ptr + t * s_y_t + rb[:, None] * s_y_b + d * H + rh[None, :]")
    w("tl.store(y_at, h_new.to(y_ptr.dtype.element_ty), mask=mask)")
    w("if last:")
    w("    tl.store(hn_ptr + c_at, h_new.to(hn_ptr.dtype.element_ty), mask=mask)")
    w.dedent()
    w()


def _gates(w: Writer, kernel: Kernel, h_load: str) -> None:
    """acc_g = h_{t-1} @ W_hh^T + b_hh and gx_g = gx_t for each gate g of this block of units (rh);
    `h_load` loads the BLOCK_K slice rk of h_{t-1} (rows and columns in hk_mask)."""
    gates = GATES[kernel.space["mode"]]
    w(f"w_rows = whh_ptr + (d * {gates} * H + rh)[None, :] * H  # W_hh rows of the first gate")
    for g in range(gates):
        w(f"acc_{g} = tl.zeros((BLOCK_B, BLOCK), dtype=tl.float32)")
    w("for k in range(0, H, BLOCK_K):")
    w.indent()
    w("rk = k + tl.arange(0, BLOCK_K)")
    w("k_mask = rk < H")
    w("hk_mask = b_mask[:, None] & k_mask[None, :]")
    w(f"h = {h_load}")
    w("w_mask = k_mask[:, None] & h_mask[None, :]")
    precision = kernel.config.get("precision", "ieee")
    for g in range(gates):
        w(f"w_{g} = tl.load(w_rows + {g} * H * H + rk[:, None], mask=w_mask, other=0.0)")
        w(f'acc_{g} += tl.dot(h, w_{g}.to(h.dtype), input_precision="{precision}")')
    w.dedent()
    w(f"gx = gx_ptr + t * s_gx_t + rb[:, None] * s_gx_b + d * {gates} * H + rh[None, :]")
    for g in range(gates):
        w(f"gx_{g} = tl.load(gx + {g} * H, mask=mask, other=0.0).to(tl.float32)")
        w("if HAS_BIAS:")
        w(f"    acc_{g} += tl.load(bhh_ptr + d * {gates} * H + {g} * H + rh, mask=h_mask, "
          "other=0.0).to(tl.float32)[None, :]")


def _loop_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    """All time steps of one direction for BLOCK_B batch rows, all hidden units (module docstring)."""
    w("@triton.jit")
    constexprs = [f"{c}: tl.constexpr" for c in ("HAS_BIAS", "BLOCK_B", "BLOCK", "BLOCK_K")]
    for line in wrap_call(f"def {name}", LOOP_PARAMS + constexprs, ":", w.depth):
        w(line)
    w.indent()
    w("pid_b = tl.program_id(0)")
    w("d = tl.program_id(1)  # the direction: 0 forwards, 1 backwards")
    w("rb = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)")
    w("b_mask = rb < B")
    w("h0p = h0_ptr + d * B * H + rb[:, None] * H  # h_{-1} is h0, (D, B, H)")
    w("for step in range(0, T):")
    w.indent()
    w("t = step + d * (T - 1 - 2 * step)  # backwards from T - 1")
    # the first step reads h0 / c0, the others the output / c_n: each load of the one is masked
    # off while the other is read (no pointer select; a masked-off load touches no memory)
    # the step as a tensor of rows: the interpreter refuses a mask of Python bools
    w("at = tl.zeros((BLOCK_B, 1), dtype=tl.int32) + step")
    w("first = at == 0")
    w("later = at > 0")
    w("hp = y_ptr + (t - 1 + 2 * d) * s_y_t + rb[:, None] * s_y_b + d * H  # h_{t-1}: at t -+ 1")
    w("for j in range(0, H, BLOCK):")
    w.indent()
    w("rh = j + tl.arange(0, BLOCK)")
    w("h_mask = rh < H")
    w("mask = b_mask[:, None] & h_mask[None, :]")
    _gates(w, kernel, "tl.load(hp + rk[None, :], mask=hk_mask & later, other=0.0) + "
                      "tl.load(h0p + rk[None, :], mask=hk_mask & first, other=0.0)")
    w("c_at = d * B * H + rb[:, None] * H + rh[None, :]")
    _cell(w, kernel.space["mode"],
          "tl.load(cn_ptr + c_at, mask=mask & later, other=0.0) + "
          "tl.load(c0_ptr + c_at, mask=mask & first, other=0.0)",
          "tl.load(hp + rh[None, :], mask=mask & later, other=0.0) + "
          "tl.load(h0p + rh[None, :], mask=mask & first, other=0.0)")
    w("y_at = y_ptr + t * s_y_t + rb[:, None] * s_y_b + d * H + rh[None, :]")
    w("tl.store(y_at, h_new.to(y_ptr.dtype.element_ty), mask=mask)")
    w("tl.store(hn_ptr + c_at, h_new.to(hn_ptr.dtype.element_ty), mask=mask & (at == T - 1))")
    w.dedent()
    # the next step reads h_t, c_t stored by other threads of this program
    w("tl.debug_barrier()")
    w.dedent()
    w.dedent()
    w()


def _loop_launch(w: Writer, kernel: Kernel, name: str, tensors: list[str]) -> None:
    """One launch for every step of the layer: a program per BLOCK_B batch rows and direction."""
    cfg, dirs = kernel.config, kernel.space["dirs"]
    w(f"_grid = (triton.cdiv(_batch, {cfg['BLOCK_B']}), {dirs})")
    args = [*tensors, "_batch", "_hidden", "_steps", "*_s_gx", "*_s_y", *_constexprs(kernel)]
    for line in wrap_call(f"{name}[_grid]", args, "", w.depth):
        w(line)


def _cell(w: Writer, mode: str, c_prev: str, h_prev: str) -> None:
    """h_new (and c_n) from the pre-activations gx_g and recurrent products acc_g; `c_prev` and
    `h_prev` load this block of c_{t-1} and h_{t-1}."""
    if mode == "lstm":
        w("i = tl.sigmoid(gx_0 + acc_0)")
        w("f = tl.sigmoid(gx_1 + acc_1)")
        w(f"g = {_tanh('(gx_2 + acc_2)')}")
        w("o = tl.sigmoid(gx_3 + acc_3)")
        w(f"c = f * ({c_prev}).to(tl.float32) + i * g")
        w("tl.store(cn_ptr + c_at, c.to(cn_ptr.dtype.element_ty), mask=mask)")
        w(f"h_new = o * {_tanh('c')}")
    elif mode == "gru":
        w("r = tl.sigmoid(gx_0 + acc_0)")
        w("z = tl.sigmoid(gx_1 + acc_1)")
        w(f"n = {_tanh('(gx_2 + r * acc_2)')}")
        w(f"h_old = ({h_prev}).to(tl.float32)")
        w("h_new = (1.0 - z) * n + z * h_old")
    elif mode == "rnn_tanh":
        w(f"h_new = {_tanh('(gx_0 + acc_0)')}")
    else:
        w("h_new = tl.maximum(gx_0 + acc_0, 0.0)")


def _step_launches(w: Writer, kernel: Kernel, name: str, tensors: list[str]) -> None:
    """One launch per time step; the step's h_{t-1} is h0 first, then a slot of the output."""
    gx, whh, bhh, h0, c0, y, hn, cn = tensors
    cfg, dirs = kernel.config, kernel.space["dirs"]
    w(f"_grid = (triton.cdiv(_batch, {cfg['BLOCK_B']}), triton.cdiv(_hidden, {cfg['BLOCK']}), {dirs})")
    w("for _step in range(_steps):")
    w.indent()
    w("if _step == 0:  # h_{-1} is h0, (D, B, H)")
    w(f"    _hp, _cp, _hp_off, _hp_dir, _hp_b = {h0}, {c0}, 0, _batch * _hidden, _hidden")
    w("else:  # h_{t-1} is in the output: at step - 1 forwards, at T - step backwards")
    w(f"    _hp, _cp, _hp_off, _hp_b = {y}, {cn}, (_step - 1) * _s_y[0], _s_y[1]")
    w("    _hp_dir = (_steps + 1 - 2 * _step) * _s_y[0] + _hidden")
    args = [gx, whh, bhh, "_hp", "_cp", y, hn, cn, "_batch", "_hidden", "_step", "_steps - 1 - _step",
            "_hp_off", "_hp_dir", "_hp_b", "*_s_gx", "*_s_y", "_step == _steps - 1", *_constexprs(kernel)]
    for line in wrap_call(f"{name}[_grid]", args, "", w.depth):
        w(line)
    w.dedent()


def tuning_space(kernel: Kernel) -> list[dict]:
    cfg = kernel.config
    return [{k: cfg[k] for k in ("BLOCK_B", "BLOCK", "BLOCK_K", "num_warps")}]

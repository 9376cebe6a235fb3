"""One time step of a recurrent layer (LSTM, GRU, RNN) as a Triton kernel; the launcher walks the
sequence (coders/template/recurrent.py builds the kernel).

Each program owns BLOCK_B batch rows and BLOCK hidden units of one direction (grid axis 2) and
computes every gate of its units: the product h_{t-1} @ W_hh^T for its rows of each gate as tl.dot
over BLOCK_K slices of h_{t-1}, then the input projection gx_t (a matmul over all steps, bias b_ih
included) and b_hh are added and the cell update runs in fp32. h_t is stored into the output
sequence, which is where the next step reads h_{t-1} (at t - 1 forwards, t + 1 backwards): a step
reads the whole previous state and writes only its own block, so the state cannot be updated in
place. c_t is: each program reads and writes the same elements of c_n. The first step reads h0 and
c0 (zeros when the module got no state). The last step also writes h_n.

Gate order is PyTorch's: LSTM i, f, g, o; GRU r, z, n, with n = tanh(gx_n + r * (h W_hn + b_hn)).
"""

from __future__ import annotations

from coders.template.emit.common import Writer
from coders.template.emit.launch import Launcher, output_alloc, wrap_call
from coders.template.ir import Kernel
from coders.template.recurrent import GATES

PER_STEP = ("t_fwd", "t_rev", "hp_off", "hp_dir", "hp_b", "last")
PARAMS = ["gx_ptr", "whh_ptr", "bhh_ptr", "hp_ptr", "cp_ptr", "y_ptr", "hn_ptr", "cn_ptr", "B", "H",
          "t_fwd", "t_rev", "hp_off", "hp_dir", "hp_b", "s_gx_t", "s_gx_b", "s_y_t", "s_y_b", "last"]


def _tanh(x: str) -> str:
    return f"(2.0 * tl.sigmoid(2.0 * {x}) - 1.0)"  # no libdevice: the interpreter runs it too


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    gates = GATES[kernel.space["mode"]]
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
    w(f"w_rows = whh_ptr + (d * {gates} * H + rh)[None, :] * H  # W_hh rows of the first gate")
    for g in range(gates):
        w(f"acc_{g} = tl.zeros((BLOCK_B, BLOCK), dtype=tl.float32)")
    w("for k in range(0, H, BLOCK_K):")
    w.indent()
    w("rk = k + tl.arange(0, BLOCK_K)")
    w("k_mask = rk < H")
    w("h = tl.load(hp + rk[None, :], mask=b_mask[:, None] & k_mask[None, :], other=0.0)")
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
    w("c_at = d * B * H + rb[:, None] * H + rh[None, :]")
    _cell(w, kernel.space["mode"])
    w("y_at = y_ptr + t * s_y_t + rb[:, None] * s_y_b + d * H + rh[None, :]")
    w("tl.store(y_at, h_new.to(y_ptr.dtype.element_ty), mask=mask)")
    w("if last:")
    w("    tl.store(hn_ptr + c_at, h_new.to(hn_ptr.dtype.element_ty), mask=mask)")
    w.dedent()
    w()


def _cell(w: Writer, mode: str) -> None:
    """h_new (and c_n) from the pre-activations gx_g and recurrent products acc_g."""
    if mode == "lstm":
        w("i = tl.sigmoid(gx_0 + acc_0)")
        w("f = tl.sigmoid(gx_1 + acc_1)")
        w(f"g = {_tanh('(gx_2 + acc_2)')}")
        w("o = tl.sigmoid(gx_3 + acc_3)")
        w("c = f * tl.load(cp_ptr + c_at, mask=mask, other=0.0).to(tl.float32) + i * g")
        w("tl.store(cn_ptr + c_at, c.to(cn_ptr.dtype.element_ty), mask=mask)")
        w(f"h_new = o * {_tanh('c')}")
    elif mode == "gru":
        w("r = tl.sigmoid(gx_0 + acc_0)")
        w("z = tl.sigmoid(gx_1 + acc_1)")
        w(f"n = {_tanh('(gx_2 + r * acc_2)')}")
        w("h_old = tl.load(hp + rh[None, :], mask=mask, other=0.0).to(tl.float32)")
        w("h_new = (1.0 - z) * n + z * h_old")
    elif mode == "rnn_tanh":
        w(f"h_new = {_tanh('(gx_0 + acc_0)')}")
    else:
        w("h_new = tl.maximum(gx_0 + acc_0, 0.0)")


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    """Outputs allocated, then one launch per time step; h0 / c0 default to zeros. Local names start
    with "_": graph values never do (trace/signatures.py), so an operand is never shadowed."""
    space, cfg = kernel.space, kernel.config
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
    h0 = roles.get("h0", "_h0")
    c0, cn = (roles.get("c0", "_c0"), cn) if lstm else (hn, hn)
    w(f"_grid = (triton.cdiv(_batch, {cfg['BLOCK_B']}), triton.cdiv(_hidden, {cfg['BLOCK']}), {dirs})")
    w(f"_s_gx = ({gx}.stride({t_dim}), {gx}.stride({b_dim}))")
    w(f"_s_y = ({y}.stride({t_dim}), {y}.stride({b_dim}))")
    w("for _step in range(_steps):")
    w.indent()
    w("if _step == 0:  # h_{-1} is h0, (D, B, H)")
    w(f"    _hp, _cp, _hp_off, _hp_dir, _hp_b = {h0}, {c0}, 0, _batch * _hidden, _hidden")
    w("else:  # h_{t-1} is in the output: at step - 1 forwards, at T - step backwards")
    w(f"    _hp, _cp, _hp_off, _hp_b = {y}, {cn}, (_step - 1) * _s_y[0], _s_y[1]")
    w("    _hp_dir = (_steps + 1 - 2 * _step) * _s_y[0] + _hidden")
    args = [gx, roles["whh"], roles.get("bhh", roles["whh"]), "_hp", "_cp", y, hn, cn, "_batch", "_hidden",
            "_step", "_steps - 1 - _step", "_hp_off", "_hp_dir", "_hp_b", "*_s_gx", "*_s_y",
            "_step == _steps - 1", f"HAS_BIAS={'bhh' in roles}", f"BLOCK_B={cfg['BLOCK_B']}",
            f"BLOCK={cfg['BLOCK']}", f"BLOCK_K={cfg['BLOCK_K']}", f"num_warps={cfg['num_warps']}"]
    for line in wrap_call(f"{name}[_grid]", args, "", w.depth):
        w(line)
    w.dedent()
    launcher.finish(w)
    w.dedent()
    w()


def tuning_space(kernel: Kernel) -> list[dict]:
    cfg = kernel.config
    return [{k: cfg[k] for k in ("BLOCK_B", "BLOCK", "BLOCK_K", "num_warps")}]

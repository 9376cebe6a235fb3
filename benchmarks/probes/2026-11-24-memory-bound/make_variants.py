"""Write the kernel variants of the memory-bound probe (BENCHMARKS.md, 2026-11-24 fourth session).

    python benchmarks/probes/2026-11-24-memory-bound/make_variants.py OUT_DIR [1|...|10]

Probe 1: template-coder programs (port / fused, then a tile, warps or persistent step) of the code
at commit 271c4bf, the same with L2 eviction hints, and hand-written forms from templates/ (per-lane
online softmax, cooperative split rows, the algebraic one-pass KL, one-pass column softmax).
Probe 2: leaner hand forms (finite running-max start, the target logit loaded, unmasked main loop).
Probe 3 (fifth session): per-thread groups sharing one running max (cross-entropy), scores computed
once with a rescale pass over rows still in L2 (bmm softmax), an exp2/FFMA column softmax with
streaming loads and stores, a persistent group norm (one or two programs per SM walk whole groups,
the second pass backwards) whose second read should find the group in L1/L2.
Probe 4 (sixth session): where bmm softmax's time goes (each pass alone, exps replaced by an FFMA)
and its exps moved off the SFU (an FMA polynomial, f16x2 pairs); group norm with each group split
over 2-8 cooperating persistent programs (tickets, a per-group counter) so fewer groups are in
flight and the second read hits L2.
Probe 5: group norm with fewer persistent programs than SMs, the group's first chunk held in
registers, lockstep teams of programs per group; bmm softmax at larger tiles.
Probe 6: group norm lockstep teams whose members own channel ranges, with a fenced counter or with
each member's sums published as one 64-bit word that is its own flag.
Probe 7: what the team forms lose at a team of one (a ticket, or an atomic round trip per group).
Probe 8: group norm teams of two with more warps per SM (registers capped); the template's fused
group norm with its last pass walked channel by channel.
Probe 9: the best group norm team forms at 1 to 4 pipeline stages, and with 2-8 chunks' loads in
flight in their first pass, and persistent and team forms that start each group on a rotated channel.
Probe 10: group norm teams reading through TMA boxes multi-buffered in shared memory.
Each file defines ModelNew; run.py times them.
"""

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.resolve().parents[2]))  # the repository: benchmarks/ is not installed
OUT = Path(sys.argv[1])
PROBE = sys.argv[2] if len(sys.argv) > 2 else "1"


def put(task: str, name: str, text: str) -> None:
    (OUT / task).mkdir(parents=True, exist_ok=True)
    (OUT / task / f"{name}.py").write_text(text)


def from_template(task: str, name: str, template: str, **subs) -> None:
    text = (HERE / "templates" / template.replace(".py", ".tmpl")).read_text()
    for key, value in subs.items():
        assert key in text, (key, template)
        text = text.replace(key, str(value))
    put(task, name, text)


def evict(src: str) -> str:
    """First-pass loads keep their lines in L2 (evict_last), later passes let them go (evict_first)."""
    head, sep, tail = src.partition("# pass 1 of")
    marker = "# pass 2 of" if "# pass 2 of" in tail else "# last pass"
    mid, sep2, last = tail.partition(marker)
    mid = mid.replace("other=0).to(", 'other=0, eviction_policy="evict_last").to(')
    end = last.index("\ndef ")
    last = last[:end].replace("other=0).to(", 'other=0, eviction_policy="evict_first").to(') + last[end:]
    return head + sep + mid + sep2 + last


def probe_1() -> None:
    from benchmarks.gpu_bench import build
    from coders.template import TemplateCoder
    from mtmc.tasks import load_task
    coder = TemplateCoder()
    spec = {
        "log_softmax_vocab": ["port", "fused+tile BLOCK=32768", "fused+tile BLOCK=16384",
                              "fused+tile BLOCK=32768+num_warps 16", "fused+persistent"],
        "kl_div_rows": ["fused", "fused+tile BLOCK=32768", "fused+tile BLOCK=16384"],
        "cross_entropy_smooth_bf16": ["fused", "fused+tile BLOCK=2048", "fused+tile BLOCK=32768"],
        "softmax_channels_fp16": ["fused"],
        "groupnorm": ["fused", "fused+tile BLOCK=4096"],
    }
    for task, variants in spec.items():
        for variant in variants:
            source = build(coder, load_task(task), variant).source
            name = variant.replace("fused+", "").replace(" ", "").replace("=", "").replace("+", "_")
            put(task, name.replace("BLOCK", "B"), source)
            hinted = task in ("log_softmax_vocab", "kl_div_rows", "groupnorm")
            if hinted and name in ("port", "fused", "tileBLOCK4096"):
                put(task, name.replace("BLOCK", "B") + "_evict", evict(source))
    ce = (OUT / "cross_entropy_smooth_bf16" / "tileB32768.py").read_text()
    put("cross_entropy_smooth_bf16", "tileB65536", ce.replace("32768)", "65536)"))
    for b, w in [(4096, 8), (8192, 16), (2048, 8)]:
        for e1, e2, tag in [('"evict_last"', '"evict_first"', "ev"), ('""', '""', "")]:
            from_template("log_softmax_vocab", f"lane{tag}_B{b}_w{w}", "lane_log_softmax.py",
                          BLOCKV=b, WARPS=w, EVICT1=e1, EVICT2=e2)
    for s, w in [(2, 16), (4, 8), (4, 16), (8, 4)]:
        from_template("log_softmax_vocab", f"coop_S{s}_w{w}", "coop_log_softmax.py", SPLIT=s, WARPS=w)
    for b, w in [(1024, 4), (2048, 8), (4096, 8), (4096, 16)]:
        from_template("kl_div_rows", f"alg_B{b}_w{w}", "alg_kl.py", BLOCKV=b, WARPS=w)
    for b, w in [(1024, 4), (2048, 4), (2048, 8), (4096, 8), (4096, 16), (8192, 16)]:
        from_template("cross_entropy_smooth_bf16", f"lane_B{b}_w{w}", "lane_ce.py", BLOCKV=b, WARPS=w)
    for bn, w in [(16, 4), (32, 4), (32, 8), (64, 8), (64, 16), (128, 16)]:
        from_template("softmax_channels_fp16", f"one_N{bn}_w{w}", "one_softmax_ch.py", BN=bn, WARPS=w)
    for s, w in [(4, 32), (8, 16), (16, 8), (32, 4)]:
        from_template("groupnorm", f"coop_S{s}_w{w}", "coop_gn.py", SPLIT=s, WARPS=w)


def probe_2() -> None:
    for b, w in [(1024, 4), (2048, 4), (2048, 8), (1024, 2), (512, 2), (4096, 8)]:
        for tail in (True, False):
            from_template("cross_entropy_smooth_bf16", f"lean{'T' if tail else ''}_B{b}_w{w}", "lean_ce.py",
                          BLOCKV=b, WARPS=w, TAILV=tail)
    from_template("cross_entropy_smooth_bf16", "lane_B1024_w4", "lane_ce.py", BLOCKV=1024, WARPS=4)
    from_template("kl_div_rows", "alg_B1024_w4", "alg_kl.py", BLOCKV=1024, WARPS=4)
    for b, w in [(1024, 4), (512, 2), (512, 4), (2048, 4), (1024, 8)]:
        from_template("kl_div_rows", f"lean_B{b}_w{w}", "lean_kl.py", BLOCKV=b, WARPS=w)
    for bn, w in [(32, 2), (16, 2), (64, 4), (32, 4), (128, 8), (8, 1), (16, 1)]:
        from_template("softmax_channels_fp16", f"one_N{bn}_w{w}", "one_softmax_ch.py", BN=bn, WARPS=w)
    for s, w in [(16, 8), (32, 4), (64, 2), (8, 16)]:
        from_template("groupnorm", f"coopvol_S{s}_w{w}", "coop_gn_vol.py", SPLIT=s, WARPS=w)


def probe_3() -> None:
    from benchmarks.gpu_bench import build
    from coders.template import TemplateCoder
    from mtmc.tasks import load_task
    coder = TemplateCoder()
    for task in ("cross_entropy_smooth_bf16", "bmm_softmax_fp16", "softmax_channels_fp16", "groupnorm"):
        put(task, "fused", build(coder, load_task(task), "fused").source)
    from_template("cross_entropy_smooth_bf16", "leanT_B1024_w4", "lean_ce.py", BLOCKV=1024, WARPS=4,
                  TAILV=True)
    for r, g, w in [(128, 8, 4), (256, 8, 8), (64, 8, 2), (128, 16, 4), (256, 4, 4), (128, 8, 8)]:
        for exp2 in (False, True):
            for tail in (False, True):
                name = f"group{'2' if exp2 else ''}{'T' if tail else ''}_R{r}_G{g}_w{w}"
                from_template("cross_entropy_smooth_bf16", name, "group_ce.py", RV=r, GV=g, WARPS=w,
                              EXPV=exp2, TAILV=tail)
    for bm, bn, w, stages in [(64, 64, 4, 2), (64, 128, 4, 2), (128, 64, 8, 2), (32, 64, 4, 2),
                              (16, 64, 4, 2), (16, 128, 4, 2), (32, 128, 4, 3), (64, 64, 4, 3)]:
        for rev in (False, True):
            from_template("bmm_softmax_fp16", f"once{'R' if rev else ''}_M{bm}_N{bn}_w{w}_s{stages}",
                          "once_bmm_softmax.py", BMV=bm, BNV=bn, WARPS=w, STAGES=stages, REVV=rev)
    from_template("softmax_channels_fp16", "one_N32_w2", "one_softmax_ch.py", BN=32, WARPS=2)
    for bn, w in [(32, 2), (32, 4), (64, 4), (16, 1)]:
        for evl, cms, tag in [('""', '""', ""), ('"evict_first"', '".cs"', "cs")]:
            from_template("softmax_channels_fp16", f"one2{tag}_N{bn}_w{w}", "one2_softmax_ch.py", BN=bn,
                          WARPS=w, EVL=evl, CMS=cms)

    for block, warps in [(4096, 8), (8192, 16), (4096, 16), (16384, 32)]:
        for per_sm in (1, 2):
            for rev in (False, True):
                from_template("groupnorm", f"persist{'R' if rev else ''}_B{block}_w{warps}_x{per_sm}",
                              "persist_gn.py", BLOCKV=block, WARPS=warps, PERSM=per_sm, REVV=rev)


def probe_4() -> None:
    from benchmarks.gpu_bench import build
    from coders.template import TemplateCoder
    from mtmc.tasks import load_task
    coder = TemplateCoder()
    for task in ("bmm_softmax_fp16", "groupnorm"):
        put(task, "fused", build(coder, load_task(task), "fused").source)
    # bmm softmax: where its time goes (one pass alone, exps replaced by an FFMA) and exps moved off
    # the SFU (FMA polynomial, f16x2 pairs); HOW codes in templates/bmm_softmax_exp.tmpl
    forms = {"base": (0, 0, 1, 1), "p1only": (0, 0, 1, 0), "p1fake": (3, 0, 1, 0), "p2only": (0, 0, 0, 1),
             "p2fake": (0, 3, 0, 1), "poly5p1": (1, 0, 1, 1), "poly3p1": (4, 0, 1, 1), "h2p1": (2, 0, 1, 1),
             "poly5both": (1, 1, 1, 1), "h2both": (2, 2, 1, 1)}
    for bm, bn, w, stages in [(128, 64, 8, 2), (64, 128, 4, 3), (128, 128, 8, 3)]:
        for form, (p1, p2, pass1, pass2) in forms.items():
            from_template("bmm_softmax_fp16", f"{form}_M{bm}_N{bn}_w{w}", "bmm_softmax_exp.py", BMV=bm,
                          BNV=bn, WARPS=w, STAGES=stages, P1V=p1, P2V=p2, PASS1V=pass1, PASS2V=pass2)
    from_template("groupnorm", "persistR_B16384_w32_x1", "persist_gn.py", BLOCKV=16384, WARPS=32, PERSM=1,
                  REVV=True)
    for split in (2, 4, 8):
        for block, warps in [(16384, 32), (8192, 16), (4096, 8)]:
            for per_sm in (1, 2):
                from_template("groupnorm", f"split_S{split}_B{block}_w{warps}_x{per_sm}", "split_gn.py",
                              SPLIT=split, BLOCKV=block, WARPS=warps, PERSM=per_sm, REVV=True)
    from_template("groupnorm", "splitF_S4_B8192_w16_x1", "split_gn.py", SPLIT=4, BLOCKV=8192, WARPS=16,
                  PERSM=1, REVV=False)


def probe_5() -> None:
    # group norm: fewer persistent programs than SMs (fewer groups in flight), the group's first
    # chunk held in registers, lockstep teams of 2 or 4 programs per group; bmm softmax: larger tiles
    from_template("groupnorm", "persistR_B16384_w32_x1", "persist_gn.py", BLOCKV=16384, WARPS=32, PERSM=1,
                  REVV=True)
    for block, warps, fracs in [(16384, 32, (0.5, 0.67, 0.75, 1.0)), (8192, 16, (0.5, 0.75, 1.0, 2.0))]:
        for frac in fracs:
            for hold in (False, True):
                from_template("groupnorm", f"flat{'H' if hold else ''}_B{block}_w{warps}_f{frac}",
                              "persist_gn2.py", BLOCKV=block, WARPS=warps, FRAC=frac, HOLDV=hold)
    for split in (2, 4):
        for block, warps, per_sm in [(16384, 32, 1), (8192, 16, 1), (8192, 16, 2), (4096, 8, 2)]:
            from_template("groupnorm", f"team_S{split}_B{block}_w{warps}_x{per_sm}", "team_gn.py",
                          SPLIT=split, BLOCKV=block, WARPS=warps, PERSM=per_sm, REVV=True)
    for bm, bn, w, stages in [(128, 128, 8, 2), (128, 128, 8, 4), (64, 256, 8, 3), (128, 256, 16, 2),
                              (256, 64, 16, 2), (256, 128, 16, 2), (64, 128, 4, 4)]:
        from_template("bmm_softmax_fp16", f"base_M{bm}_N{bn}_w{w}_s{stages}", "bmm_softmax_exp.py", BMV=bm,
                      BNV=bn, WARPS=w, STAGES=stages, P1V=0, P2V=0, PASS1V=1, PASS2V=1)


def probe_6() -> None:
    # group norm: lockstep teams whose members own channel ranges (no per-element division)
    from_template("groupnorm", "persistR_B16384_w32_x1", "persist_gn.py", BLOCKV=16384, WARPS=32, PERSM=1,
                  REVV=True)
    for split in (1, 2, 4, 8):
        for block, warps, per_sm in [(16384, 32, 1), (8192, 16, 2), (4096, 8, 4), (8192, 16, 1)]:
            from_template("groupnorm", f"teamch_S{split}_B{block}_w{warps}_x{per_sm}", "team_ch_gn.py",
                          SPLIT=split, BLOCKV=block, WARPS=warps, PERSM=per_sm, STAGESV=3)

    # the same teams publishing their sums as one 64-bit word that is its own flag (no fence)
    for split, block, warps, per_sm in [(1, 16384, 32, 1), (2, 16384, 32, 1), (4, 16384, 32, 1),
                                        (8, 16384, 32, 1), (2, 4096, 8, 4), (4, 4096, 8, 4), (8, 4096, 8, 4),
                                        (2, 8192, 16, 2), (4, 8192, 16, 2)]:
        from_template("groupnorm", f"teamx_S{split}_B{block}_w{warps}_x{per_sm}", "team_x_gn.py",
                      SPLIT=split, BLOCKV=block, WARPS=warps, PERSM=per_sm, MAXNREGV=None, STAGESV=3)



def probe_7() -> None:
    # group norm: what costs the team forms 14 points at S=1 (a ticket for the first group, or
    # one atomic round trip per group), and the 64-bit-word teams at more sizes
    for ticket in (False, True):
        for rtrip in (False, True):
            from_template("groupnorm", f"persistAB_t{int(ticket)}_r{int(rtrip)}", "persist_ab_gn.py",
                          BLOCKV=16384, WARPS=32, PERSM=1, REVV=True, TICKV=ticket, RTRIPV=rtrip)
    for split, block, warps, per_sm in [(2, 8192, 16, 2), (2, 4096, 8, 2), (2, 8192, 8, 2), (2, 16384, 16, 2),
                                        (4, 16384, 16, 2), (2, 4096, 4, 4), (2, 8192, 16, 1)]:
        from_template("groupnorm", f"teamx_S{split}_B{block}_w{warps}_x{per_sm}", "team_x_gn.py",
                      SPLIT=split, BLOCKV=block, WARPS=warps, PERSM=per_sm, MAXNREGV=None, STAGESV=3)



def probe_8() -> None:
    # group norm teams of two: more warps per SM (registers capped so two teams share an SM)
    teams = [(2, 8192, 16, 1, None), (2, 8192, 16, 2, 64), (2, 4096, 8, 4, 64), (2, 8192, 32, 1, None),
             (4, 8192, 16, 2, 64), (2, 4096, 16, 2, 64), (2, 4096, 8, 4, 56), (2, 16384, 32, 1, 64),
             (4, 4096, 8, 4, 64)]
    for split, block, warps, per_sm, maxnreg in teams:
        from_template("groupnorm", f"teamx_S{split}_B{block}_w{warps}_x{per_sm}_r{maxnreg}", "team_x_gn.py",
                      SPLIT=split, BLOCKV=block, WARPS=warps, PERSM=per_sm, MAXNREGV=maxnreg, STAGESV=3)

    # the template's fused program (the coder's at run time: b23d4c6 in the recorded run) and that
    # program (fused_ch_gn.tmpl, from b23d4c6) with its last pass walked channel by channel
    # (scalar weight and bias, no per-element division), forwards or backwards
    from benchmarks.gpu_bench import build
    from coders.template import TemplateCoder
    from mtmc.tasks import load_task
    put("groupnorm", "fused", build(TemplateCoder(), load_task("groupnorm"), "fused").source)
    for block in (4096, 8192, 16384):
        for rev in (False, True):
            from_template("groupnorm", f"fusedch{'R' if rev else ''}_B{block}", "fused_ch_gn.py",
                          BLOCKV=block, REVV=rev)



def probe_9() -> None:
    # group norm: the best team forms of probes 6-8 at 1-4 pipeline stages (3 is the default)
    for stages in (1, 2, 3, 4):
        for template, split, block, warps in [("team_x_gn.py", 2, 8192, 16), ("team_x_gn.py", 2, 16384, 32),
                                              ("team_ch_gn.py", 2, 16384, 32)]:
            extra = {"MAXNREGV": None} if template == "team_x_gn.py" else {}
            from_template("groupnorm", f"{template[:6]}_S{split}_B{block}_w{warps}_s{stages}", template,
                          SPLIT=split, BLOCKV=block, WARPS=warps, PERSM=1, STAGESV=stages, **extra)

    # teams of two whose first pass keeps 2 or 4 chunks' loads in flight (team_u_gn.tmpl)
    for block, warps, unroll in [(8192, 16, 2), (4096, 16, 2), (4096, 16, 4), (8192, 32, 2), (4096, 8, 4),
                                 (2048, 8, 8), (8192, 16, 1)]:
        from_template("groupnorm", f"team_u_S2_B{block}_w{warps}_u{unroll}", "team_u_gn.py", SPLIT=2,
                      BLOCKV=block, WARPS=warps, PERSM=1, STAGESV=3, MAXNREGV=None, UNROLLV=unroll)

    # programs that start their group on different channels (rotated), so the SMs do not walk
    # their 512 KB-aligned groups in step
    for rot in (False, True):
        for block, warps in [(16384, 32), (8192, 16)]:
            from_template("groupnorm", f"persistRot{int(rot)}_B{block}_w{warps}", "persist_rot_gn.py",
                          BLOCKV=block, WARPS=warps, PERSM=1, REVV=True, ROTV=rot)
            from_template("groupnorm", f"team_rot{int(rot)}_S2_B{block}_w{warps}", "team_rot_gn.py", SPLIT=2,
                          BLOCKV=block, WARPS=warps, PERSM=1, STAGESV=3, MAXNREGV=None, ROTV=rot)



def probe_10() -> None:
    # group norm teams whose loads are TMA boxes of (ROWS, WIDTH) values, multi-buffered in shared
    # memory by the loop pipeliner (the task's HW of 16384 divides into boxes; GPU only)
    forms = [(2, 32, 256, 8, 3, False), (2, 32, 256, 8, 3, True), (2, 32, 256, 16, 3, False),
             (2, 16, 256, 8, 4, False), (2, 32, 256, 8, 4, True), (2, 64, 128, 8, 3, False),
             (1, 32, 256, 8, 3, False), (1, 32, 256, 8, 3, True), (4, 32, 256, 8, 3, False)]
    for split, rows, width, warps, stages, tma2 in forms:
        name = f"team_tma_S{split}_R{rows}x{width}_w{warps}_s{stages}{'_T' if tma2 else ''}"
        from_template("groupnorm", name, "team_tma_gn.py", SPLIT=split, ROWSV=rows, WIDTHV=width, WARPS=warps,
                      STAGESV=stages, TMA2V=tma2, PERSM=1)


{"1": probe_1, "2": probe_2, "3": probe_3, "4": probe_4, "5": probe_5, "6": probe_6, "7": probe_7,
 "8": probe_8, "9": probe_9, "10": probe_10}[PROBE]()

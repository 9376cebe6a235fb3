"""Which latest programs (.kb/export-l{1,2}-s20) KernelBench's eval already judged, byte for byte."""
import hashlib, json, subprocess, sys
from pathlib import Path
R = Path("/work/main")
def sh(*a): return subprocess.run(a, cwd=R, capture_output=True, text=True).stdout
files = set()
for line in sh("git", "log", "--all", "--name-only", "--format=COMMIT %h").splitlines():
    if line.startswith("COMMIT"): c = line.split()[1]
    elif line.endswith(".json") and ("/kb-eval" in line or "/kb-l" in line): files.add((c, line))
h = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()[:16] if p.exists() else None
judged = {}  # program hash -> list of (kb_correct, file, ms...)
missing = set()
seen_paths = set()
for c, f in sorted(files):
    if f in seen_paths: continue
    txt = sh("git", "show", f"{c}:{f}")
    if not txt: continue
    seen_paths.add(f)
    for row in json.loads(txt).get("rows", []):
        if row.get("kb_correct") is None: continue
        p = R / row["bench"] / row["task"] / "kernel.py"
        k = h(p)
        if k is None: missing.add(row["bench"]); continue
        judged.setdefault(k, []).append((row["kb_correct"], f, row.get("kb_ms"), row.get("candidate_ms"), row.get("kb_ref_ms"), row.get("eager_ms")))
print("benches missing locally:", sorted(missing), file=sys.stderr)
out = {}
for lvl in ("l1", "l2"):
    for d in sorted((R / f".kb/export-{lvl}-s20").iterdir()):
        k = h(d / "kernel.py")
        out[f"{lvl}/{d.name}"] = {"hash": k, "judged": judged.get(k, [])}
json.dump(out, open("/tmp/show6/judged.json", "w"), indent=1)
for lvl in ("l1", "l2"):
    rows = {t: v for t, v in out.items() if t.startswith(lvl)}
    same = [t for t, v in rows.items() if v["judged"]]
    agree = [t for t in same if all(j[0] for j in rows[t]["judged"])]
    print(lvl, "latest judged byte-identical:", len(same), "all kb_correct:", len(agree),
          "refused:", [t for t in same if t not in agree])

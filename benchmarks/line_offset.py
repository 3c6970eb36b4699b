"""Where the CAS flag sits in its page: does it move the CAS ping-pong, and does it explain a peer?

Two measurements, each round at one vCPU placement held by fidelity.Hold and labelled by the probe:

1. **Offsets.** The bare CAS loop of benchmarks/fidelity.c with its flag at every multiple of STEP
   bytes in a fresh page (`fidelity offsets`), in a rotated order. Per offset: the median over rounds
   of its minimum / the round's median over offsets, and the split-half correlation of those
   per-offset medians (near 0: no pattern; near 1: the offset decides). Page-offset bits are the
   same in the guest's and the host's physical addresses, so an offset effect survives a VM.
2. **nviennot's port, three builds** (from ../shared/peers/nviennot_port.c, patched in a temporary
   folder, as fidelity.py patches c2clat): as shipped (a 1-byte flag in `.bss`), the flag moved to
   offset 0 of a fresh `mmap`ed page as corelat's, and a 4-byte flag in `.bss`; each against the bare
   loop (and corelat's kernel) in the same round, the order rotated.

    python benchmarks/line_offset.py --placement "~25 ns" --rounds 30
    python benchmarks/line_offset.py --quick         # 2 rounds, no re-roll: for CI
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity import REPO, Hold, agree, build, compiler, median_ci, placement, probe, sizes, the_pair  # noqa: E402

FLAG = "static _Alignas(128) atomic_bool flag;"
NVIENNOT = {
    "as shipped": [],
    "flag at offset 0 of an mmap'd page": [
        (FLAG, "static atomic_bool *flagp;\n#define flag (*flagp)"),
        ("#include <x86intrin.h>", "#include <x86intrin.h>\n#include <string.h>\n#include <sys/mman.h>"),
        ("  pthread_barrier_init(&barrier, 0, 2);",
         "  { char *pg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
         "    memset(pg, 0, 4096); flagp = (atomic_bool *)pg; }\n  pthread_barrier_init(&barrier, 0, 2);"),
    ],
    "a 4-byte flag": [
        (FLAG, "static _Alignas(128) atomic_uint flag;"),
        ("bool e; do { e = 0; } while (!atomic_compare_exchange_strong_explicit(&flag, &e, 1,",
         "unsigned e; do { e = 0; } while (!atomic_compare_exchange_strong_explicit(&flag, &e, 1u,"),
        ("bool e; do { e = 1; } while (!atomic_compare_exchange_strong_explicit(&flag, &e, 0,",
         "unsigned e; do { e = 1; } while (!atomic_compare_exchange_strong_explicit(&flag, &e, 0u,"),
    ],
}


def build_nviennot(tmp):
    """{build name: executable}, or {} where ../shared/peers is absent or the source changed."""
    src = Path(os.environ.get("CORELAT_SHARED", REPO.parent / "shared")) / "peers" / "nviennot_port.c"
    if not src.is_file() or not str(os.uname().machine).startswith(("x86_64", "i686")):
        return {}
    text, exes = src.read_text(), {}
    for i, (name, edits) in enumerate(NVIENNOT.items()):
        t = text
        for old, new in edits:
            if old not in t:
                print(f"# line_offset: nviennot_port.c changed ({old[:40]!r} not found): {name!r} skipped")
                break
            t = t.replace(old, new)
        else:
            (tmp / f"nv{i}.c").write_text(t)
            cmd = [compiler(), "-O2", "-pthread", str(tmp / f"nv{i}.c"), "-o", str(tmp / f"nv{i}")]
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if r.returncode == 0:
                exes[name] = tmp / f"nv{i}"
    return exes


def lines(cmd):
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=True, timeout=600)
    return {w: float(mn) for w, mn, _ in (line.split() for line in out.stdout.splitlines())}


def one_round(exe, nv, a, b, rt, samples, step, r):
    """The offsets' minima, the nviennot builds' and the bare loop's minima, and the probes."""
    probes = [probe(exe, a, b)]
    offs = lines([exe, "offsets", a, b, rt, samples, step])
    probes.append(probe(exe, a, b))
    got = {}
    steps = [("bare", None), *nv.items()]
    for name, nexe in steps[r % len(steps):] + steps[:r % len(steps)]:
        if nexe is None:
            got.update(lines([exe, "cas", a, b, rt, samples, 1]))
        else:
            out = subprocess.run([str(nexe), "1", str(a), str(b), str(rt), str(samples)],
                                 capture_output=True, text=True, check=True, timeout=600)
            got[name] = float(out.stdout.split()[1])
        probes.append(probe(exe, a, b))
    return offs, got, probes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--placement", default="~25 ns", help='held placement, e.g. "~100 ns"; "any": no re-roll')
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--step", type=int, default=None, help="offset step in bytes (default 64)")
    ap.add_argument("--round-trips", type=int, default=None)
    ap.add_argument("--samples", type=int, default=None)
    args = ap.parse_args(argv)
    rounds, rt, samples = sizes(args, (2, 200, 20), (30, 1000, 100))
    step = args.step or (512 if args.quick else 64)
    want = "any" if args.quick else args.placement
    pair = the_pair("line_offset")
    if not pair:
        return
    a, b = pair
    offs_rows, nv_rows, dropped, labels = [], [], 0, set()
    with tempfile.TemporaryDirectory(prefix="corelat-line-offset-") as tmp:
        tmp = Path(tmp)
        exe, nv = build(tmp), build_nviennot(tmp)
        with Hold((a, b)) as hold:
            for r in range(rounds):
                hold.next_round(want, exe, a, b)
                offs, got, probes = one_round(exe, nv, a, b, rt, samples, step, r)
                label = placement(min(probes))
                if not args.quick and (not agree(probes) or (want != "any" and label != want)):
                    dropped += 1  # --quick keeps every round: the code runs, the figures are moot
                    continue
                labels.add(label)
                mid = statistics.median(offs.values())
                offs_rows.append({int(k[len("offset"):]): v / mid for k, v in offs.items()})
                nv_rows.append(got)
    kept_at = ", ".join(sorted(labels)) or "none"
    print(f"# CAS on CPUs {a} and {b}, placement {want} (held); rounds kept at {kept_at}: "
          f"{len(offs_rows)} of {rounds}; {samples} samples x {rt} round trips")
    report_offsets(offs_rows)
    report_nviennot(nv_rows, nv)


def pearson(x, y):
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((u - mx) * (v - my) for u, v in zip(x, y))
    sxx, syy = sum((u - mx) ** 2 for u in x), sum((v - my) ** 2 for v in y)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float("nan")


def report_offsets(rows):
    if not rows:
        return
    offsets = sorted(rows[0])
    print(f"\n| flag offset (bytes) | min / round's median over offsets, median of {len(rows)} rounds "
          "[95 % CI] |")
    print("|---:|---|")
    for o in offsets:
        m, lo, hi = median_ci([r[o] for r in rows])
        print(f"| {o} | {m:.3f} [{lo:.3f}, {hi:.3f}] |")
    if len(rows) >= 4 and len(offsets) >= 3:
        halves = [[statistics.median(r[o] for r in rows[k::2]) for o in offsets] for k in (0, 1)]
        print(f"\nsplit-half correlation of the per-offset medians: {pearson(*halves):.2f}")
    spread = statistics.median(max(r.values()) / min(r.values()) for r in rows)
    print(f"within a round, max / min over offsets (median over rounds): {spread:.2f}")


def report_nviennot(rows, nv):
    if not nv:
        print("\n(nviennot's port: ../shared/peers not found or not x86-64)")
        return
    if not rows:
        return
    print(f"\n| nviennot's port, {len(rows)} rounds | / bare [95 % CI] |")
    print("|---|---|")
    for name in [*nv, "corelat"]:
        m, lo, hi = median_ci([r[name] / r["bare"] for r in rows if name in r])
        print(f"| {name if name != 'corelat' else '(corelat kernel)'} | {m:.3f} [{lo:.3f}, {hi:.3f}] |")


if __name__ == "__main__":
    main()

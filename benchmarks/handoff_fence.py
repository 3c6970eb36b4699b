"""Fenced timer reads (issue 27): does the initiator's closing timer read wait for the hand-off?

The ping-pong initiator times a batch of round trips between two timer reads. A plain read (x86
``rdtsc``) waits for nothing: once the batch loop's exit is predicted it can run ahead of the lock
cmpxchg (or load) that ends the batch. This script runs the product's own CAS loop (csrc/cas_loops.h)
and a copy of its rw loop on one pair, with the closing read done each way, interleaved sample by
sample in one process (so every way sees the same placement of the vCPUs):

* ``plain``:  t0 = plain read;       batch; t1 = plain read (the initiator before issue 27)
* ``fenced``: t0 = serializing read; batch; t1 = serializing read (``corelat_hw_ticks_serial``:
  lfence; rdtsc; lfence, or isb; mrs; isb; the initiator since)
* ``rdtscp``: t0 = serializing read; batch; t1 = rdtscp; lfence (x86 only)
* ``paired``: t0 = plain read; batch; t1 = plain read, then at once a serializing one (same sample)

The responder answers with the same protocol, and takes a serializing timer read just before each
answering attempt (``tb``); the sample cannot end before its last one. A closing read below ``tb``
ran before the partner had even begun its answer. Counted per way: samples below one and two timer
steps, and closing reads before ``tb``. Then the installed extension (``corelat._corelat``) is run
for the same sizes: its one-round-trip samples should never read below one step.

Self-contained: builds its C (embedded below) with the compiler it finds (``$CC``, cc, gcc, clang)
from csrc/ into a temporary folder. Run from anywhere:

    python benchmarks/handoff_fence.py             # 20 000 samples per way, 1, 2 and 10 round trips
    python benchmarks/handoff_fence.py --quick     # 2 000: a few seconds
    python benchmarks/handoff_fence.py --cpus 0,8  # another pair
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SOURCE = r"""
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spin.h"
#include "team.h"
#include "timer.h"

#define PARKED 2u
#define CAS_LOOP(name) name##_native
#include "cas_loops.h"
#undef CAS_LOOP

/* pingpong.c's rw loops (static there). */
static __attribute__((noinline)) int rw_ping(atomic_uint_fast64_t *a, atomic_uint_fast64_t *b, uint64_t seq,
                                             uint64_t end, corelat_spin *s)
{
    uint32_t left = CORELAT_SPIN_EVERY;
    int rc = 0;
    while (seq != end) {
        seq++;
        atomic_store_explicit(a, seq, memory_order_release);
        CORELAT_SPIN_WHILE_NOT(atomic_load_explicit(b, memory_order_acquire) == seq, s, seq, left, rc, out);
    }
out:
    return rc;
}

static inline uint64_t plain(void) { return corelat_hw_ticks(); }
static inline uint64_t fenced(void) { return corelat_hw_ticks_serial(); }
static inline uint64_t closing_p(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned aux;
    uint64_t t = __rdtscp(&aux);
    _mm_lfence();
    return t;
#else
    return corelat_hw_ticks_serial();
#endif
}

enum { PLAIN, FENCED, RDTSCP, PAIRED, MODES };
static const char *names[MODES] = {"plain", "fenced", "rdtscp", "paired"};

static int rw, cpu_b;
static int64_t n, total;
static _Alignas(4096) char page[4096];
static atomic_int abort_flag;
static _Alignas(64) atomic_uint_fast64_t done;
static uint64_t *tb;

#define FLAG ((atomic_uint *)(page))
#define LA ((atomic_uint_fast64_t *)(page))
#define LB ((atomic_uint_fast64_t *)(page + 256))

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set)) {
        fprintf(stderr, "cannot pin to CPU %d\n", cpu);
        exit(2);
    }
}

/* The responder: the protocol's answers, each attempt preceded by a serializing read. */
static void *responder(void *arg)
{
    (void)arg;
    pin(cpu_b);
    for (int64_t k = 0; k < total; k++) {
        uint64_t t = 0;
        for (int64_t r = 0; r < n; r++) {
            if (rw) {
                uint64_t seq = (uint64_t)(k * n + r + 1);
                while (atomic_load_explicit(LA, memory_order_acquire) != seq)
                    ;
                t = fenced();
                atomic_store_explicit(LB, seq, memory_order_release);
            } else {
                unsigned e;
                do {
                    t = fenced();
                    e = 1u;
                } while (!atomic_compare_exchange_strong_explicit(FLAG, &e, 0u, memory_order_relaxed,
                                                                   memory_order_relaxed));
            }
        }
        tb[k] = t;
        atomic_store_explicit(&done, (uint64_t)k + 1, memory_order_release);
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: fence cas|rw CPU_A CPU_B ROUND_TRIPS SAMPLES_PER_WAY STEP_TICKS\n");
        return 2;
    }
    rw = strcmp(argv[1], "rw") == 0;
    int cpu_a = atoi(argv[2]);
    cpu_b = atoi(argv[3]);
    n = atoll(argv[4]);
    total = MODES * atoll(argv[5]);
    double step = atof(argv[6]);
    corelat_timer_kind_active = CORELAT_TIMER_HW;
    uint64_t *d = calloc((size_t)total, 8), *t1s = calloc((size_t)total, 8), *t1f = calloc((size_t)total, 8);
    tb = calloc((size_t)total, 8);
    atomic_store(FLAG, PARKED);
    pin(cpu_a);
    pthread_t th;
    pthread_create(&th, NULL, responder, NULL);
    corelat_spin s;
    atomic_uint_fast64_t beat = 0;
    corelat_spin_begin(&s, &abort_flag, &beat, -1, 5000000000u);
    for (int64_t k = 0; k < total; k++) {
        int mode = (int)(k % MODES);
        uint64_t base = (uint64_t)(k * n), t0 = mode == PLAIN || mode == PAIRED ? plain() : fenced(), t1;
        if (rw)
            rw_ping(LA, LB, base, base + (uint64_t)n, &s);
        else
            cas_ping_native(FLAG, n, base, &s);
        t1 = mode == PLAIN || mode == PAIRED ? plain() : mode == FENCED ? fenced() : closing_p();
        t1f[k] = mode == PAIRED ? fenced() : t1;
        d[k] = t1 - t0;
        t1s[k] = t1;
        while (atomic_load_explicit(&done, memory_order_acquire) != (uint64_t)k + 1)
            corelat_cpu_relax();
    }
    pthread_join(th, NULL);
    int64_t per = total / MODES;
    uint64_t *v = calloc((size_t)per, 8);
    for (int m = 0; m < MODES; m++) {
        int64_t c = 0, below1 = 0, below2 = 0, early = 0, early_f = 0;
        for (int64_t k = m; k < total; k += MODES) {
            v[c++] = d[k];
            below1 += (double)d[k] < step;
            below2 += (double)d[k] < 2 * step;
            early += t1s[k] < tb[k];
            early_f += t1f[k] < tb[k];
        }
        qsort(v, (size_t)c, 8, cmp);
        printf("%s %lld %llu %llu %lld %lld %lld %lld\n", names[m], (long long)c, (unsigned long long)v[0],
               (unsigned long long)v[c / 2], (long long)below1, (long long)below2, (long long)early,
               (long long)(m == PAIRED ? early_f : -1));
    }
    return 0;
}
"""


def compiler(names=("cc", "gcc", "clang")):
    for c in ([os.environ["CC"]] if os.environ.get("CC") else []) + list(names):
        if shutil.which(c):
            return c
    return None


def build(tmp):
    cc = compiler()
    if cc is None:
        return None
    src = tmp / "fence.c"
    src.write_text(SOURCE)
    csrc = sorted(str(p) for p in (REPO / "csrc").glob("*.c") if p.name not in ("module.c", "selftest.c"))
    exe = tmp / "fence"
    subprocess.run([cc, "-std=c11", "-O2", "-D_GNU_SOURCE", "-pthread", f"-I{REPO / 'csrc'}", "-o", str(exe),
                    str(src), *csrc], check=True)
    return exe


def experiment(exe, kernel, a, b, round_trips, samples, step):
    out = subprocess.run([str(exe), kernel, str(a), str(b), str(round_trips), str(samples), str(step)],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    print(f"\n{kernel}, {round_trips} round trip(s) per sample, {samples} samples per way, interleaved "
          f"(ticks; step {step:g}):")
    print(f"  {'closing read':<12} {'min':>6} {'median':>7} {'<1 step':>8} {'<2 steps':>9} "
          f"{'before partner':>15}")
    for line in out.splitlines():
        name, _count, lo, med, b1, b2, early, early_f = line.split()
        print(f"  {name:<12} {lo:>6} {med:>7} {b1:>8} {b2:>9} {early:>15}" +
              (f"   (the fenced read right after it: {early_f} before partner)" if int(early_f) >= 0 else ""))


def installed(a, b, samples, step):
    try:
        import numpy as np

        import corelat
        from corelat import _corelat
    except ImportError as e:
        print(f"\n(installed extension not available: {e})")
        return
    corelat.timer_info()
    print(f"\ninstalled corelat ({Path(corelat.__file__).parent}): samples of the product's initiator")
    print(f"  {'kernel':<6} {'round trips':>11} {'min':>6} {'median':>7} {'<1 step':>8} {'<2 steps':>9}")
    for kernel in ("cas", "rw"):
        code = _corelat.KERNEL_CAS if kernel == "cas" else _corelat.KERNEL_RW
        for rt in (1, 2, 10):
            x = _corelat.pingpong(a, b, code, rt, samples, 100, 5.0)
            print(f"  {kernel:<6} {rt:>11} {int(x.min()):>6} {int(np.median(x)):>7} "
                  f"{int((x < step).sum()):>8} "
                  f"{int((x < 2 * step).sum()):>9}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 000 samples per way (a few seconds)")
    ap.add_argument("--samples", type=int, help="samples per way (default 20 000)")
    ap.add_argument("--cpus", help="the pair, e.g. 0,1 (default: the first and last allowed CPU)")
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if args.cpus:
        a, b = (int(c) for c in args.cpus.split(","))
    elif len(cpus) >= 2:
        a, b = cpus[0], cpus[-1]
    else:
        print("handoff_fence: needs 2 allowed CPUs; nothing measured")
        return 0
    samples = args.samples or (2000 if args.quick else 20000)
    step, have_ext = 1.0, False  # without the package: a counter of single ticks
    try:
        import corelat
    except ImportError:
        pass
    else:
        try:
            info = corelat.timer_info()
            step, have_ext = (float(info["resolution_ticks"]) if info["name"] != "clock" else 1.0), True
        except corelat.CorelatError as e:  # built without the extension
            print(f"(corelat's timer: {e})")
    print(f"pair {a},{b}; timer step {step:g} ticks")
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(Path(tmp))
        if exe is None:
            print("handoff_fence: no C compiler found (set CC); the experiment is skipped")
        else:
            for kernel in ("cas", "rw"):
                for rt in (1, 2, 10):
                    experiment(exe, kernel, a, b, rt, samples, step)
    if have_ext:
        installed(a, b, samples, step)
    return 0


if __name__ == "__main__":
    sys.exit(main())

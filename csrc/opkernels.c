/* The tests that are not locks: counters, generators, instructions and system calls. Each is one
 * noinline call reached through a pointer, like the baseline, so subtracting the baseline removes
 * the call. Instruction kernels exist only on their architecture, and locks.c runs one only where
 * the CPU has the instruction (cpufeat.h): never a SIGILL. */
#include <sched.h>
#include <time.h>

#include "cpufeat.h"
#include "lockobj.h"
#include "locks.h"

#define KERNEL static __attribute__((noinline)) int

KERNEL k_inc_tls(corelat_kctx *c)
{
    static _Thread_local uint64_t tls;
    (void)c;
    ++tls;
    __asm__ volatile("" ::"r"(&tls) : "memory"); /* the store happens, every call */
    return 0;
}

KERNEL k_inc_atomic(corelat_kctx *c)
{
    atomic_fetch_add_explicit(&c->obj->counter, 1, memory_order_relaxed);
    return 0;
}

KERNEL k_inc_atomic_cst(corelat_kctx *c)
{
    atomic_fetch_add_explicit(&c->obj->counter, 1, memory_order_seq_cst);
    return 0;
}

/* xoroshiro128+ (Blackman and Vigna's published generator, written out from its definition). */
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t xoroshiro(uint64_t *s)
{
    uint64_t s0 = s[0], s1 = s[1], r = s0 + s1;
    s1 ^= s0;
    s[0] = rotl(s0, 24) ^ s1 ^ (s1 << 16);
    s[1] = rotl(s1, 37);
    return r;
}

KERNEL k_xoroshiro(corelat_kctx *c)
{
    c->sink += xoroshiro(c->rng);
    return 0;
}

KERNEL k_mod128(corelat_kctx *c)
{
    c->sink += xoroshiro(c->rng) % 128;
    return 0;
}

KERNEL k_mod127(corelat_kctx *c)
{
    c->sink += xoroshiro(c->rng) % 127; /* a division, where % 128 is a mask */
    return 0;
}

KERNEL k_sched_getcpu(corelat_kctx *c)
{
    c->sink += (uint64_t)sched_getcpu();
    return 0;
}

static inline int clock_call(corelat_kctx *c, clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    c->sink += (uint64_t)ts.tv_nsec;
    return 0;
}

/* The clock tests: test, kernel, clock. */
#ifdef CLOCK_REALTIME_COARSE
#define COARSE_CLOCKS(X)                                                                                     \
    X(CLOCK_REAL_COARSE, clock_real_coarse, CLOCK_REALTIME_COARSE)                                           \
    X(CLOCK_MONO_COARSE, clock_mono_coarse, CLOCK_MONOTONIC_COARSE)
#else
#define COARSE_CLOCKS(X)
#endif
#define CLOCKS(X)                                                                                            \
    X(CLOCK_REAL, clock_real, CLOCK_REALTIME)                                                                \
    X(CLOCK_MONO, clock_mono, CLOCK_MONOTONIC)                                                               \
    COARSE_CLOCKS(X)

#define CLOCK_KERNEL(test, name, id)                                                                         \
    KERNEL k_##name(corelat_kctx *c) { return clock_call(c, id); }
CLOCKS(CLOCK_KERNEL)

#if defined(__x86_64__)
KERNEL k_rdrand64(corelat_kctx *c)
{
    uint64_t v;
    unsigned char ok;
    for (int tries = 0; tries < 10; tries++) { /* the DRNG may underflow; Intel says retry ten times */
        __asm__ volatile("rdrand %0; setc %1" : "=r"(v), "=qm"(ok)::"cc");
        if (ok) {
            c->sink += v;
            break;
        }
    }
    return 0;
}

KERNEL k_rdtsc(corelat_kctx *c)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    c->sink += ((uint64_t)hi << 32) | lo;
    return 0;
}

KERNEL k_rdtscp(corelat_kctx *c)
{
    uint32_t lo, hi, aux;
    __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
    c->sink += (((uint64_t)hi << 32) | lo) + aux;
    return 0;
}

/* Linux keeps the CPU and node numbers in the limit of GDT entry 15 (selector 0x7b) for user space;
 * lsl on a selector it cannot read sets ZF = 0 rather than faulting. */
KERNEL k_lsl(corelat_kctx *c)
{
    uint32_t v = 0;
    __asm__ volatile("lsl %1, %0" : "+r"(v) : "r"(0x7bu) : "cc");
    c->sink += v & 0xfff;
    return 0;
}

KERNEL k_cpuid(corelat_kctx *c)
{
    uint32_t a = 0, b, cc = 0, d;
    __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(cc), "=d"(d));
    c->sink += a;
    return 0;
}

#endif

/* The tests that run one instruction: test, kernel, instruction. */
#if defined(__x86_64__)
#define INSNS(X)                                                                                             \
    X(CPU_LFENCE, lfence, "lfence")                                                                          \
    X(CPU_SFENCE, sfence, "sfence")                                                                          \
    X(CPU_MFENCE, mfence, "mfence")                                                                          \
    X(CPU_PAUSE, pause, "pause")
#elif defined(__aarch64__)
#define INSNS(X)                                                                                             \
    X(CPU_ISB, isb, "isb")                                                                                   \
    X(CPU_DMB_ISH, dmb_ish, "dmb ish")                                                                       \
    X(CPU_DSB_SY, dsb_sy, "dsb sy")                                                                          \
    X(CPU_YIELD, yield, "yield")
#else
#define INSNS(X)
#endif

#define INSN_KERNEL(test, name, insn)                                                                        \
    KERNEL k_##name(corelat_kctx *c)                                                                         \
    {                                                                                                        \
        (void)c;                                                                                             \
        __asm__ volatile(insn ::: "memory");                                                                 \
        return 0;                                                                                            \
    }
INSNS(INSN_KERNEL)

/* The tests that read one register, added to the sink: test, kernel, instruction, output constraint. */
#if defined(__x86_64__)
#define READS(X)                                                                                             \
    X(CPU_RDPID, rdpid, ".byte 0xf3, 0x0f, 0xc7, 0xf8", "=a") /* rdpid %rax, for old assemblers */
#elif defined(__aarch64__)
#define READS(X)                                                                                             \
    X(CPU_CNTVCT, cntvct, "mrs %0, cntvct_el0", "=r")                                                        \
    X(CPU_RNDR, rndr, "mrs %0, s3_3_c2_c4_0", "=r") /* RNDR, for assemblers without +rng */
#else
#define READS(X)
#endif

/* "cc": RNDR sets the flags (NZCV), the others leave them, where the clobber costs nothing. */
#define READ_KERNEL(test, name, insn, out)                                                                   \
    KERNEL k_##name(corelat_kctx *c)                                                                         \
    {                                                                                                        \
        uint64_t v;                                                                                          \
        __asm__ volatile(insn : out(v)::"cc");                                                               \
        c->sink += v;                                                                                        \
        return 0;                                                                                            \
    }
READS(READ_KERNEL)

/* The kernels written out above: test, kernel. */
// clang-format off: one row a line
#if defined(__x86_64__)
#define X86_KERNELS(X)                                                                                       \
    X(CPU_RDRAND64, rdrand64)                                                                                \
    X(CPU_RDTSC, rdtsc)                                                                                      \
    X(CPU_RDTSCP, rdtscp)                                                                                    \
    X(CPU_LSL, lsl)                                                                                          \
    X(CPU_CPUID, cpuid)
#else
#define X86_KERNELS(X)
#endif
#define KERNELS(X)                                                                                           \
    X(INC_TLS, inc_tls)                                                                                      \
    X(INC_ATOMIC, inc_atomic)                                                                                \
    X(INC_ATOMIC_CST, inc_atomic_cst)                                                                        \
    X(PRNG_XOROSHIRO, xoroshiro)                                                                             \
    X(PRNG_MOD128, mod128)                                                                                   \
    X(PRNG_MOD127, mod127)                                                                                   \
    X(SYS_SCHED_GETCPU, sched_getcpu)                                                                        \
    X86_KERNELS(X)
// clang-format on

/* Every test's kernel, indexed by test: one entry per row of the tables above; NULL for the locks and for
 * the tests this architecture or C library lacks. */
#define ENTRY(test, name) [CORELAT_LK_##test] = k_##name,
#define ENTRY3(test, name, insn) ENTRY(test, name)
#define ENTRY4(test, name, insn, out) ENTRY(test, name)
static const corelat_kernel_fn kernels[CORELAT_LK_COUNT] = {KERNELS(ENTRY) CLOCKS(ENTRY3) INSNS(ENTRY3)
                                                                READS(ENTRY4)};

corelat_kernel_fn corelat_op_kernel(int test)
{
    return test >= 0 && test < CORELAT_LK_COUNT ? kernels[test] : NULL;
}

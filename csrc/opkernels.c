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

KERNEL k_clock_real(corelat_kctx *c) { return clock_call(c, CLOCK_REALTIME); }
KERNEL k_clock_mono(corelat_kctx *c) { return clock_call(c, CLOCK_MONOTONIC); }
#ifdef CLOCK_REALTIME_COARSE
KERNEL k_clock_real_coarse(corelat_kctx *c) { return clock_call(c, CLOCK_REALTIME_COARSE); }
KERNEL k_clock_mono_coarse(corelat_kctx *c) { return clock_call(c, CLOCK_MONOTONIC_COARSE); }
#else
#define k_clock_real_coarse NULL
#define k_clock_mono_coarse NULL
#endif

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

KERNEL k_rdpid(corelat_kctx *c)
{
    uint64_t id;
    __asm__ volatile(".byte 0xf3, 0x0f, 0xc7, 0xf8" : "=a"(id)); /* rdpid %rax, for old assemblers */
    c->sink += id;
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

KERNEL k_lfence(corelat_kctx *c)
{
    (void)c;
    __asm__ volatile("lfence" ::: "memory");
    return 0;
}

KERNEL k_sfence(corelat_kctx *c)
{
    (void)c;
    __asm__ volatile("sfence" ::: "memory");
    return 0;
}

KERNEL k_mfence(corelat_kctx *c)
{
    (void)c;
    __asm__ volatile("mfence" ::: "memory");
    return 0;
}

KERNEL k_pause(corelat_kctx *c)
{
    (void)c;
    __asm__ volatile("pause" ::: "memory");
    return 0;
}
#endif

#if defined(__aarch64__)
KERNEL k_isb(corelat_kctx *c)
{
    (void)c;
    __asm__ volatile("isb" ::: "memory");
    return 0;
}

KERNEL k_dmb_ish(corelat_kctx *c)
{
    (void)c;
    __asm__ volatile("dmb ish" ::: "memory");
    return 0;
}

KERNEL k_dsb_sy(corelat_kctx *c)
{
    (void)c;
    __asm__ volatile("dsb sy" ::: "memory");
    return 0;
}

KERNEL k_cntvct(corelat_kctx *c)
{
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    c->sink += v;
    return 0;
}

KERNEL k_yield(corelat_kctx *c)
{
    (void)c;
    __asm__ volatile("yield" ::: "memory");
    return 0;
}

KERNEL k_rndr(corelat_kctx *c)
{
    uint64_t v;
    __asm__ volatile("mrs %0, s3_3_c2_c4_0" : "=r"(v)::"cc"); /* RNDR, for assemblers without +rng */
    c->sink += v;
    return 0;
}
#endif

corelat_kernel_fn corelat_op_kernel(int test)
{
    switch (test) {
    case CORELAT_LK_INC_TLS:
        return k_inc_tls;
    case CORELAT_LK_INC_ATOMIC:
        return k_inc_atomic;
    case CORELAT_LK_INC_ATOMIC_CST:
        return k_inc_atomic_cst;
    case CORELAT_LK_PRNG_XOROSHIRO:
        return k_xoroshiro;
    case CORELAT_LK_PRNG_MOD128:
        return k_mod128;
    case CORELAT_LK_PRNG_MOD127:
        return k_mod127;
    case CORELAT_LK_SYS_SCHED_GETCPU:
        return k_sched_getcpu;
    case CORELAT_LK_CLOCK_REAL:
        return k_clock_real;
    case CORELAT_LK_CLOCK_REAL_COARSE:
        return k_clock_real_coarse;
    case CORELAT_LK_CLOCK_MONO:
        return k_clock_mono;
    case CORELAT_LK_CLOCK_MONO_COARSE:
        return k_clock_mono_coarse;
#if defined(__x86_64__)
    case CORELAT_LK_CPU_RDRAND64:
        return k_rdrand64;
    case CORELAT_LK_CPU_RDTSC:
        return k_rdtsc;
    case CORELAT_LK_CPU_RDTSCP:
        return k_rdtscp;
    case CORELAT_LK_CPU_RDPID:
        return k_rdpid;
    case CORELAT_LK_CPU_LSL:
        return k_lsl;
    case CORELAT_LK_CPU_CPUID:
        return k_cpuid;
    case CORELAT_LK_CPU_LFENCE:
        return k_lfence;
    case CORELAT_LK_CPU_SFENCE:
        return k_sfence;
    case CORELAT_LK_CPU_MFENCE:
        return k_mfence;
    case CORELAT_LK_CPU_PAUSE:
        return k_pause;
#endif
#if defined(__aarch64__)
    case CORELAT_LK_CPU_ISB:
        return k_isb;
    case CORELAT_LK_CPU_DMB_ISH:
        return k_dmb_ish;
    case CORELAT_LK_CPU_DSB_SY:
        return k_dsb_sy;
    case CORELAT_LK_CPU_CNTVCT:
        return k_cntvct;
    case CORELAT_LK_CPU_YIELD:
        return k_yield;
    case CORELAT_LK_CPU_RNDR:
        return k_rndr;
#endif
    default:
        return NULL;
    }
}

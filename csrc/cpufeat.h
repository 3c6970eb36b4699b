/* Which optional instructions this CPU has, read from CPUID (x86-64) or the auxiliary vector's
 * HWCAP words (aarch64), in a plain table so the decision can be tested with made-up tables: an
 * instruction test is run only where the table says the CPU has the instruction (never a SIGILL). */
#ifndef CORELAT_CPUFEAT_H
#define CORELAT_CPUFEAT_H

#include <stddef.h>
#include <stdint.h>

enum { CORELAT_ARCH_OTHER = 0, CORELAT_ARCH_X86_64 = 1, CORELAT_ARCH_AARCH64 = 2 };

typedef struct {
    int arch;           /* CORELAT_ARCH_* */
    uint32_t max_leaf;  /* CPUID.0:EAX */
    uint32_t max_ext;   /* CPUID.80000000h:EAX */
    uint32_t leaf1_ecx; /* CPUID.1:ECX (bit 30 RDRAND) */
    uint32_t leaf1_edx; /* CPUID.1:EDX (bit 4 TSC, bit 25 SSE, bit 26 SSE2) */
    uint32_t leaf7_ecx; /* CPUID.(7,0):ECX (bit 22 RDPID) */
    uint32_t ext1_edx;  /* CPUID.80000001h:EDX (bit 27 RDTSCP) */
    uint64_t hwcap;     /* getauxval(AT_HWCAP) */
    uint64_t hwcap2;    /* getauxval(AT_HWCAP2) (bit 16 RNG: RNDR) */
} corelat_cpu_feats;

/* The features of the CPU this runs on (on another architecture: arch OTHER, all zero). */
void corelat_cpu_feats_read(corelat_cpu_feats *f);

/* What an instruction needs. */
enum corelat_need {
    CORELAT_NEED_NONE = 0,   /* any CPU */
    CORELAT_NEED_X86,        /* any x86-64 CPU (architectural) */
    CORELAT_NEED_X86_TSC,    /* CPUID.1:EDX[4] */
    CORELAT_NEED_X86_SSE,    /* CPUID.1:EDX[25] (sfence) */
    CORELAT_NEED_X86_SSE2,   /* CPUID.1:EDX[26] (lfence, mfence) */
    CORELAT_NEED_X86_RDRAND, /* CPUID.1:ECX[30] */
    CORELAT_NEED_X86_RDTSCP, /* CPUID.80000001h:EDX[27] */
    CORELAT_NEED_X86_RDPID,  /* CPUID.(7,0):ECX[22] */
    CORELAT_NEED_ARM,        /* any aarch64 CPU (architectural) */
    CORELAT_NEED_ARM_RNG,    /* HWCAP2_RNG */
};

/* 1 if a CPU with features f runs the instruction; 0 with a one-line reason in why (which says
 * "not on this architecture" when the test is for another one, to be left out of lists). */
int corelat_cpu_has(const corelat_cpu_feats *f, int need, char *why, size_t why_len);

/* 1 if the reason from corelat_cpu_has says the test is for another architecture. */
int corelat_cpu_other_arch(int need, const corelat_cpu_feats *f);

#endif

#include "cpufeat.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

void corelat_cpu_feats_read(corelat_cpu_feats *f)
{
    memset(f, 0, sizeof *f);
#if defined(__x86_64__)
    unsigned a, b, c, d;
    f->arch = CORELAT_ARCH_X86_64;
    f->max_leaf = __get_cpuid_max(0, NULL);
    f->max_ext = __get_cpuid_max(0x80000000u, NULL);
    if (f->max_leaf >= 1 && __get_cpuid(1, &a, &b, &c, &d)) {
        f->leaf1_ecx = c;
        f->leaf1_edx = d;
    }
    if (f->max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f->leaf7_ecx = c;
    }
    if (f->max_ext >= 0x80000001u && __get_cpuid(0x80000001u, &a, &b, &c, &d))
        f->ext1_edx = d;
#elif defined(__aarch64__)
    f->arch = CORELAT_ARCH_AARCH64;
#if defined(__linux__)
    f->hwcap = getauxval(AT_HWCAP);
    f->hwcap2 = getauxval(AT_HWCAP2);
#endif
#endif
}

int corelat_cpu_other_arch(int need, const corelat_cpu_feats *f)
{
    if (need >= CORELAT_NEED_X86 && need <= CORELAT_NEED_X86_RDPID)
        return f->arch != CORELAT_ARCH_X86_64;
    if (need >= CORELAT_NEED_ARM)
        return f->arch != CORELAT_ARCH_AARCH64;
    return 0;
}

static int bit(uint64_t word, int b) { return (int)((word >> b) & 1u); }

int corelat_cpu_has(const corelat_cpu_feats *f, int need, char *why, size_t why_len)
{
    const char *lack = NULL;
    if (corelat_cpu_other_arch(need, f)) {
        snprintf(why, why_len, "not on this architecture (%s only)",
                 need >= CORELAT_NEED_ARM ? "aarch64" : "x86-64");
        return 0;
    }
    switch (need) {
    case CORELAT_NEED_X86_TSC:
        lack = f->max_leaf >= 1 && bit(f->leaf1_edx, 4) ? NULL : "no TSC (CPUID.1:EDX bit 4)";
        break;
    case CORELAT_NEED_X86_SSE:
        lack = f->max_leaf >= 1 && bit(f->leaf1_edx, 25) ? NULL : "no SSE (CPUID.1:EDX bit 25)";
        break;
    case CORELAT_NEED_X86_SSE2:
        lack = f->max_leaf >= 1 && bit(f->leaf1_edx, 26) ? NULL : "no SSE2 (CPUID.1:EDX bit 26)";
        break;
    case CORELAT_NEED_X86_RDRAND:
        lack =
            f->max_leaf >= 1 && bit(f->leaf1_ecx, 30) ? NULL : "the CPU has no rdrand (CPUID.1:ECX bit 30)";
        break;
    case CORELAT_NEED_X86_RDTSCP:
        lack = f->max_ext >= 0x80000001u && bit(f->ext1_edx, 27)
                   ? NULL
                   : "the CPU has no rdtscp (CPUID.80000001h:EDX bit 27)";
        break;
    case CORELAT_NEED_X86_RDPID:
        lack =
            f->max_leaf >= 7 && bit(f->leaf7_ecx, 22) ? NULL : "the CPU has no rdpid (CPUID.7.0:ECX bit 22)";
        break;
    case CORELAT_NEED_ARM_RNG:
        lack = bit(f->hwcap2, 16) ? NULL : "the CPU has no rndr (no RNG in HWCAP2)";
        break;
    default:
        break;
    }
    if (lack) {
        snprintf(why, why_len, "%s", lack);
        return 0;
    }
    if (why_len)
        why[0] = '\0';
    return 1;
}

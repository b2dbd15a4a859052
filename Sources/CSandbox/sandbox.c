#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "attache_sandbox.h"

static int set_limit(int resource, rlim_t soft, rlim_t hard, const char *name, char *message, size_t size) {
    struct rlimit limit = { .rlim_cur = soft, .rlim_max = hard };
    if (setrlimit(resource, &limit) == 0) return 0;
    snprintf(message, size, "setrlimit(%s): %s", name, strerror(errno));
    return -1;
}

uint64_t attache_sandbox_address_space_used(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long pages = 0;
    int n = fscanf(f, "%lu", &pages);
    fclose(f);
    return n == 1 ? (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

int64_t attache_sandbox_cpu_ms(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (int64_t)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000
        + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000;
}

void attache_sandbox_allow_cpu(uint64_t seconds) {
    int64_t used_ms = attache_sandbox_cpu_ms();
    struct rlimit limit;
    if (getrlimit(RLIMIT_CPU, &limit) == 0) {
        // RLIMIT_CPU counts whole seconds of the process's life: the job's allowance starts
        // from the next whole second used.
        rlim_t soft = (rlim_t)(used_ms / 1000) + 1 + seconds;
        if (limit.rlim_max != RLIM_INFINITY && soft > limit.rlim_max) soft = limit.rlim_max;
        limit.rlim_cur = soft;
        setrlimit(RLIMIT_CPU, &limit);
    }
}

// What decoding needs once the libraries are loaded: memory, locks, time, the two descriptors it
// was given, and its own signals (abort). Anything else kills the process, except the calls below
// that libraries make out of habit and cope with failing.
static const int allowed[] = {
    SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev), SCMP_SYS(close), SCMP_SYS(lseek),
    SCMP_SYS(fstat),
    SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(mprotect), SCMP_SYS(brk), SCMP_SYS(madvise),
    SCMP_SYS(futex), SCMP_SYS(sched_yield), SCMP_SYS(sched_getaffinity),
    SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday), SCMP_SYS(time),
    SCMP_SYS(nanosleep), SCMP_SYS(clock_nanosleep),
    SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(getrandom), SCMP_SYS(getrusage),
    SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
    SCMP_SYS(restart_syscall), SCMP_SYS(exit), SCMP_SYS(exit_group),
    // What a new thread sets up for itself (see clone below).
    SCMP_SYS(set_robust_list), SCMP_SYS(rseq),
};

// Refused with an error rather than fatal: glibc and the codec libraries open files lazily (the
// CPU count from /sys, locale data) and ask whether a stream is a terminal; a helper killed for
// such a habit would lose a good job, and the refusal protects as much.
static const int refused_open[] = { SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2), SCMP_SYS(creat) };

static int install_filter(char *message, size_t size) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
    if (!ctx) {
        snprintf(message, size, "seccomp_init failed");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof allowed / sizeof allowed[0]; i++) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
    }
    for (size_t i = 0; rc == 0 && i < sizeof refused_open / sizeof refused_open[0]; i++) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), refused_open[i], 0);
    }
    // fstat on a descriptor (glibc's is newfstatat with AT_EMPTY_PATH); never by path.
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 1,
                                       SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(newfstatat), 1,
                                       SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, 0));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTTY), SCMP_SYS(ioctl), 0);
    _Static_assert(PR_GET_NAME == PR_SET_NAME + 1, "the two calls allowed are next to each other");
    // A thread naming itself (dav1d, AV1's decoder, names each of its threads; FFmpeg's pools
    // too): its own name only. Any other prctl fails as not permitted: with no new privileges
    // and this filter in place there is nothing one could loosen, and a library probing a
    // setting copes with a refusal where it would not survive a kill.
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, PR_GET_NAME));
    // (PR_SET_NAME and PR_GET_NAME are 15 and 16: everything below and above fails.)
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_LT, PR_SET_NAME));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_GT, PR_GET_NAME));
    // glibc's qsort (giflib's quantiser sorts colours) asks for the machine's memory size and
    // copes without it.
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(sysinfo), 0);
    // Its own limits only (the per-job CPU allowance), and signals to itself only (abort).
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, SCMP_A0(SCMP_CMP_EQ, 0));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
    // Threads, never processes: libde265 (HEIC) decodes on worker threads of its own. A thread
    // shares this process's filter, limits and memory, so it can do nothing the process cannot.
    // clone3 hides its flags in memory a filter cannot read: refused as missing, glibc falls back
    // to clone.
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                       SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    // A job's file comes as a descriptor on the job socket (descriptor 0), read-only: the helper
    // maps it instead of receiving its bytes. Only that socket; a descriptor it brings can be
    // read, mapped and closed like the others, never used to open anything.
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(recvmsg), 1, SCMP_A0(SCMP_CMP_EQ, 0));
    if (rc == 0) rc = seccomp_load(ctx);
    if (rc != 0) snprintf(message, size, "seccomp filter: %s", strerror(-rc));
    seccomp_release(ctx);
    return rc == 0 ? 0 : -1;
}

int attache_sandbox_enter(const attache_sandbox_limits *limits, char *message, size_t size) {
    if (limits->address_space > 0
        && set_limit(RLIMIT_AS, limits->address_space, limits->address_space, "RLIMIT_AS", message, size) != 0) return -1;
    if (limits->cpu_seconds > 0
        && set_limit(RLIMIT_CPU, limits->cpu_seconds, limits->cpu_seconds, "RLIMIT_CPU", message, size) != 0) return -1;
    if (set_limit(RLIMIT_CORE, 0, 0, "RLIMIT_CORE", message, size) != 0) return -1;
    if (set_limit(RLIMIT_FSIZE, 0, 0, "RLIMIT_FSIZE", message, size) != 0) return -1;
    // One descriptor at a time beyond the ones held (the job channel, stderr): the lowest free
    // number, the one a job's file arrives as (the filter lets nothing else make one). A second
    // would be over the limit.
    int spare = dup(0);
    if (spare < 0) {
        snprintf(message, size, "dup: %s", strerror(errno));
        return -1;
    }
    close(spare);
    if (set_limit(RLIMIT_NOFILE, (rlim_t)spare + 1, (rlim_t)spare + 1, "RLIMIT_NOFILE", message, size) != 0) return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        snprintf(message, size, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
        return -1;
    }
    // Not ptrace-attachable or core-dumpable by the service's user.
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    // A crash ends the process with its own signal, for the pool to report: the Swift runtime's
    // crash handler would go on to read /proc and start its backtracer, which the filter forbids
    // (every crash would then read as SIGSYS).
    const int crashes[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP };
    for (size_t i = 0; i < sizeof crashes / sizeof crashes[0]; i++) signal(crashes[i], SIG_DFL);
    return install_filter(message, size);
}

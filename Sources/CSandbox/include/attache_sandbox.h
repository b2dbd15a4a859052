// The decoder helper's sandbox (attache-decode): resource limits, no new privileges, and a seccomp
// filter that leaves the process able to compute, allocate and talk over the descriptors it was
// given — nothing else. Entered once, after every library is loaded, before the first job.
#ifndef ATTACHE_SANDBOX_H
#define ATTACHE_SANDBOX_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    /// RLIMIT_AS, bytes (0: unchanged).
    uint64_t address_space;
    /// RLIMIT_CPU hard limit over the helper's life, seconds (0: unchanged); each job's own
    /// allowance is set as a soft limit with attache_sandbox_allow_cpu.
    uint64_t cpu_seconds;
} attache_sandbox_limits;

/// Sets the limits (and no core files, no file writes, no new descriptors), PR_SET_NO_NEW_PRIVS,
/// and installs the filter. 0 on success; -1 with a message otherwise (the process must then not
/// take jobs).
int attache_sandbox_enter(const attache_sandbox_limits *limits, char *message, size_t size);

/// CPU time the process has used, user and system, in ms.
int64_t attache_sandbox_cpu_ms(void);

/// Sets the soft CPU limit to what the process has used plus `seconds` (capped at the hard
/// limit): a job that spins past it gets SIGXCPU.
void attache_sandbox_allow_cpu(uint64_t seconds);

/// The process's address-space size now (from /proc/self/statm; call before entering).
uint64_t attache_sandbox_address_space_used(void);

#endif

#ifndef ATTACHE_SANDBOX_PROBE_H
#define ATTACHE_SANDBOX_PROBE_H

/// For the tests' probe helper only (never linked into attache-decode): makes the named forbidden
/// call — "socket", "connect", "execve", "fork" — or an "open" that must be refused, or "spin"s
/// for ever as a decoder stuck in a loop would. Returns the call's result and sets errno, when
/// the filter lets the process live.
int attache_sandbox_probe(const char *call);

#endif

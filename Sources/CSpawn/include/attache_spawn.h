// Starting a decoder helper with nothing of the service's but one socket: its descriptor 0 is
// `channel`, 1 and 2 are /dev/null, every other descriptor is closed (no listening socket, no
// origin or store connection, no media file), the environment is empty (no store credentials),
// signals are as a fresh process has them, and it leads a process group of its own (a terminal's
// Ctrl-C goes to the command, which ends its helpers once the payloads in flight are answered).
#ifndef ATTACHE_SPAWN_H
#define ATTACHE_SPAWN_H
#include <sys/types.h>

/// 0 with `*pid` set, or an errno value.
int attache_spawn_helper(const char *path, char *const argv[], int channel, pid_t *pid);

/// Starting a program a test runs (a store, a queue server, curl): output (1 and 2) to the file
/// `output` (created or truncated), stdin as it is, every other descriptor closed, the caller's
/// environment. Closing matters: a server socket this process accepted (NIO's are not
/// close-on-exec) kept open in a child is a connection its client never sees closed.
/// 0 with `*pid` set, or an errno value.
int attache_spawn_program(const char *path, char *const argv[], const char *output, pid_t *pid);

/// Sends one byte carrying `fd` (SCM_RIGHTS); 0 or an errno value (EPIPE: the helper is gone).
int attache_send_descriptor(int channel, int fd);
/// Receives that byte and the descriptor it carries (close-on-exec); 0 or an errno value
/// (EPROTO: the byte came without exactly one descriptor).
int attache_receive_descriptor(int channel, int *fd);
#endif

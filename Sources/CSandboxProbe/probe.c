#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "attache_sandbox_probe.h"

int attache_sandbox_probe(const char *call) {
    if (strcmp(call, "socket") == 0) return socket(AF_INET, SOCK_STREAM, 0);
    if (strcmp(call, "connect") == 0) return connect(3, NULL, 0);
    if (strcmp(call, "execve") == 0) {
        char *const argv[] = { "/bin/true", NULL };
        return execve("/bin/true", argv, NULL);
    }
    if (strcmp(call, "fork") == 0) {
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        return pid;
    }
    if (strcmp(call, "open") == 0) return open("/etc/hostname", O_RDONLY);
    if (strcmp(call, "spin") == 0) {
        // A decoder stuck in a loop: only a kill or the CPU limit ends it.
        for (volatile unsigned long i = 0;; i++) {}
    }
    errno = EINVAL;
    return -1;
}

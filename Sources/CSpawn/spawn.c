#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include "attache_spawn.h"

extern char **environ;

int attache_spawn_helper(const char *path, char *const argv[], int channel, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc) return rc;
    rc = posix_spawnattr_init(&attributes);
    if (rc) {
        posix_spawn_file_actions_destroy(&actions);
        return rc;
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    char *const environment[] = { NULL };
    if (!rc) rc = posix_spawn_file_actions_adddup2(&actions, channel, 0);
    if (!rc) rc = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (!rc) rc = posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    if (!rc) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (!rc) rc = posix_spawnattr_setsigmask(&attributes, &none);
    if (!rc) rc = posix_spawnattr_setsigdefault(&attributes, &all);
    if (!rc) rc = posix_spawnattr_setpgroup(&attributes, 0);
    if (!rc) rc = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (!rc) rc = posix_spawn(pid, path, &actions, &attributes, argv, environment);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

int attache_spawn_program(const char *path, char *const argv[], const char *output, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc) return rc;
    if (!rc) rc = posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (!rc) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (!rc) rc = posix_spawn(pid, path, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

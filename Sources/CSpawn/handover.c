// A file handed to a decoder helper by descriptor (SCM_RIGHTS) instead of by its bytes: a 9 MB
// download then crosses the socket as one byte, and the helper maps the file where it is. The
// cmsg macros are C's; this is the only place that uses them.
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "attache_spawn.h"

int attache_send_descriptor(int channel, int fd) {
    char byte = 'f';
    struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space,
                              .msg_controllen = sizeof control.space };
    struct cmsghdr *c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    ssize_t n;
    do { n = sendmsg(channel, &message, MSG_NOSIGNAL); } while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : (n < 0 ? errno : EPIPE);
}

int attache_receive_descriptor(int channel, int *fd) {
    char byte = 0;
    struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space,
                              .msg_controllen = sizeof control.space };
    ssize_t n;
    do { n = recvmsg(channel, &message, MSG_CMSG_CLOEXEC); } while (n < 0 && errno == EINTR);
    if (n < 0) return errno;
    if (n == 0) return EPIPE;
    struct cmsghdr *c = CMSG_FIRSTHDR(&message);
    if (byte != 'f' || (message.msg_flags & MSG_CTRUNC) || !c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len != CMSG_LEN(sizeof(int)))
        return EPROTO;
    memcpy(fd, CMSG_DATA(c), sizeof(int));
    return 0;
}

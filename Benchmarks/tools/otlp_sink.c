// An OTLP/HTTP endpoint for the benchmarks that take traces (serve.sh, relay.sh and the
// instruction counts): it answers each POST at once with an empty 200, counts the spans in each
// ExportTraceServiceRequest as it arrives (the protobuf walked in place, nothing kept), and on
// SIGTERM prints `received E exports, S spans, B bytes`. It stands for a collector on another
// host, so it must take as little as it can of the cores Attache is measured on: the Python
// sink it replaces held every body for counting at exit, and took 3-9 % of a core at a relay's
// full rate, which the traced rate paid for. Serves HTTP/1.1 with keep-alive, plain bodies only
// (Content-Length; no chunks, no gzip: a compressed body is counted as bytes, its spans as
// unknown). Built by Benchmarks/lib.sh with the system's cc; not part of Attache.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CLIENTS 64

typedef struct {
    int fd;
    unsigned char *data;
    size_t size, capacity;
    long body;  // bytes of body expected after the head, -1 while reading the head
    size_t head;  // the head's length, once read
    int gzip;
} client;

static volatile sig_atomic_t stopping = 0;
static unsigned long long exports = 0, spans = 0, bytes = 0, unknown = 0;

static void on_term(int sig) { (void)sig; stopping = 1; }

static int varint(const unsigned char *p, size_t end, size_t *i, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *i < end; shift += 7) {
        unsigned char b = p[(*i)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) { *out = v; return 0; }
    }
    return -1;
}

// Calls `each` with every length-delimited field `number` of the message at p[start, end), or -1
// when the message is not protobuf.
typedef int (*visit)(const unsigned char *p, size_t start, size_t end);

static int fields(const unsigned char *p, size_t i, size_t end, uint64_t number, visit each) {
    int found = 0;
    while (i < end) {
        uint64_t key, size;
        if (varint(p, end, &i, &key)) return -1;
        switch (key & 7) {
        case 0: if (varint(p, end, &i, &size)) return -1; break;
        case 1: i += 8; break;
        case 5: i += 4; break;
        case 2:
            if (varint(p, end, &i, &size) || size > end - i) return -1;
            if (key >> 3 == number) {
                int n = each ? each(p, i, i + size) : 1;
                if (n < 0) return -1;
                found += n;
            }
            i += size;
            break;
        default: return -1;
        }
    }
    return i == end ? found : -1;
}

static int span(const unsigned char *p, size_t start, size_t end) { (void)p; (void)start; (void)end; return 1; }
static int scope_spans(const unsigned char *p, size_t start, size_t end) { return fields(p, start, end, 2, span); }
static int resource_spans(const unsigned char *p, size_t start, size_t end) { return fields(p, start, end, 2, scope_spans); }

static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";

static void drop(client *c) {
    close(c->fd);
    free(c->data);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

// Reads the head's Content-Length and Content-Encoding; -1 without a length.
static long head_fields(client *c) {
    long length = -1;
    c->gzip = 0;
    char *line = (char *)c->data, *end = (char *)c->data + c->head;
    while (line < end) {
        char *next = memchr(line, '\n', (size_t)(end - line));
        if (!next) break;
        if (!strncasecmp(line, "content-length:", 15)) length = strtol(line + 15, NULL, 10);
        if (!strncasecmp(line, "content-encoding:", 17) && memmem(line, (size_t)(next - line), "gzip", 4)) c->gzip = 1;
        line = next + 1;
    }
    return length;
}

// Handles what has arrived; returns -1 when the connection is to be closed.
static int advance(client *c) {
    for (;;) {
        if (c->body < 0) {
            unsigned char *blank = memmem(c->data, c->size, "\r\n\r\n", 4);
            if (!blank) return c->size > 65536 ? -1 : 0;
            c->head = (size_t)(blank - c->data) + 4;
            c->body = head_fields(c);
            if (c->body < 0) return -1;
        }
        if (c->size < c->head + (size_t)c->body) return 0;
        const unsigned char *message = c->data + c->head;
        exports++;
        bytes += (unsigned long long)c->body;
        int n = c->gzip ? -1 : fields(message, 0, (size_t)c->body, 1, resource_spans);
        if (n < 0) unknown++; else spans += (unsigned long long)n;
        if (write(c->fd, answer, sizeof answer - 1) != (ssize_t)(sizeof answer - 1)) return -1;
        size_t used = c->head + (size_t)c->body;
        memmove(c->data, c->data + used, c->size - used);
        c->size -= used;
        c->body = -1;
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: otlp_sink PORT\n");
        return 2;
    }
    struct sigaction action = { .sa_handler = on_term };
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])) };
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 16)) {
        perror("otlp_sink");
        return 1;
    }
    printf("listening\n");
    fflush(stdout);
    client clients[MAX_CLIENTS];
    for (int i = 0; i < MAX_CLIENTS; i++) clients[i] = (client){ .fd = -1 };
    struct pollfd polled[MAX_CLIENTS + 1];
    while (!stopping) {
        polled[0] = (struct pollfd){ .fd = listener, .events = POLLIN };
        for (int i = 0; i < MAX_CLIENTS; i++) polled[i + 1] = (struct pollfd){ .fd = clients[i].fd, .events = POLLIN };
        if (poll(polled, MAX_CLIENTS + 1, -1) < 0) {
            if (errno == EINTR) continue;
            perror("poll");
            return 1;
        }
        if (polled[0].revents & POLLIN) {
            int fd = accept(listener, NULL, NULL);
            int slot = -1;
            for (int i = 0; i < MAX_CLIENTS && slot < 0; i++) if (clients[i].fd < 0) slot = i;
            if (fd >= 0 && slot < 0) close(fd);
            if (fd >= 0 && slot >= 0) clients[slot] = (client){ .fd = fd, .body = -1 };
        }
        for (int i = 0; i < MAX_CLIENTS; i++) {
            client *c = &clients[i];
            if (c->fd < 0 || !(polled[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            if (c->capacity - c->size < 65536) {
                size_t wanted = c->capacity ? c->capacity * 2 : 1 << 20;
                unsigned char *grown = realloc(c->data, wanted);
                if (!grown) { drop(c); continue; }
                c->data = grown;
                c->capacity = wanted;
            }
            ssize_t n = read(c->fd, c->data + c->size, c->capacity - c->size);
            if (n <= 0) {
                if (n < 0 && errno == EINTR) continue;
                drop(c);
                continue;
            }
            c->size += (size_t)n;
            if (advance(c) < 0) drop(c);
        }
    }
    printf("received %llu exports, %llu spans, %llu bytes", exports, spans, bytes);
    if (unknown) printf(" (%llu exports not counted: compressed or not OTLP)", unknown);
    printf("\n");
    return 0;
}

// NATS JetStream for the queue worker: the calls it makes to nats.c (the NATS project's C client,
// Debian's libnats), each returning 0 or -1 with a message, so that Swift handles no C strings in
// structs, no jsErrCode and no natsMsgList. Handles are opaque; every one is freed by its own
// function here.
#ifndef ATTACHE_NATS_H
#define ATTACHE_NATS_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

typedef struct attache_nats attache_nats;     // a connection and its JetStream context
typedef struct attache_nats_sub attache_nats_sub;  // a pull subscription
typedef struct attache_nats_msg attache_nats_msg;  // one received message

/// What a connection needs; NULL for what is not used.
typedef struct {
    const char *url;          // nats://host:port, or several separated by commas
    const char *user, *password, *token;
    const char *credentials;  // a .creds file (JWT + NKey)
    const char *ca;           // a CA file: TLS with that CA
    bool tls;                 // TLS with the system's CAs
    const char *name;         // the connection's name, as the server shows it
    int64_t timeout_ms;       // connect timeout
} attache_nats_options;

int attache_nats_connect(attache_nats **out, const attache_nats_options *options, char *error, size_t size);
void attache_nats_close(attache_nats *nats);
/// Whether the connection is up (not reconnecting, not closed).
bool attache_nats_connected(attache_nats *nats);

/// Makes a stream capturing `subject` when there is none called `name` (file storage, the given
/// duplicate window); one that exists is used as it is. `duplicates_ns` receives its window.
int attache_nats_ensure_stream(attache_nats *nats, const char *name, const char *subject, int64_t duplicate_window_ns,
                               int64_t *duplicates_ns, char *error, size_t size);

/// Binds to the durable pull consumer `durable` of `stream`, made (explicit acks, the given ack
/// wait, deliveries and ack-pending cap, filtered to `subject`) when it does not exist.
int attache_nats_pull_subscribe(attache_nats *nats, attache_nats_sub **out, const char *stream, const char *subject,
                                const char *durable, int64_t ack_wait_ns, int64_t max_deliver, int64_t max_ack_pending,
                                char *error, size_t size);
void attache_nats_unsubscribe(attache_nats_sub *sub);

/// Up to `batch` messages, waiting up to `timeout_ms` for the first; `count` is how many were put
/// in `out` (0 on a timeout, which is not an error).
int attache_nats_fetch(attache_nats_sub *sub, int batch, int64_t timeout_ms, attache_nats_msg **out, int *count,
                       char *error, size_t size);

typedef struct {
    uint64_t stream_sequence;
    uint64_t delivered;        // 1 the first time
    uint64_t pending;          // still in the stream for this consumer
    int64_t timestamp_ns;      // when the stream stored it (Unix time)
} attache_nats_meta;

const void *attache_nats_msg_data(attache_nats_msg *msg, int *length);
/// The message's header block as it arrived (`NATS/1.0…\r\n\r\n`; valid while the message lives;
/// length 0 for none), or -1 when it cannot be read as it arrived: the caller falls back to
/// `attache_nats_msg_header`.
int attache_nats_msg_header_block(attache_nats_msg *msg, const char **block, int *length);
/// A header's value as nats.c parses it, or NULL (valid while the message lives).
const char *attache_nats_msg_header(attache_nats_msg *msg, const char *key);
int attache_nats_msg_meta(attache_nats_msg *msg, attache_nats_meta *meta);
int attache_nats_ack(attache_nats_msg *msg);
int attache_nats_nak(attache_nats_msg *msg, int64_t delay_ms);
/// Still being worked on: the stream's ack wait starts again.
int attache_nats_in_progress(attache_nats_msg *msg);
void attache_nats_msg_free(attache_nats_msg *msg);

/// Publishes to JetStream and waits for the stream's acknowledgement. `headers` is `count` pairs
/// (key, value). `duplicate` says the stream had the message id already (dropped, as intended).
int attache_nats_publish(attache_nats *nats, const char *subject, const void *data, int length,
                         const char *const *headers, int count, int64_t timeout_ms, bool *duplicate,
                         char *error, size_t size);

#endif

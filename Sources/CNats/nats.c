// The one file that talks to nats.c; see include/attache_nats.h.
#include "attache_nats.h"
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct attache_nats {
    natsConnection *nc;
    jsCtx *js;
};

struct attache_nats_sub {
    natsSubscription *sub;
};

// Messages are nats.c's own, cast: no wrapper to allocate per message.
static natsMsg *msg_of(attache_nats_msg *m) { return (natsMsg *)m; }

/// `what: <nats.c's text for the status> (<its last error>)`, and -1.
static int fail(char *error, size_t size, const char *what, natsStatus s, jsErrCode code) {
    natsStatus last = NATS_OK;
    const char *detail = nats_GetLastError(&last);
    if (code != 0) {
        snprintf(error, size, "%s: %s (JetStream error %d)", what, natsStatus_GetText(s), (int)code);
    } else if (detail != NULL && detail[0] != '\0') {
        snprintf(error, size, "%s: %s (%s)", what, natsStatus_GetText(s), detail);
    } else {
        snprintf(error, size, "%s: %s", what, natsStatus_GetText(s));
    }
    return -1;
}

int attache_nats_connect(attache_nats **out, const attache_nats_options *o, char *error, size_t size) {
    natsOptions *opts = NULL;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetURL(opts, o->url);
    if (s == NATS_OK && o->name) s = natsOptions_SetName(opts, o->name);
    if (s == NATS_OK && o->user) s = natsOptions_SetUserInfo(opts, o->user, o->password);
    if (s == NATS_OK && o->token) s = natsOptions_SetToken(opts, o->token);
    if (s == NATS_OK && o->credentials) s = natsOptions_SetUserCredentialsFromFiles(opts, o->credentials, NULL);
    if (s == NATS_OK && o->ca) s = natsOptions_LoadCATrustedCertificates(opts, o->ca);
    if (s == NATS_OK && (o->tls || o->ca)) s = natsOptions_SetSecure(opts, true);
    if (s == NATS_OK && o->timeout_ms > 0) s = natsOptions_SetTimeout(opts, o->timeout_ms);
    // Once connected, a lost server is reconnected to forever: messages in flight are then
    // redelivered by the stream, and the worker waits for the server instead of exiting.
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
    if (s != NATS_OK) {
        natsOptions_Destroy(opts);
        return fail(error, size, "NATS options", s, 0);
    }
    natsConnection *nc = NULL;
    s = natsConnection_Connect(&nc, opts);
    natsOptions_Destroy(opts);
    if (s != NATS_OK) return fail(error, size, "connect", s, 0);
    jsCtx *js = NULL;
    s = natsConnection_JetStream(&js, nc, NULL);
    if (s != NATS_OK) {
        natsConnection_Destroy(nc);
        return fail(error, size, "JetStream", s, 0);
    }
    attache_nats *n = calloc(1, sizeof *n);
    if (n == NULL) {
        jsCtx_Destroy(js);
        natsConnection_Destroy(nc);
        snprintf(error, size, "out of memory");
        return -1;
    }
    n->nc = nc;
    n->js = js;
    *out = n;
    return 0;
}

void attache_nats_close(attache_nats *n) {
    if (n == NULL) return;
    jsCtx_Destroy(n->js);
    natsConnection_Close(n->nc);
    natsConnection_Destroy(n->nc);
    free(n);
}

bool attache_nats_connected(attache_nats *n) {
    return natsConnection_Status(n->nc) == NATS_CONN_STATUS_CONNECTED;
}

int attache_nats_ensure_stream(attache_nats *n, const char *name, const char *subject, int64_t window,
                               int64_t *duplicates, char *error, size_t size) {
    jsStreamInfo *si = NULL;
    jsErrCode code = 0;
    natsStatus s = js_GetStreamInfo(&si, n->js, name, NULL, &code);
    if (s != NATS_OK && (s == NATS_NOT_FOUND || code == JSStreamNotFoundErr)) {
        jsStreamConfig cfg;
        jsStreamConfig_Init(&cfg);
        const char *subjects[1] = {subject};
        cfg.Name = name;
        cfg.Subjects = subjects;
        cfg.SubjectsLen = 1;
        cfg.Storage = js_FileStorage;
        cfg.Duplicates = window;
        code = 0;
        s = js_AddStream(&si, n->js, &cfg, NULL, &code);
        if (s != NATS_OK) {  // a worker starting beside this one made it first?
            code = 0;
            s = js_GetStreamInfo(&si, n->js, name, NULL, &code);
        }
    }
    if (s != NATS_OK) return fail(error, size, "stream", s, code);
    *duplicates = si->Config->Duplicates;
    jsStreamInfo_Destroy(si);
    return 0;
}

int attache_nats_pull_subscribe(attache_nats *n, attache_nats_sub **out, const char *stream, const char *subject,
                                const char *durable, int64_t ack_wait, int64_t max_deliver, int64_t max_ack_pending,
                                char *error, size_t size) {
    jsConsumerInfo *ci = NULL;
    jsErrCode code = 0;
    natsStatus s = js_GetConsumerInfo(&ci, n->js, stream, durable, NULL, &code);
    if (s == NATS_NOT_FOUND || code == JSConsumerNotFoundErr) {
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        cc.Durable = durable;
        cc.AckPolicy = js_AckExplicit;
        cc.DeliverPolicy = js_DeliverAll;
        cc.AckWait = ack_wait;
        cc.MaxDeliver = max_deliver;
        cc.MaxAckPending = max_ack_pending;
        cc.FilterSubject = subject;
        code = 0;
        s = js_AddConsumer(&ci, n->js, stream, &cc, NULL, &code);
        if (s != NATS_OK) {  // another worker made it first?
            code = 0;
            s = js_GetConsumerInfo(&ci, n->js, stream, durable, NULL, &code);
        }
    }
    if (s != NATS_OK) return fail(error, size, "consumer", s, code);
    jsConsumerInfo_Destroy(ci);

    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Consumer = durable;
    natsSubscription *sub = NULL;
    code = 0;
    s = js_PullSubscribe(&sub, n->js, subject, durable, NULL, &so, &code);
    if (s != NATS_OK) return fail(error, size, "pull subscribe", s, code);
    attache_nats_sub *made = calloc(1, sizeof *made);
    if (made == NULL) {
        natsSubscription_Destroy(sub);
        snprintf(error, size, "out of memory");
        return -1;
    }
    made->sub = sub;
    *out = made;
    return 0;
}

void attache_nats_unsubscribe(attache_nats_sub *sub) {
    if (sub == NULL) return;
    // Not natsSubscription_Unsubscribe: for a durable that would delete the consumer, which the
    // other workers share.
    natsSubscription_Destroy(sub->sub);
    free(sub);
}

int attache_nats_fetch(attache_nats_sub *sub, int batch, int64_t timeout_ms, attache_nats_msg **out, int *count,
                       char *error, size_t size) {
    natsMsgList list = {0};
    jsErrCode code = 0;
    natsStatus s = natsSubscription_Fetch(&list, sub->sub, batch, timeout_ms, &code);
    *count = 0;
    if (s != NATS_OK && list.Count == 0) {
        if (s == NATS_TIMEOUT) return 0;
        return fail(error, size, "fetch", s, code);
    }
    for (int i = 0; i < list.Count && i < batch; i++) {
        if (list.Msgs[i] == NULL) continue;
        out[(*count)++] = (attache_nats_msg *)list.Msgs[i];
        list.Msgs[i] = NULL;  // kept: natsMsgList_Destroy frees only the array
    }
    natsMsgList_Destroy(&list);
    return 0;
}

const void *attache_nats_msg_data(attache_nats_msg *m, int *length) {
    *length = natsMsg_GetDataLength(msg_of(m));
    return natsMsg_GetData(msg_of(m));
}

// nats.c 3.4 (Debian's) parses a header block in place and takes an empty value's line end for
// blanks before it: `X-Trace: \r\nAttache-Deadline-Ms: 1\r\n` reads as X-Trace "Attache-Deadline-Ms:
// 1" and no deadline (fixed in a later release). So the worker parses the block itself, and this
// hands it over as it arrived. The block is not in nats.c's API: its message (src/msg.h) is read up
// to the fields needed, and only where the fields the API does give agree with that layout.
struct nats_msg_prefix {
    void *gc_next, *gc_free;  // natsGCItem
    const char *subject, *reply;
    char *hdr;
    void *headers;
    const char *data;
    int dataLen, hdrLen;
};

int attache_nats_msg_header_block(attache_nats_msg *m, const char **block, int *length) {
    const struct nats_msg_prefix *p = (const struct nats_msg_prefix *)(const void *)m;
    natsMsg *msg = msg_of(m);
    *block = NULL;
    *length = 0;
    if (p->subject != natsMsg_GetSubject(msg) || p->reply != natsMsg_GetReply(msg) || p->data != natsMsg_GetData(msg) ||
        p->dataLen != natsMsg_GetDataLength(msg) || p->hdrLen < 0)
        return -1;
    if (p->hdr == NULL || p->hdrLen == 0) return 0;
    // A block nats.c has parsed already has NULs where its colons and line ends were.
    if (p->hdrLen < 10 || memcmp(p->hdr, "NATS/1.0", 8) != 0 || memchr(p->hdr, 0, (size_t)p->hdrLen) != NULL) return -1;
    *block = p->hdr;
    *length = p->hdrLen;
    return 0;
}

const char *attache_nats_msg_header(attache_nats_msg *m, const char *key) {
    const char *value = NULL;
    return natsMsgHeader_Get(msg_of(m), key, &value) == NATS_OK ? value : NULL;
}

int attache_nats_msg_meta(attache_nats_msg *m, attache_nats_meta *meta) {
    jsMsgMetaData *md = NULL;
    if (natsMsg_GetMetaData(&md, msg_of(m)) != NATS_OK) return -1;
    meta->stream_sequence = md->Sequence.Stream;
    meta->delivered = md->NumDelivered;
    meta->pending = md->NumPending;
    meta->timestamp_ns = md->Timestamp;
    jsMsgMetaData_Destroy(md);
    return 0;
}

int attache_nats_ack(attache_nats_msg *m) {
    return natsMsg_Ack(msg_of(m), NULL) == NATS_OK ? 0 : -1;
}

int attache_nats_nak(attache_nats_msg *m, int64_t delay_ms) {
    return natsMsg_NakWithDelay(msg_of(m), delay_ms, NULL) == NATS_OK ? 0 : -1;
}

int attache_nats_in_progress(attache_nats_msg *m) {
    return natsMsg_InProgress(msg_of(m), NULL) == NATS_OK ? 0 : -1;
}

void attache_nats_msg_free(attache_nats_msg *m) {
    natsMsg_Destroy(msg_of(m));
}

int attache_nats_publish(attache_nats *n, const char *subject, const void *data, int length,
                         const char *const *headers, int count, int64_t timeout_ms, bool *duplicate,
                         char *error, size_t size) {
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, subject, NULL, data, length);
    for (int i = 0; s == NATS_OK && i < count; i++) s = natsMsgHeader_Set(m, headers[2 * i], headers[2 * i + 1]);
    if (s != NATS_OK) {
        natsMsg_Destroy(m);
        return fail(error, size, "message", s, 0);
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = timeout_ms;
    jsPubAck *ack = NULL;
    jsErrCode code = 0;
    s = js_PublishMsg(&ack, n->js, m, &po, &code);
    natsMsg_Destroy(m);
    if (s != NATS_OK) return fail(error, size, "publish", s, code);
    *duplicate = ack->Duplicate;
    jsPubAck_Destroy(ack);
    return 0;
}

// Calls through function pointers would trip curl.h's type-checking macros, which are for
// direct calls only.
#define CURL_DISABLE_TYPECHECK 1
#include <dlfcn.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include "attache_curl.h"

#define ATTACHE_CURL_FUNCTIONS(X) \
    X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_strerror) X(curl_easy_setopt) \
    X(curl_easy_getinfo) X(curl_slist_append) X(curl_slist_free_all) X(curl_free) X(curl_url) \
    X(curl_url_cleanup) X(curl_url_set) X(curl_url_get) X(curl_multi_init) X(curl_multi_cleanup) \
    X(curl_multi_setopt) X(curl_multi_add_handle) X(curl_multi_remove_handle) X(curl_multi_perform) \
    X(curl_multi_poll) X(curl_multi_wakeup) X(curl_multi_info_read) X(curl_multi_strerror)

static struct {
#define FIELD(name) __typeof__(name) *name;
    ATTACHE_CURL_FUNCTIONS(FIELD)
#undef FIELD
} lib;

#define C(name) (lib.name)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = 0;
static char failure[160];

static void load(void) {
    // RTLD_LOCAL: nothing else in the process should bind to this copy's symbols by accident.
    // RTLD_LAZY: of the ~10,000 symbol references of libcurl and its ~30 libraries, only those
    // called get bound (0.3 ms less to load); the functions used here are looked up below.
    void *handle = dlopen("libcurl.so.4", RTLD_LAZY | RTLD_LOCAL);
    if (!handle) {
        snprintf(failure, sizeof failure, "libcurl not found: %s", dlerror());
        return;
    }
#define LOAD(name) \
    lib.name = (__typeof__(name) *)dlsym(handle, #name); \
    if (!lib.name) { snprintf(failure, sizeof failure, "libcurl has no %s", #name); return; }
    ATTACHE_CURL_FUNCTIONS(LOAD)
#undef LOAD
    // curl_global_init is not thread-safe: pthread_once makes this the only call.
    CURLcode rc = C(curl_global_init)(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(failure, sizeof failure, "curl_global_init: %s", C(curl_easy_strerror)(rc));
        return;
    }
    loaded = 1;
}

int attache_curl_load(char *message, size_t size) {
    pthread_once(&once, load);
    if (!loaded && message && size) snprintf(message, size, "%s", failure);
    return loaded;
}

CURL *attache_curl_easy_init(void) { return C(curl_easy_init)(); }
void attache_curl_easy_cleanup(CURL *h) { C(curl_easy_cleanup)(h); }
const char *attache_curl_easy_strerror(CURLcode code) { return C(curl_easy_strerror)(code); }
CURLcode attache_curl_setopt_long(CURL *h, CURLoption o, long v) { return C(curl_easy_setopt)(h, o, v); }
CURLcode attache_curl_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return C(curl_easy_setopt)(h, o, v); }
CURLcode attache_curl_setopt_ptr(CURL *h, CURLoption o, void *v) { return C(curl_easy_setopt)(h, o, v); }
CURLcode attache_curl_setopt_str(CURL *h, CURLoption o, const char *v) { return C(curl_easy_setopt)(h, o, v); }
CURLcode attache_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return C(curl_easy_setopt)(h, o, v); }
CURLcode attache_curl_setopt_data_fn(CURL *h, CURLoption o, attache_curl_data_fn v) { return C(curl_easy_setopt)(h, o, v); }
CURLcode attache_curl_setopt_opensocket_fn(CURL *h, attache_curl_opensocket_fn v) {
    return C(curl_easy_setopt)(h, CURLOPT_OPENSOCKETFUNCTION, v);
}
CURLcode attache_curl_setopt_seek_fn(CURL *h, attache_curl_seek_fn v) { return C(curl_easy_setopt)(h, CURLOPT_SEEKFUNCTION, v); }
CURLcode attache_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return C(curl_easy_getinfo)(h, i, v); }
CURLcode attache_curl_getinfo_off_t(CURL *h, CURLINFO i, curl_off_t *v) { return C(curl_easy_getinfo)(h, i, v); }
CURLcode attache_curl_getinfo_str(CURL *h, CURLINFO i, char **v) { return C(curl_easy_getinfo)(h, i, v); }

struct curl_slist *attache_curl_slist_append(struct curl_slist *list, const char *s) { return C(curl_slist_append)(list, s); }
void attache_curl_slist_free_all(struct curl_slist *list) { C(curl_slist_free_all)(list); }
void attache_curl_free(void *p) { C(curl_free)(p); }

CURLU *attache_curl_url(void) { return C(curl_url)(); }
void attache_curl_url_cleanup(CURLU *u) { C(curl_url_cleanup)(u); }
CURLUcode attache_curl_url_set(CURLU *u, CURLUPart part, const char *content, unsigned int flags) {
    return C(curl_url_set)(u, part, content, flags);
}
CURLUcode attache_curl_url_get(CURLU *u, CURLUPart part, char **content, unsigned int flags) {
    return C(curl_url_get)(u, part, content, flags);
}

CURLM *attache_curl_multi_init(void) { return C(curl_multi_init)(); }
CURLMcode attache_curl_multi_cleanup(CURLM *m) { return C(curl_multi_cleanup)(m); }
CURLMcode attache_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return C(curl_multi_setopt)(m, o, v); }
CURLMcode attache_curl_multi_add_handle(CURLM *m, CURL *h) { return C(curl_multi_add_handle)(m, h); }
CURLMcode attache_curl_multi_remove_handle(CURLM *m, CURL *h) { return C(curl_multi_remove_handle)(m, h); }
CURLMcode attache_curl_multi_perform(CURLM *m, int *running) { return C(curl_multi_perform)(m, running); }
CURLMcode attache_curl_multi_poll(CURLM *m, int timeout_ms, int *ready) {
    return C(curl_multi_poll)(m, NULL, 0, timeout_ms, ready);
}
CURLMcode attache_curl_multi_wakeup(CURLM *m) { return C(curl_multi_wakeup)(m); }
CURLMsg *attache_curl_multi_info_read(CURLM *m, int *queued) { return C(curl_multi_info_read)(m, queued); }
const char *attache_curl_multi_strerror(CURLMcode code) { return C(curl_multi_strerror)(code); }

CURLcode attache_curl_msg_result(const CURLMsg *msg) { return msg->data.result; }

int attache_curl_sockaddr_ip(const struct curl_sockaddr *a, unsigned char out[16], unsigned short *port) {
    if (a->family == AF_INET && a->addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&a->addr;
        memcpy(out, &in->sin_addr, 4);
        *port = ntohs(in->sin_port);
        return 4;
    }
    if (a->family == AF_INET6 && a->addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->addr;
        memcpy(out, &in6->sin6_addr, 16);
        *port = ntohs(in6->sin6_port);
        return 6;
    }
    return 0;
}

curl_socket_t attache_curl_open_socket(const struct curl_sockaddr *a) {
    return socket(a->family, a->socktype, a->protocol);
}

curl_socket_t attache_curl_socket_bad(void) { return CURL_SOCKET_BAD; }

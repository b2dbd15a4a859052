// Typed wrappers for libcurl's variadic and union-based API, which Swift cannot call directly.
#ifndef ATTACHE_CCURL_SHIM_H
#define ATTACHE_CCURL_SHIM_H
#include <curl/curl.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

typedef size_t (*attache_curl_data_fn)(char *, size_t, size_t, void *);
typedef int (*attache_curl_xferinfo_fn)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);
typedef curl_socket_t (*attache_curl_opensocket_fn)(void *, curlsocktype, struct curl_sockaddr *);

static inline CURLcode attache_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode attache_curl_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode attache_curl_setopt_ptr(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode attache_curl_setopt_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode attache_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode attache_curl_setopt_data_fn(CURL *h, CURLoption o, attache_curl_data_fn v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode attache_curl_setopt_xferinfo_fn(CURL *h, attache_curl_xferinfo_fn v) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, v); }
static inline CURLcode attache_curl_setopt_opensocket_fn(CURL *h, attache_curl_opensocket_fn v) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, v); }

static inline CURLcode attache_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode attache_curl_getinfo_off_t(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode attache_curl_getinfo_str(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }

static inline CURLMcode attache_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

// CURLMsg keeps its result in a union.
static inline CURLcode attache_curl_msg_result(const CURLMsg *msg) { return msg->data.result; }

// Copies the address curl is about to connect to: returns 4 or 6 (the family), or 0 if neither.
static inline int attache_curl_sockaddr_ip(const struct curl_sockaddr *a, unsigned char out[16]) {
    if (a->family == AF_INET && a->addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&a->addr;
        memcpy(out, &in->sin_addr, 4);
        return 4;
    }
    if (a->family == AF_INET6 && a->addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->addr;
        memcpy(out, &in6->sin6_addr, 16);
        return 6;
    }
    return 0;
}

static inline curl_socket_t attache_curl_open_socket(const struct curl_sockaddr *a) {
    return socket(a->family, a->socktype, a->protocol);
}

static inline curl_socket_t attache_curl_socket_bad(void) { return CURL_SOCKET_BAD; }
#endif

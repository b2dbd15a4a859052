// libcurl for Swift: typed wrappers for its variadic and union-based calls, and every other call
// the fetch engine makes, all going through functions loaded with dlopen on first use.
//
// Why not link it: libcurl pulls in about thirty shared objects (TLS, Kerberos, LDAP, SSH, ...),
// which cost every attache process ~5 ms and ~6 MB at start, including `thumbnail` and `probe`,
// which never fetch. The headers are only for types and constants.
#ifndef ATTACHE_CURL_H
#define ATTACHE_CURL_H
#include <stddef.h>
#include <curl/curl.h>

/// Loads libcurl once (thread-safe) and calls curl_global_init; returns 1 when ready, else 0 with
/// a message. Every other function here requires it to have succeeded.
int attache_curl_load(char *message, size_t size);

typedef size_t (*attache_curl_data_fn)(char *, size_t, size_t, void *);
typedef curl_socket_t (*attache_curl_opensocket_fn)(void *, curlsocktype, struct curl_sockaddr *);
typedef int (*attache_curl_seek_fn)(void *, curl_off_t, int);

CURL *attache_curl_easy_init(void);
void attache_curl_easy_cleanup(CURL *h);
const char *attache_curl_easy_strerror(CURLcode code);
CURLcode attache_curl_setopt_long(CURL *h, CURLoption o, long v);
CURLcode attache_curl_setopt_off_t(CURL *h, CURLoption o, curl_off_t v);
CURLcode attache_curl_setopt_ptr(CURL *h, CURLoption o, void *v);
CURLcode attache_curl_setopt_str(CURL *h, CURLoption o, const char *v);
CURLcode attache_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v);
CURLcode attache_curl_setopt_data_fn(CURL *h, CURLoption o, attache_curl_data_fn v);
CURLcode attache_curl_setopt_opensocket_fn(CURL *h, attache_curl_opensocket_fn v);
CURLcode attache_curl_setopt_seek_fn(CURL *h, attache_curl_seek_fn v);
CURLcode attache_curl_getinfo_long(CURL *h, CURLINFO i, long *v);
CURLcode attache_curl_getinfo_off_t(CURL *h, CURLINFO i, curl_off_t *v);
CURLcode attache_curl_getinfo_str(CURL *h, CURLINFO i, char **v);

struct curl_slist *attache_curl_slist_append(struct curl_slist *list, const char *s);
void attache_curl_slist_free_all(struct curl_slist *list);
void attache_curl_free(void *p);

CURLU *attache_curl_url(void);
void attache_curl_url_cleanup(CURLU *u);
CURLUcode attache_curl_url_set(CURLU *u, CURLUPart part, const char *content, unsigned int flags);
CURLUcode attache_curl_url_get(CURLU *u, CURLUPart part, char **content, unsigned int flags);

CURLM *attache_curl_multi_init(void);
CURLMcode attache_curl_multi_cleanup(CURLM *m);
CURLMcode attache_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v);
CURLMcode attache_curl_multi_add_handle(CURLM *m, CURL *h);
CURLMcode attache_curl_multi_remove_handle(CURLM *m, CURL *h);
CURLMcode attache_curl_multi_perform(CURLM *m, int *running);
CURLMcode attache_curl_multi_poll(CURLM *m, int timeout_ms, int *ready);
CURLMcode attache_curl_multi_wakeup(CURLM *m);
CURLMsg *attache_curl_multi_info_read(CURLM *m, int *queued);
const char *attache_curl_multi_strerror(CURLMcode code);

/// CURLMsg keeps its result in a union.
CURLcode attache_curl_msg_result(const CURLMsg *msg);

/// Copies the address curl is about to connect to: returns 4 or 6 (the family), or 0 if neither.
int attache_curl_sockaddr_ip(const struct curl_sockaddr *a, unsigned char out[16], unsigned short *port);
curl_socket_t attache_curl_open_socket(const struct curl_sockaddr *a);
curl_socket_t attache_curl_socket_bad(void);
#endif

// OpenSSL's digest interface (libcrypto 3, which libcurl links as well): SHA-256 for
// content-addressed names, incremental, so a body is hashed as it arrives.
#include <openssl/evp.h>

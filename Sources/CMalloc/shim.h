// glibc's allocator tuning (mallopt), for the service executable.
#include <malloc.h>

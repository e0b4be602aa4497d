// Linux's epoll for the load generator's SSE readers: Swift's Glibc module does not
// export <sys/epoll.h>, and swift-nio's own import of it (CNIOLinux) is not a product.
#include <sys/epoll.h>

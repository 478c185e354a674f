/*
 * libcmalloc.so: run Debian's redis-server on glibc's allocator, so that
 * libfaketime can be preloaded into it (redistest's fake clocks and the
 * chaos image's clock faults; docs/safety.md, "Clock faults").
 *
 * Why.  Debian's redis-server links the shared libjemalloc.so.2.  With
 * libfaketime preloaded it deadlocks at start: the first malloc enters
 * jemalloc's initialisation, which holds jemalloc's init lock and calls
 * clock_gettime or pthread_cond_init; libfaketime intercepts those and
 * initialises itself, which allocates (a dlsym error message, sem_open),
 * and that malloc waits for the init lock its own thread holds.  Preloaded
 * before libfaketime, this library answers every allocation redis-server and
 * its libraries make with glibc's malloc, so jemalloc is never entered.
 *
 * Build:  gcc -shared -fPIC -O2 -o libcmalloc.so libcmalloc.c -ldl
 * Use:    LD_PRELOAD="libcmalloc.so libfaketime.so.1" redis-server ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

void *malloc(size_t n) { return __libc_malloc(n); }
void *calloc(size_t n, size_t m) { return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t align, size_t n) { return __libc_memalign(align, n); }
void *aligned_alloc(size_t align, size_t n) { return __libc_memalign(align, n); }
void *valloc(size_t n) { return __libc_valloc(n); }
void *pvalloc(size_t n) { return __libc_pvalloc(n); }

int posix_memalign(void **out, size_t align, size_t n) {
  if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0) return EINVAL;
  void *p = __libc_memalign(align, n);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}

/* glibc's malloc_usable_size, found in libc itself: the next definition in
 * the search order is jemalloc's, which must not see glibc's blocks. */
size_t malloc_usable_size(void *p) {
  static size_t (*usable)(void *);
  if (usable == NULL) {
    void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    usable = (size_t (*)(void *))dlsym(libc, "malloc_usable_size");
  }
  return usable(p);
}

/* The jemalloc extensions redis-server calls.  Without them its INFO memory
 * reports no allocator statistics, and MEMORY STATS/DOCTOR say less. */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
  (void)name; (void)oldp; (void)oldlenp; (void)newp; (void)newlen;
  return ENOENT;
}
size_t nallocx(size_t n, int flags) { (void)flags; return n; }
void malloc_stats_print(void (*write)(void *, const char *), void *arg, const char *opts) {
  (void)write; (void)arg; (void)opts;
}

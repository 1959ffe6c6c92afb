/* nvrtc.h: CUDA C to PTX through NVRTC, loaded at run time with dlopen
 * (never linked), with the PTX cached on disk by source, options and NVRTC
 * version. */
#ifndef ASSOC_NVRTC_H
#define ASSOC_NVRTC_H

#include <stddef.h>

typedef struct Nvrtc Nvrtc;

/* Load NVRTC: $ASSOC_NVRTC when set (a path), else libnvrtc.so.13,
 * libnvrtc.so.12, libnvrtc.so, then the toolkit's lib64 ($CUDA_HOME,
 * /usr/local/cuda).  0, or -1 with a message that says what was tried. */
int nvrtc_open(Nvrtc **nv, char *msg, size_t n);
void nvrtc_close(Nvrtc *nv);
void nvrtc_version(const Nvrtc *nv, int *major, int *minor);
/* PTX of src for arch ("sm_90"; the virtual compute_90 is used), malloc'd.
 * *cached tells whether it came from the disk cache.  0, or -1 with msg
 * holding NVRTC's whole log. */
int nvrtc_ptx(Nvrtc *nv, const char *src, const char *arch, char **ptx, int *cached, char *msg, size_t n);
/* What NVRTC said while compiling the last nvrtc_ptx that succeeded (its
 * warnings); "" when it said nothing or the PTX came from the cache. */
const char *nvrtc_said(const Nvrtc *nv);

/* Loading NVRTC maps a library of a hundred megabytes, and a compile takes
 * tens of milliseconds: both can run while the caller checks the carrier.
 * nvrtc_preload starts loading it on a thread of its own (nvrtc_open then
 * finds it loaded); nothing to wait for or free, and a no-op after the
 * first call. */
void nvrtc_preload(void);
/* Waits until no thread of nvrtc_preload or nvrtc_start is inside NVRTC:
 * for a process that exits right after starting one (a refusal after
 * `emit --target ptx` began the load).  exit unloads the libraries under
 * such a thread, and libnvrtc's initializer, half run, then crashed or
 * hung on its lock, a third of the time. */
void nvrtc_quiesce(void);
/* nvrtc_open and nvrtc_ptx of src for arch on a thread of their own (src
 * and arch copied); NULL where no thread could start, and the caller
 * compiles itself. */
typedef struct NvrtcJob NvrtcJob;
NvrtcJob *nvrtc_start(const char *src, const char *arch);
/* Wait for j and free it; as nvrtc_open followed by nvrtc_ptx (*nv open
 * where 0 is returned; nv NULL closes it).  j NULL: -1 with nothing to
 * say. */
int nvrtc_finish(NvrtcJob *j, Nvrtc **nv, char **ptx, int *cached, char *msg, size_t n);

#endif

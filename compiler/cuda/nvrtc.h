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

#endif

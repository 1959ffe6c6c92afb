/* cache.h: the on-disk cache of generated code (PTX, emulator objects).
 *
 * A cache directory is the user's own, mode 0700: anyone else able to
 * write into it could plant what assoc loads.  Its files are written to
 * a new temporary file and renamed into place, and read without
 * following links, only when regular files; each artifact ends in a seal
 * (cache_seal) of its key and contents, checked before it is used. */
#ifndef ASSOC_CACHE_H
#define ASSOC_CACHE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* $XDG_CACHE_HOME/assoc/<sub> or ~/.cache/assoc/<sub>, created with mode
 * 0700; 0, or -1 with msg (one that cannot be made, or that is not
 * private: cache_private). */
int cache_dir(const char *sub, char *path, size_t n, char *msg, size_t mn);
/* 0 when path is a directory (not a link) of this user's, closed to
 * others; else -1 with msg saying which it is not. */
int cache_private(const char *path, char *msg, size_t mn);
/* Say once a process on stderr that a cache is not used, and why. */
void cache_warn(const char *msg);
/* Room for the temporary name of any path the system takes (OutFile). */
#define TEMP_NAME_MAX (PATH_MAX + 32)
/* An output file the user names (emit -o, run --output, explore -o),
 * which appears whole or not at all.  A regular file, or a new one, is
 * written beside its path and renamed over it once whole; a symbolic link
 * is followed, and its target replaced the same way, except a link of
 * another user's in a sticky folder open to all (/tmp) that is not the
 * folder owner's, which is refused (the kernel's fs.protected_symlinks
 * rule); anything else (a device such as /dev/null, a pipe) is written in
 * place: renaming onto it would replace the device itself.  A pipe that
 * no process opens for reading within 5 s is refused.  The temporary file
 * goes away if the process is interrupted (SIGINT, SIGTERM, SIGHUP). */
typedef struct {
	FILE *f;
	char dest[PATH_MAX];     /* the file renamed onto: the path, or its link's target */
	char tmp[TEMP_NAME_MAX]; /* "" when written in place */
	int slot;                /* in the interrupt handler's list, or -1 */
	char why[PATH_MAX + 96]; /* why outfile_open failed where errno does not say it, else "" */
} OutFile;
/* Open for writing ("w" or "wb"): 0, or -1 with errno (and o->why). */
int outfile_open(OutFile *o, const char *path, const char *mode);
/* Why outfile_open failed with errno e: o->why, or strerror(e). */
const char *outfile_why(const OutFile *o, int e);
/* Whether path can be opened as an output (a device or pipe is not
 * opened, only its permission checked): 0, or -1 with why. */
int outfile_check(const char *path, char *why, size_t n);
/* Close it; with keep, put it in place (rename), else remove the
 * temporary file.  0, or -1 with errno (the temporary file removed). */
int outfile_close(OutFile *o, int keep);
/* A file the user names to be read (a spec, an --input), opened without
 * waiting: a regular file, or standard input or a descriptor by its name
 * (/dev/stdin, /dev/fd/N, /proc/self/fd/N); a folder is opened, for its
 * read to say what it is.  Anything else is refused:
 * a named pipe that no process writes to would hold the command forever,
 * and a device is no file of data.  The stream, or NULL with errno, and
 * with why ("" else) where a file is refused. */
FILE *infile_open(const char *path, char *why, size_t n);
/* Whether path names an existing file that is not a regular one (a
 * device, a pipe), which an output is written into in place. */
int outfile_in_place(const char *path);
/* path removed if the process is interrupted (SIGINT, SIGTERM, SIGHUP,
 * where their action is still the default; the signal then ends the
 * process as it would have) until cache_temp_forget(slot): a temporary
 * file, or a private folder, removed after the files registered (which
 * need not exist yet).  The slot, or -1 where none is free. */
int cache_temp_register(const char *path);
void cache_temp_forget(int slot);
/* A new folder of this process's own to build in (mode 0700, under
 * $TMPDIR or /tmp), "assoc-<what>-<pid>-XXXXXX", its path in out: 0, or
 * -1 with errno.  Such folders of this user's dead processes, untouched
 * for ten minutes, are removed first: a process killed while it built
 * (SIGKILL, the OOM killer) had no chance to. */
int cache_build_dir(const char *what, char *out, size_t n);
/* A new temporary file beside path, ".<name>.<pid>.<serial>.tmp", its
 * name in tmp: an fd open for writing (created, never a link followed),
 * or -1.  The temporary files of dead processes in that directory are
 * removed first. */
int cache_temp(const char *path, char *tmp, size_t n);
/* Write data to path through a temporary file renamed into place (which
 * replaces a link there, never writes through it), then prune its
 * directory (cache_prune). */
int cache_write(const char *path, const void *data, size_t len);
/* path opened for reading when it is a regular file (not through a
 * link; a pipe does not block), its time of last change set to now,
 * which is the time of its last use to cache_prune; an fd, or -1. */
int cache_open(const char *path);
/* cache_open of a cache entry, which is read only where it is this
 * user's and writable by no one else (no group or other write bit): one
 * another user could have put or changed in the folder is not read,
 * whatever its seal says (-1 with errno EACCES). */
int cache_open_own(const char *path);
/* The whole file of fd, malloc'd and NUL-terminated, or NULL. */
char *cache_read_fd(int fd, size_t *len);
/* cache_open and cache_read_fd: the file, or NULL. */
char *cache_read(const char *path, size_t *len);
/* A seal, "\n// assoc-cache <key> <sum>\n" (a comment to C++ and PTX,
 * bytes after the end to an object): key is the hash a cache file is
 * named by, sum a hash of key and data.  A file cut short, damaged, or
 * another key's fails it. */
enum { CACHE_SEAL_LEN = 50 };
void cache_seal(char out[CACHE_SEAL_LEN + 1], uint64_t key, const void *data, size_t len);
/* Whether data ends in the seal of key and the bytes before it. */
int cache_sealed(const void *data, size_t len, uint64_t key);
/* cache_write of data and its seal. */
int cache_write_sealed(const char *path, uint64_t key, const void *data, size_t len);
/* cache_read of a sealed file: the data without the seal, or NULL when
 * absent, not a regular file, or not sealed for key. */
char *cache_read_sealed(const char *path, uint64_t key, size_t *len);
/* cache_read_sealed, and where an entry is there but not used (not
 * sealed for key: cut short, damaged or another key's; a directory, a
 * link or another file that is not a regular one; unreadable), why
 * ("cache entry PATH ..."); why "" where it is absent or used. */
char *cache_read_entry(const char *path, uint64_t key, size_t *len, char *why, size_t wn);
/* The same for a caller that keeps the file open (cache_open): an fd
 * to the sealed file, or -1 with why as cache_read_entry's. */
int cache_open_sealed(const char *path, uint64_t key, char *why, size_t wn);
/* cache_write_sealed of what was built in place of an entry, saying so on
 * stderr: with why from cache_read_entry (not ""), that the entry was
 * rebuilt, or that it could not be replaced; else a write that fails,
 * once a process (cache_warn), as a cache that cannot be written only
 * costs time.  0 when written. */
int cache_put_sealed(const char *path, uint64_t key, const void *data, size_t len, const char *why);
/* A cache directory holds at most cache_limit() bytes: $ASSOC_CACHE_MB
 * megabytes (default CACHE_MB; 0 keeps nothing but the newest file). */
enum { CACHE_MB = 1024 };
/* The largest file cache_read_fd reads: 256 MiB. */
#define CACHE_ENTRY_MAX ((long long)256 << 20)
long long cache_limit(void);
/* Whether $ASSOC_CACHE_MB, where set, is a whole number of megabytes (0
 * or more); cache_limit takes the default for any other value. */
int cache_limit_valid(void);
/* Past the limit, remove the files of dir least recently used (written,
 * or read by cache_read or marked by cache_used) until three quarters of
 * it is left; never keep, the file just written (a name in dir, or NULL).
 * Temporary files of writes in progress are left alone, unless the
 * process named in them is gone or they are untouched for a day.  A
 * file another process has open stays whole for it: caches are read
 * through descriptors, and a file is never written in place. */
void cache_prune(const char *dir, const char *keep);
/* Mark path as used now (for caches read without cache_read). */
void cache_used(const char *path);
uint64_t cache_hash(uint64_t h, const void *data, size_t len);
#define CACHE_HASH_INIT 0xcbf29ce484222325ull

#endif

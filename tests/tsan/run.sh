#!/usr/bin/env bash
# run.sh: libassoc's handles on several threads at once under
# ThreadSanitizer (tests/tsan/threads.c), with an empty cache folder of
# its own.  Not part of `make test`: about a minute on 2 cores, most of it
# the emulator's builds.  Exit 0 when TSan reports nothing and every run
# gave what a run alone gives.
set -eu
cd "$(dirname "$0")/../.."
make -s -j2 build/tsan/threads
cache=$(mktemp -d "${TMPDIR:-/tmp}/assoc-tsan.XXXXXX")
trap 'rm -rf "$cache"' EXIT
XDG_CACHE_HOME=$cache TSAN_OPTIONS="halt_on_error=0 exitcode=66 ${TSAN_OPTIONS:-}" build/tsan/threads "$@"

#!/usr/bin/env bash
# cache_procs.sh: processes sharing one cache folder.  ROUNDS rounds
# (3) of PROCS processes (4) at once running each of a few specs on cpu
# and on emu (`assoc run`, drawn inputs, checked against the reference)
# with one $XDG_CACHE_HOME, empty at the start; after each round every
# file there must hold the seal of the key its name gives, and none may
# be a temporary one, and no emulator build folder may be left.
# ASSOC_CACHE_MB=0 in the environment makes each write prune the others'
# files too.  Not part of `make test` (a minute or two: the emulator's
# builds).  Exit 0 when no process failed and the cache verified.
set -u
cd "$(dirname "$0")/.."
make -s -j2 build/assoc
cache=$(mktemp -d "${TMPDIR:-/tmp}/assoc-procs.XXXXXX")
trap 'rm -rf "$cache"' EXIT
builds() { ls -d "${TMPDIR:-/tmp}"/assoc-emu-* 2>/dev/null | wc -l; }
before=$(builds)
fails=0
for round in $(seq "${ROUNDS:-3}"); do
	for spec in specs/online_softmax.yaml specs/attention.yaml specs/layer_norm.yaml; do
		for dev in cpu emu; do
			pids=()
			for p in $(seq "${PROCS:-4}"); do
				XDG_CACHE_HOME=$cache build/assoc run "$spec" --device "$dev" --rows 5 --len 70 >"$cache/out.$p" 2>&1 &
				pids+=("$!")
			done
			for p in $(seq "${PROCS:-4}"); do
				if ! wait "${pids[$((p - 1))]}" || ! grep -q '^  ok' "$cache/out.$p"; then
					echo "round $round: $spec on $dev, process $p failed:"
					cat "$cache/out.$p"
					fails=$((fails + 1))
				fi
			done
		done
	done
	# the seal: "\n// assoc-cache <key> <sum>\n", sum FNV-1a 64 over the key's 8 bytes, then the data
	python3 - "$cache/assoc" <<'PY' || fails=$((fails + 1))
import os, re, sys
def fnv(h, data):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & (2**64 - 1)
    return h
bad = n = 0
for sub in ("cpu", "emu", "ptx"):
    d = os.path.join(sys.argv[1], sub)
    for name in os.listdir(d) if os.path.isdir(d) else ():
        path, n = os.path.join(d, name), n + 1
        data = open(path, "rb").read()
        m = re.fullmatch(rb"\n// assoc-cache ([0-9a-f]{16}) ([0-9a-f]{16})\n", data[-50:])
        key = int(name.split(".")[0], 16) if re.fullmatch(r"[0-9a-f]{16}\.\w+", name) else -1
        if name.startswith(".") or not m or int(m.group(1), 16) != key or \
                int(m.group(2), 16) != fnv(fnv(0xcbf29ce484222325, key.to_bytes(8, "little")), data[:-50]):
            print("cache: %s is %s" % (path, "a temporary file" if name.startswith(".") else "not sealed for its name"))
            bad += 1
print("cache: %d files, %d bad" % (n, bad))
sys.exit(1 if bad else 0)
PY
done
if [ "$(builds)" != "$before" ]; then
	echo "emulator build folders left in ${TMPDIR:-/tmp}"
	fails=$((fails + 1))
fi
echo "cache_procs: $([ "$fails" = 0 ] && echo ok || echo "$fails failures")"
[ "$fails" = 0 ]

#!/usr/bin/env bash
# Runs the cache integration tests a second time against valkey-server 8 (the
# first run, in `go test ./...`, uses redis-server 7), through cachetest's
# NETPERFKIT_CACHE_SERVER. valkey comes from $NETPERFKIT_VALKEY_SERVER, PATH, or
# ../shared/peers/build.sh's output; without it the run is skipped with a note,
# or fails when NETPERFKIT_REQUIRE_PEERS=1.
set -euo pipefail
cd "$(dirname "$0")/.."
valkey=${NETPERFKIT_VALKEY_SERVER:-}
[ -n "$valkey" ] || valkey=$(command -v valkey-server || true)
[ -n "$valkey" ] || valkey=$HOME/.cache/netperfkit-peers/valkey-8.0.1/bin/valkey-server
if [ ! -x "$valkey" ]; then
	msg="valkey-server not found (../shared/peers/build.sh valkey, or set NETPERFKIT_VALKEY_SERVER)"
	case ${NETPERFKIT_REQUIRE_PEERS:-} in
	"" | 0 | false) echo "test-valkey: skipping: $msg" >&2; exit 0 ;;
	*) echo "test-valkey: required peer missing: $msg" >&2; exit 1 ;;
	esac
fi
echo "test-valkey: cache tests against $valkey" >&2
NETPERFKIT_CACHE_SERVER=$valkey go test -race -timeout 10m ./cache/... ./examples/cachebench ./examples/cacheprobe

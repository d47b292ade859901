#!/bin/bash
# Our client and 3.21's alternating against one 3.21 server: client-variants.sh
# with our client as the one variant.
# usage: [ROUNDS=5] tcp-client.sh [client args]  (binaries: lib.sh)
. "$(dirname "$0")/lib.sh"
exec "$(dirname "$0")/client-variants.sh" "ours=$NP3" -- "$@"

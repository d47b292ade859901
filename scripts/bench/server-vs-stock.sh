#!/bin/bash
# A stock client (-J, TCP) into our server vs into its own server, alternating:
# server-variants.sh with our server as the one variant.
# usage: [ROUNDS=5] [SERVER_CPUS=1 CLIENT_CPUS=0] server-vs-stock.sh BIN [client args]  (our side: lib.sh)
. "$(dirname "$0")/lib.sh"
CLIENT=$1 exec "$(dirname "$0")/server-variants.sh" "ours=$NP3" -- "${@:2}"

#!/usr/bin/env bash
# Counts the exported identifiers of the library's public packages (not examples,
# internal or tests): exported top-level names, methods, struct fields and
# interface methods, as `go doc -all` would list them. Usage: exports.sh [-v]
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./scripts/exports "$@"

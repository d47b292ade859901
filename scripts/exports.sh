#!/usr/bin/env bash
# Counts the exported API of the library's public packages (not examples,
# internal or tests) as go/types sees it: every exported name, and every type a
# user can reach with its exported fields and methods, once, where a user names
# it (through an alias too). Usage: exports.sh [-v] [-check] [-record]
# -check fails above the budget (core six <= 780 names / 85 types, all <= 1,100).
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./scripts/exports "$@"

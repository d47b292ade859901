#!/usr/bin/env bash
# Fails when a committed file is an executable binary (ELF, PE or Mach-O): build
# outputs belong in .gitignore, not in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
	case $magic in
	7f454c46) kind=ELF ;;
	4d5a*) kind=PE ;;
	feedface | feedfacf | cefaedfe | cffaedfe | cafebabe) kind=Mach-O ;;
	*) continue ;;
	esac
	echo "check-binaries: $f is a committed $kind executable; remove it and ignore it in .gitignore" >&2
	bad=1
done < <(git ls-files -z)
exit $bad

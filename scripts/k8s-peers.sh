#!/usr/bin/env bash
# Builds the Kubernetes control plane that deploy/'s control-plane test runs
# against (issue 41): kube-apiserver, kube-controller-manager and kubectl at a
# pinned release, into ~/.cache/netperfkit-peers/k8s-v$VERSION/bin, once, as
# install-peers.sh caches iperf3 and valkey. A later run finds them and returns
# at once. etcd comes from Debian's etcd-server (installed here when missing, as
# root).
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces the 33
# k8s.io/<staging> modules with paths inside its own tree. So this makes a
# throwaway module outside the repository that requires k8s.io/kubernetes and
# replaces each staging module with its published v0.x twin, and builds there.
# The first run downloads about 0.8 GB of modules and takes 15 minutes or more of
# CPU on 2 cores (kube-apiserver alone about 11); the build cache grows a few GB.
set -euo pipefail

VERSION=${K8S_VERSION:-1.37.2}
STAGING=0.${VERSION#1.}
dest=${NETPERFKIT_K8S_DIR:-$HOME/.cache/netperfkit-peers/k8s-v$VERSION}/bin
cmds=(kube-apiserver kube-controller-manager kubectl)

have() { command -v "$1" >/dev/null 2>&1; }

if ! have etcd; then
	if [ "$(id -u)" -eq 0 ] && have apt-get; then
		echo "netperfkit: installing etcd-server" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends etcd-server >/dev/null
		if have systemctl; then systemctl stop etcd >/dev/null 2>&1 || true; fi
	else
		echo "netperfkit: etcd missing: sudo apt-get install -y etcd-server" >&2
	fi
fi

missing=()
for c in "${cmds[@]}"; do [ -x "$dest/$c" ] || missing+=("$c"); done
if [ ${#missing[@]} -eq 0 ]; then
	echo "netperfkit: Kubernetes v$VERSION control plane cached in $dest" >&2
	exit 0
fi
have go || { echo "netperfkit: go is needed to build Kubernetes v$VERSION" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/netperfkit-k8s.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
# The throwaway module must not see the repository's go.work or vendor settings.
export GOWORK=off GOFLAGS=-mod=mod

echo "netperfkit: building ${missing[*]} v$VERSION into $dest (once; 15+ minutes on 2 cores)" >&2
go mod init netperfkit.local/k8speers >/dev/null 2>&1
# The staging modules are the kubernetes go.mod's replace block's targets under ./staging.
kmod=$(go mod download -json "k8s.io/kubernetes@v$VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[ -f "$kmod" ] || { echo "netperfkit: no go.mod for k8s.io/kubernetes@v$VERSION" >&2; exit 1; }
mapfile -t staging < <(awk '/^replace[[:space:]]*\(/{r=1; next} r&&/^\)/{r=0} r&&$3 ~ /^\.\/staging\//{print $1}' "$kmod" | sort -u)
[ ${#staging[@]} -gt 0 ] || { echo "netperfkit: no staging replaces in $kmod" >&2; exit 1; }
echo "netperfkit: ${#staging[@]} staging modules replaced by their v$STAGING" >&2
args=("-require=k8s.io/kubernetes@v$VERSION")
for m in "${staging[@]}"; do args+=("-replace=$m=$m@v$STAGING"); done
go mod edit "${args[@]}"
# The kubernetes go.mod pins its own toolchain-independent versions; take them.
go mod edit -go="$(awk '$1=="go"{print $2; exit}' "$kmod")"
pkgs=()
for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
cat >tools.go <<EOF
//go:build tools

package tools

import (
$(for p in "${pkgs[@]}"; do printf '\t_ "%s"\n' "$p"; done)
)
EOF
go mod tidy -e >/dev/null
# Stamp the release into the binaries, as Kubernetes' own build does.
v=k8s.io/component-base/version
minor=${VERSION#*.}; minor=${minor%%.*}
ldv="-X $v.gitVersion=v$VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
mkdir -p "$dest"
start=$(date +%s)
for p in "${pkgs[@]}"; do
	go build -trimpath -ldflags="-s $ldv" -o "$dest/" "$p"
	echo "netperfkit: built $(basename "$p") ($(( $(date +%s) - start )) s so far)" >&2
done
"$dest/kubectl" version --client >&2 || true

# The one test command of the README: installs missing integration peers (as
# root), then vets and runs every test with the race detector, and the cache
# tests once more against valkey-server 8.
.PHONY: test test-loaded bench-smoke peers vet staticcheck lint api fuzz-smoke cross anchors k8s-test

test: peers
	go vet ./...
	go test -race -timeout 20m ./...
	./scripts/test-valkey.sh

# The timing-prone packages once more, with a busy loop on every core beside
# them: a test that asserts this machine's speed fails here, in CI, instead of
# on a newcomer's first `make test` (docs/testing.md, "What a test may assert").
LOADED_PKGS = ./examples/cachebench ./examples/pingpong ./examples/report \
	./latency/... ./throughput/... ./cache/...
test-loaded:
	./scripts/cpuload.sh go test -race -count=1 -timeout 20m $(LOADED_PKGS)

# Every benchmark of the examples once (-benchtime 1x), the speed checks moved
# out of the default suite among them (cachebench's closed-loop capacity): they
# report and assert nothing about speed, but they must run.
bench-smoke:
	go test -run '^$$' -bench . -benchtime 1x ./examples/...

peers:
	./scripts/install-peers.sh

# deploy/ read by a real Kubernetes control plane (etcd, kube-apiserver,
# kube-controller-manager; internal/k8slab). Not part of make test: the first
# run builds Kubernetes once into ~/.cache/netperfkit-peers (15-25 minutes of
# 2 cores, about 1 GB of modules and a few GB of build cache); later runs
# find it there and take a few minutes.
k8s-test:
	./scripts/k8s-peers.sh
	NETPERFKIT_K8S=1 go test -count=1 -timeout 15m -v -run 'ControlPlane|Render' ./internal/k8slab/

staticcheck:
	go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# House rules that vet and staticcheck do not check: gofmt, no function outside
# tests over 80 lines, no committed executable.
lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "lint: files above need gofmt" >&2; exit 1; }
	go run ./scripts/funclen
	./scripts/check-binaries.sh

# The exported API stays under its budget (core six <= 780 names / 85 types,
# all <= 1,100, counted through aliases) and changes only with notice: every
# incompatible change since scripts/apidiff/baseline.api is named in CHANGELOG.md.
api:
	./scripts/exports.sh -check
	./scripts/apicheck.sh

# Every fuzz target, one package and one target at a time.
fuzz-smoke:
	./scripts/fuzz-smoke.sh $(FUZZTIME)

# Pure-Go packages and tools must build natively (CGO off) on every platform users run.
cross:
	./scripts/cross.sh

# Every anchor of docs/benchmarks.md, measured on this machine into
# docs/anchors.json, then README's and docs/benchmarks.md's tables rendered
# from it (about 15 minutes on 2 cores; run it on a quiet machine).
anchors:
	go run ./scripts/anchors
	go run ./scripts/anchors -render

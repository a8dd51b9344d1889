# Karpenter in Go. `make run` is the main job, `make test` runs every test.
SHELL := /bin/bash
export GOFLAGS ?= -buildvcs=false

K8S_VERSION ?= v1.37.2
# make run CLOUD_PROVIDER=aws: the demo on the AWS emulator; DEMO_EXIT=1: exit after the scale-down (0 = success)
CLOUD_PROVIDER ?= kwok
DEMO_EXIT ?=
# make run DEMO_RUNTIME=binary: run the controller binary as the pod's process instead of the image under runc
DEMO_RUNTIME ?=
BIN := $(CURDIR)/bin
CLUSTER := $(BIN)/cluster
CLUSTER_SRC := $(shell find hack/cluster/cmd hack/cluster/internal -name '*.go') hack/cluster/go.mod

.PHONY: all run test test-race helm image release cluster cluster-bins cluster-down generate verify vet bench-scheduling bench-disruption bench-vs-upstream bench-scale kubectl-karpenter conformance

all: test

$(CLUSTER): $(CLUSTER_SRC)
	go -C hack/cluster build -o $(CLUSTER) ./cmd/cluster

## cluster-bins: build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok into bin/ (cached by version)
cluster-bins: $(CLUSTER)
	@$(CLUSTER) build --bin-dir $(BIN)

## helm: build the helm CLI from its Go module into bin/helm (cached; hack/helm pins the version)
helm:
	@hack/helm/build.sh

## image: build the controller image (karpenter, karpenter-convert, kubectl-karpenter; linux/amd64 + linux/arm64) from source into the OCI layout bin/image/current/layout (cached by a content stamp)
image:
	go run ./hack/image

## release: push the image and both charts (the image pinned by digest) to REGISTRY=host/path, as VERSION (default: the chart's appVersion)
REGISTRY ?=
VERSION ?=
release: helm
	@test -n "$(REGISTRY)" || { echo "make release REGISTRY=host/path [VERSION=x.y.z]" >&2; exit 2; }
	go run ./hack/image -release '$(REGISTRY)' -version '$(VERSION)'

## cluster: run a local control plane with KWOK until Ctrl-C (state in .local/)
cluster: cluster-bins
	@$(CLUSTER) up --bin-dir $(BIN) --state-dir $(CURDIR)/.local

## cluster-down: stop and clean up what a crashed `make cluster` left behind
cluster-down: $(CLUSTER)
	@$(CLUSTER) down --state-dir $(CURDIR)/.local

## run: the main job — local cluster, the controller image built from source, both charts installed with helm upgrade --install, the controller's pod run from the image under runc by the control node (or CLOUD_PROVIDER=aws: on the AWS emulator), demo Deployment scaled 0 → 50 → 0 with a live view; Ctrl-C stops everything (DEMO_EXIT=1: exit after the scale-down, 0 = success)
run: cluster-bins helm kubectl-karpenter
	@DEMO_EXIT=$(DEMO_EXIT) DEMO_RUNTIME=$(DEMO_RUNTIME) go run ./cmd/demo -cloud-provider=$(CLOUD_PROVIDER)

## kubectl-karpenter: build the kubectl plugin (plan, why, top) into bin/kubectl-karpenter
kubectl-karpenter:
	go build -o $(BIN)/kubectl-karpenter ./cmd/kubectl-karpenter

## generate: regenerate deepcopy functions and CRDs
generate:
	@hack/generate.sh

## verify: fail when generated files are stale
verify:
	@hack/verify.sh

vet:
	go vet ./...
	go -C hack/cluster vet ./...

# Packages with real concurrency (goroutines, or state shared under a mutex
# by informers, workers and readers): cluster state, the provisioning batcher,
# the disruption orchestration queue, the event deduper, the AWS emulator, the
# TTL cache, the pricing provider, and the interruption queue and controller.
RACE_PKGS := ./pkg/state ./pkg/controllers/provisioning ./pkg/controllers/disrupter/orchestration \
	./pkg/events ./pkg/awsemulator ./pkg/providers/aws/internal/ttlcache ./pkg/providers/aws/pricing \
	./pkg/providers/aws/sqs ./pkg/providers/aws/controllers/interruption

# The end-to-end tests mostly wait (grace periods, consolidateAfter, node
# registration, injected AWS faults), each on its own local cluster: four at a
# time keep two cores busy without starving them.
E2E_PARALLEL ?= 4

## test-race: the packages with real concurrency under the race detector
test-race: cluster-bins
	go test -race -count=1 -timeout 15m $(RACE_PKGS)

## test: every test (unit, envtest on real apiserver, local-cluster e2e), and the race detector
test: cluster-bins helm verify vet test-race
	go -C hack/cluster test ./...
	go test ./... -count=1 -timeout 45m -parallel $(E2E_PARALLEL)

# Upstream's own end-to-end suites (test/conformance): SUITE picks one, FOCUS / SKIP are regular
# expressions on spec texts, CONFORMANCE_PARALLEL specs run at once (each on its own cluster),
# SPEC_TIMEOUT ends a spec that hangs.
SUITE ?= regression
FOCUS ?=
SKIP ?=
CONFORMANCE_PARALLEL ?= 2
SPEC_TIMEOUT ?= 20m

## conformance: upstream Karpenter's end-to-end suite SUITE (regression, performance, disruption, dra) built from the pinned release and run spec by spec against ours; prints PASS/FAIL/SKIP per spec and the totals (hours; make test runs a fast subset)
conformance: cluster-bins
	go test ./test/conformance -run '^TestUpstreamSuite$$' -count=1 -timeout 12h -v -args -conformance.full \
		-conformance.suite='$(SUITE)' -conformance.focus='$(FOCUS)' -conformance.skip='$(SKIP)' \
		-conformance.parallel=$(CONFORMANCE_PARALLEL) -conformance.spec-timeout=$(SPEC_TIMEOUT)

## bench-scheduling: the scheduling benchmark table
bench-scheduling:
	@hack/bench-scheduling.sh

## bench-vs-upstream: upstream Karpenter's scheduling benchmark and ours in one run, and both on identical input
bench-vs-upstream:
	@hack/bench-vs-upstream.sh

## bench-disruption: the disruption pass benchmark table (100, 1,000, 5,000 nodes) and the consolidation policies compared on one churning workload
bench-disruption:
	@hack/bench-disruption.sh

## bench-scale: 20,000 / 50,000 / 100,000 nodes: disruption pass, solve against existing nodes, state memory
bench-scale:
	@hack/bench-scale.sh

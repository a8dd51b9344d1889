# Karpenter in Go. `make run` is the main job, `make test` runs every test.
SHELL := /bin/bash
export GOFLAGS ?= -buildvcs=false

K8S_VERSION ?= v1.37.2
CLUSTER := go -C hack/cluster run ./cmd/cluster
BIN := $(CURDIR)/bin

.PHONY: all run test cluster cluster-bins cluster-down generate verify vet bench-scheduling

all: test

## cluster-bins: build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok into bin/ (cached by version)
cluster-bins:
	@$(CLUSTER) build --bin-dir $(BIN)

## cluster: run a local control plane with KWOK until Ctrl-C (state in .local/)
cluster: cluster-bins
	@$(CLUSTER) up --bin-dir $(BIN) --state-dir $(CURDIR)/.local

## cluster-down: stop and clean up what a crashed `make cluster` left behind
cluster-down:
	@$(CLUSTER) down --state-dir $(CURDIR)/.local

## run: the main job
run: cluster

## generate: regenerate deepcopy functions and CRDs
generate:
	@hack/generate.sh

## verify: fail when generated files are stale
verify:
	@hack/verify.sh

vet:
	go vet ./...
	go -C hack/cluster vet ./...

## test: every test (unit, envtest on real apiserver, local-cluster e2e)
test: cluster-bins verify vet
	go -C hack/cluster test ./...
	go test ./... -count=1 -timeout 25m

## bench-scheduling: the scheduling benchmark table
bench-scheduling:
	@hack/bench-scheduling.sh

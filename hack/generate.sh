#!/usr/bin/env bash
# Regenerates deepcopy functions for every API package and one CRD YAML per
# kind into pkg/apis/crds. OUT_DIR overrides the CRD directory (used by
# hack/verify.sh to generate into a scratch copy).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CRD_DIR="${OUT_DIR:-pkg/apis/crds}"
mkdir -p "$CRD_DIR"

# Deepcopy: in place, next to the types (packages opt in with
# +kubebuilder:object:generate=true).
go tool controller-gen object paths=./pkg/apis/...

# CRDs: generate into a scratch directory first, so that files of kinds that
# no longer exist disappear and the embedded set is exactly what the types say.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go tool controller-gen crd:crdVersions=v1 paths=./pkg/apis/... output:crd:dir="$tmp"
find "$CRD_DIR" -maxdepth 1 -name '*.yaml' -delete
cp "$tmp"/*.yaml "$CRD_DIR"/

# Constraints controller-gen cannot express (values of maps).
go run ./hack/crdpatch "$CRD_DIR"/*.yaml

# The Helm charts' CRDs (charts/karpenter/crds, charts/karpenter-crd/templates)
# from the ones just generated.
if [[ "$CRD_DIR" == pkg/apis/crds ]]; then
	go run ./hack/chartcrds -root .
fi

# The chart's provider ClusterRole and aggregated admin ClusterRole from each
# provider's ClusterRules and AdminRules.
go run ./hack/chartrbac -root .

# Tables generated from the instance type facts file (the AWS emulator's copy):
# VPC limits and network bandwidth of the instance types, static on-demand prices.
go generate ./pkg/providers/aws/instancetype ./pkg/providers/aws/pricing

# The AWS instance types reference page, computed by the provider against the
# in-process AWS emulator.
go run ./hack/docs/instancetypes -out docs/aws-instance-types.md

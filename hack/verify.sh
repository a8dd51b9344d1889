#!/usr/bin/env bash
# Fails, naming the stale files, when the committed generated files
# (zz_generated.deepcopy.go, pkg/apis/crds/*.yaml, the instance type tables
# docs/aws-instance-types.md, the Helm charts' CRDs and the chart's provider
# and aggregated admin ClusterRoles) differ from what
# hack/generate.sh produces from the current types. The work tree is left
# untouched: generation runs in a scratch copy of the module.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# Copy the module without build outputs and the separate hack/cluster module.
( cd "$ROOT" && tar --exclude=./bin --exclude=./.local --exclude=./hack/cluster --exclude=./.git -cf - . ) | ( cd "$scratch" && tar -xf - )
( cd "$scratch" && hack/generate.sh >/dev/null )

stale=()
while IFS= read -r f; do
	rel="${f#"$scratch"/}"
	if ! cmp -s "$f" "$ROOT/$rel"; then
		stale+=("$rel")
	fi
done < <(find "$scratch/pkg/apis" \( -name 'zz_generated.deepcopy.go' -o -path '*/crds/*.yaml' \) -type f;
	find "$scratch/pkg/providers/aws" -name 'zz_generated.*.go' -type f;
	echo "$scratch/docs/aws-instance-types.md";
	echo "$scratch/charts/karpenter/templates/clusterrole.yaml";
	echo "$scratch/charts/karpenter/templates/aggregate-clusterrole.yaml";
	find "$scratch/charts/karpenter/crds" "$scratch/charts/karpenter-crd/templates" -name '*.yaml' -type f)
# Generated files that exist in the tree but would no longer be generated.
while IFS= read -r f; do
	rel="${f#"$ROOT"/}"
	[[ -e "$scratch/$rel" ]] || stale+=("$rel (no longer generated)")
done < <(find "$ROOT/pkg/apis" \( -name 'zz_generated.deepcopy.go' -o -path '*/crds/*.yaml' \) -type f;
	find "$ROOT/charts/karpenter/crds" "$ROOT/charts/karpenter-crd/templates" -name '*.yaml' -type f)

if ((${#stale[@]})); then
	echo "generated files are stale; run 'make generate':" >&2
	printf '  %s\n' "${stale[@]}" >&2
	exit 1
fi
echo "generated files are up to date"

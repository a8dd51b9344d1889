#!/usr/bin/env bash
# Builds the helm CLI from its Go module (this directory's go.mod pins it) into
# bin/helm-<version> and points bin/helm at it. A machine-wide copy in
# $KARPENTER_BIN_CACHE (default ~/.cache/karpenter-go; empty disables it)
# lets another clone skip the build (about 3 minutes on 2 cores).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VERSION="$(go -C "$ROOT/hack/helm" list -m -f '{{.Version}}' helm.sh/helm/v3)"
BIN="$ROOT/bin"
OUT="$BIN/helm-$VERSION"
CACHE="${KARPENTER_BIN_CACHE-$HOME/.cache/karpenter-go}"
CACHE="${CACHE:+$CACHE/helm}"
mkdir -p "$BIN"
if [[ ! -x "$OUT" ]]; then
	if [[ -n "$CACHE" && -x "$CACHE/helm-$VERSION" ]]; then
		cp "$CACHE/helm-$VERSION" "$OUT.tmp"
	else
		echo "building helm $VERSION from its Go module (once; cached in bin/)" >&2
		go -C "$ROOT/hack/helm" build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$VERSION" \
			-o "$OUT.tmp" helm.sh/helm/v3/cmd/helm
		if [[ -n "$CACHE" ]]; then
			mkdir -p "$CACHE" && cp "$OUT.tmp" "$CACHE/helm-$VERSION.tmp" && mv "$CACHE/helm-$VERSION.tmp" "$CACHE/helm-$VERSION"
		fi
	fi
	mv "$OUT.tmp" "$OUT"
fi
ln -sfn "helm-$VERSION" "$BIN/helm"

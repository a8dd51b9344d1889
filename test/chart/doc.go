// Package chart tests the Helm charts in charts/ with a real helm (built from
// its Go module by hack/helm/build.sh, cached in bin/) and a real
// kube-apiserver (envtest): lint, rendering for the defaults, an EKS values
// file and every documented value, the schema's refusals, server-side
// dry-run apply of every rendered object, and a differential test against
// upstream's chart (AWS provider v1.15.2, read from the Go module cache):
// every key of its values.yaml is accepted and renders as upstream's does.
package chart

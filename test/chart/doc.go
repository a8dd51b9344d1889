// Package chart tests the Helm charts in charts/ with a real helm (built from
// its Go module by hack/helm/build.sh, cached in bin/) and a real
// kube-apiserver (envtest): lint, rendering for the defaults, an EKS values
// file and every documented value, the schema's refusals, and server-side
// dry-run apply of every rendered object.
package chart

// Package parity holds the test that compares the Prometheus metric families
// this controller registers with upstream Karpenter's (testdata/
// upstream_metrics.json, written by hack/upstreammetrics from upstream's
// sources).
package parity

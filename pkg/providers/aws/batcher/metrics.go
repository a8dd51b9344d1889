package batcher

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karpenter-go/karpenter/pkg/metrics"
)

// Upstream's batcher families, by batcher name: how long each batch window
// stayed open and how many requests it carried.
var (
	batchTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider_batcher", Name: "batch_time_seconds",
		Help:    "Duration of the batching window per batcher",
		Buckets: metrics.DurationBuckets(),
	}, []string{"batcher"})
	batchSize = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "cloudprovider_batcher", Name: "batch_size",
		Help:    "Size of the request batch per batcher",
		Buckets: []float64{1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200, 225, 250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000},
	}, []string{"batcher"})
)

func init() { crmetrics.Registry.MustRegister(batchTime, batchSize) }

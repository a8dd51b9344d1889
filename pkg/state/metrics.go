package state

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	nodeCount = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cluster_state", Name: "node_count",
		Help: "Current count of nodes in cluster state",
	})
	synced = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cluster_state", Name: "synced",
		Help: "Returns 1 if cluster state is synced and 0 otherwise. Synced checks that nodeclaims and nodes that are stored in the APIServer have the same representation as Karpenter's cluster state",
	})
)

func init() {
	crmetrics.Registry.MustRegister(nodeCount, synced)
}

// ExportMetrics sets karpenter_cluster_state_node_count and _synced.
func (c *Cluster) ExportMetrics(ctx context.Context) {
	n := 0
	for _, sn := range c.Nodes() {
		if sn.Node != nil {
			n++
		}
	}
	nodeCount.Set(float64(n))
	if ok, err := c.Synced(ctx); err == nil && ok {
		synced.Set(1)
	} else {
		synced.Set(0)
	}
}

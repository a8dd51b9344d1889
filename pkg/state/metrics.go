package state

import (
	"context"
	"time"

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
	unsyncedTime = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cluster_state", Name: "unsynced_time_seconds",
		Help: "The time for which cluster state is not synced",
	})
)

func init() {
	crmetrics.Registry.MustRegister(nodeCount, synced, unsyncedTime)
}

// ExportMetrics sets karpenter_cluster_state_node_count, _synced and
// _unsynced_time_seconds (how long state has been found out of sync, by the
// cluster's clock; 0 while synced).
func (c *Cluster) ExportMetrics(ctx context.Context) {
	n := 0
	c.mu.RLock()
	for _, sn := range c.nodesLocked(false) {
		if sn.Node != nil {
			n++
		}
	}
	c.mu.RUnlock()
	nodeCount.Set(float64(n))
	ok, err := c.Synced(ctx)
	ok = ok && err == nil
	now := c.clock.Now()
	c.mu.Lock()
	switch {
	case ok:
		c.unsyncedSince = time.Time{}
	case c.unsyncedSince.IsZero():
		c.unsyncedSince = now
	}
	since := c.unsyncedSince
	c.mu.Unlock()
	if ok {
		synced.Set(1)
		unsyncedTime.Set(0)
		return
	}
	synced.Set(0)
	unsyncedTime.Set(now.Sub(since).Seconds())
}

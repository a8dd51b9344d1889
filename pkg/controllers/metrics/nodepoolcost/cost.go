// Package nodepoolcost exports upstream's karpenter_nodepools_cost_total (what
// a NodePool's NodeClaims cost per hour, by the prices Karpenter decides with)
// and karpenter_nodepools_cost_tracker_errors_total (NodeClaims whose price
// cannot be found: a missing instance type, zone or capacity type label, or an
// offering the cloud provider no longer lists).
package nodepoolcost

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// Exporter refreshes both families every Period from cluster state.
type Exporter struct {
	Cluster       *state.Cluster
	CloudProvider cloudprovider.CloudProvider
	Period        time.Duration

	cost   *prometheus.GaugeVec
	errors *prometheus.CounterVec

	mu sync.Mutex
	// unpriced are the NodeClaims already counted as errors, so that one that
	// stays unpriced counts once, not once per pass.
	unpriced sets.Set[string]
	// last is each NodePool's cost at the last refresh.
	last map[string]float64
}

// New creates the exporter's families and registers them with reg.
func New(cluster *state.Cluster, cp cloudprovider.CloudProvider, reg prometheus.Registerer) (*Exporter, error) {
	e := &Exporter{
		Cluster: cluster, CloudProvider: cp, Period: 30 * time.Second,
		cost: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "karpenter", Subsystem: "nodepools", Name: "cost_total",
			Help: "Total cost of the nodepool from Karpenter's perspective. Units are determined by the cloud provider. Not an authoritative source for billing.",
		}, []string{"nodepool"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "karpenter", Subsystem: "nodepools", Name: "cost_tracker_errors_total",
			Help: "Number of errors encountered during cost tracking operations. Labeled by nodepool.",
		}, []string{"nodepool"}),
		unpriced: sets.New[string](),
	}
	for _, c := range []prometheus.Collector{e.cost, e.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Start refreshes until ctx ends (a manager Runnable; every replica exports).
func (e *Exporter) Start(ctx context.Context) error {
	t := time.NewTicker(e.Period)
	defer t.Stop()
	for {
		e.Refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Refresh sets each NodePool's cost to the sum of its NodeClaims' offering
// prices. A NodePool whose instance types cannot be listed now keeps its last
// value; a deleted NodePool's series goes.
func (e *Exporter) Refresh(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	byPool := map[string][]*state.StateNode{}
	live := sets.New[string]()
	for _, sn := range e.Cluster.Nodes() {
		if sn.NodeClaim == nil {
			continue
		}
		live.Insert(sn.NodeClaim.Name)
		if sn.NodePool() != "" {
			byPool[sn.NodePool()] = append(byPool[sn.NodePool()], sn)
		}
	}
	totals := map[string]float64{}
	for _, np := range e.Cluster.NodePools() {
		its, err := e.CloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			log.FromContext(ctx).V(1).Info("pricing nodepool", "NodePool", np.Name, "error", err.Error())
			if last, ok := e.last[np.Name]; ok {
				totals[np.Name] = last
			}
			continue
		}
		total := 0.0
		for _, sn := range byPool[np.Name] {
			name := sn.NodeClaim.Name
			if p, ok := price(sn.Labels(), its); ok {
				total += p
				e.unpriced.Delete(name)
			} else if !e.unpriced.Has(name) {
				e.unpriced.Insert(name)
				e.errors.WithLabelValues(np.Name).Inc()
			}
		}
		totals[np.Name] = total
	}
	e.cost.Reset()
	for name, total := range totals {
		e.cost.WithLabelValues(name).Set(total)
	}
	e.last = totals
	e.unpriced = e.unpriced.Intersection(live)
}

// price is the price of the offering a node's labels name.
func price(labels map[string]string, its []*scheduling.InstanceType) (float64, bool) {
	name, zone, ct := labels[corev1.LabelInstanceTypeStable], labels[corev1.LabelTopologyZone], labels[v1.CapacityTypeLabelKey]
	if name == "" || zone == "" || ct == "" {
		return 0, false
	}
	for _, it := range its {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return o.Price, true
			}
		}
	}
	return 0, false
}

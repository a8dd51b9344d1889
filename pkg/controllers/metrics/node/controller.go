package node

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// PollPeriod is how often the gauges are rewritten.
const PollPeriod = 10 * time.Second

// Metric label names shared by every node gauge.
const (
	LabelNodeName     = "node_name"
	LabelPhase        = "phase"
	LabelManaged      = "managed"
	LabelResourceType = "resource_type"
)

// Controller rewrites the node gauges from cluster state every PollPeriod.
type Controller struct {
	cluster *state.Cluster
	clock   clock.Clock

	// nodeLabels maps a node label key to the metric label carrying its value,
	// in a fixed order so label sets are built deterministically.
	nodeLabels []labelMapping

	allocatable, podRequests, podLimits, daemonRequests, daemonLimits, overhead *gauge
	lifetime, utilization                                                       *gauge

	// memo is, per node, what the last pass read and wrote. A node whose Node
	// object, managed flag and bound pods (the cache's objects: a change is a
	// new pointer) are the same as then keeps its resource series as they are:
	// a fleet's nodes mostly stand still between passes, and rewriting two dozen
	// series each per pass was most of this controller's cost, every 10 s for
	// every node.
	memo map[string]*nodeMemo
}

// nodeMemo is one node's inputs and outputs of the last pass.
type nodeMemo struct {
	node     *corev1.Node
	managed  bool
	pods     []*corev1.Pod
	requests corev1.ResourceList
	series   []written
}

// written is one series a pass set on a resource gauge.
type written struct {
	g      *gauge
	key    string
	labels prometheus.Labels
}

type labelMapping struct{ key, name string }

// NewController creates the gauges and registers them with reg (the
// controller-runtime registry in the binary, a private one in tests).
// providerLabels are the cloud provider's well-known node label keys; together
// with Karpenter's own (v1.WellKnownLabels) each becomes a metric label, as upstream.
func NewController(cluster *state.Cluster, clk clock.Clock, reg prometheus.Registerer, providerLabels ...string) (*Controller, error) {
	c := &Controller{cluster: cluster, clock: clk, memo: map[string]*nodeMemo{}, nodeLabels: metricLabelsFor(append(append([]string(nil), v1.WellKnownLabels...), providerLabels...))}
	base := []string{LabelNodeName, LabelPhase, LabelManaged}
	for _, m := range c.nodeLabels {
		base = append(base, m.name)
	}
	withResource := append(append([]string(nil), base...), LabelResourceType)
	nodes := func(name, help string, labels []string) *gauge {
		return newGauge(prometheus.GaugeOpts{Namespace: "karpenter", Subsystem: "nodes", Name: name, Help: help}, labels)
	}
	c.allocatable = nodes("allocatable", "Resources allocatable by the node (status.allocatable).", withResource)
	c.podRequests = nodes("total_pod_requests", "Sum of the requests of the pods bound to the node, DaemonSet pods included.", withResource)
	c.podLimits = nodes("total_pod_limits", "Sum of the limits of the pods bound to the node, DaemonSet pods included.", withResource)
	c.daemonRequests = nodes("total_daemon_requests", "Sum of the requests of the DaemonSet pods bound to the node.", withResource)
	c.daemonLimits = nodes("total_daemon_limits", "Sum of the limits of the DaemonSet pods bound to the node.", withResource)
	c.overhead = nodes("system_overhead", "Resources the node reserves for the system: status.capacity minus status.allocatable.", withResource)
	c.lifetime = nodes("current_lifetime_seconds", "Seconds since the Node object was created.", base)
	c.utilization = newGauge(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cluster", Name: "utilization_percent",
		Help: "Sum of pod requests over sum of allocatable of the Karpenter-managed nodes, in percent.",
	}, []string{LabelResourceType})
	for _, g := range c.gauges() {
		if err := reg.Register(g.vec); err != nil {
			return nil, fmt.Errorf("registering node metrics: %w", err)
		}
	}
	return c, nil
}

func (c *Controller) gauges() []*gauge {
	return []*gauge{c.allocatable, c.podRequests, c.podLimits, c.daemonRequests, c.daemonLimits, c.overhead, c.lifetime, c.utilization}
}

// metricLabelsFor names each label key's metric label: the part after the last
// "/", lower case, "-" and "." turned into "_" (Prometheus label names allow
// neither). Two keys mapping to one name (the same suffix under two domains)
// share it, the first key winning, since a label name may appear only once.
func metricLabelsFor(keys []string) []labelMapping {
	seen := map[string]bool{}
	var out []labelMapping
	for _, k := range keys {
		name := k[strings.LastIndex(k, "/")+1:]
		name = strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(name))
		if seen[name] || name == LabelNodeName || name == LabelPhase || name == LabelManaged || name == LabelResourceType {
			continue
		}
		seen[name] = true
		out = append(out, labelMapping{key: k, name: name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// NeedLeaderElection: cluster state is only fed on the leader, so only the
// leader has anything true to report.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs a pass every PollPeriod until ctx ends (a manager Runnable).
func (c *Controller) Start(ctx context.Context) error {
	for {
		c.Reconcile()
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(PollPeriod):
		}
	}
}

// Reconcile rewrites every gauge from the current cluster state. It is one
// pass of Start (exported for tests) and not safe for concurrent use.
func (c *Controller) Reconcile() {
	now := c.clock.Now()
	totalAllocatable, totalRequests := corev1.ResourceList{}, corev1.ResourceList{}
	memo := make(map[string]*nodeMemo, len(c.memo))
	for _, sn := range c.cluster.Nodes() {
		if sn.Node == nil {
			continue
		}
		node := sn.Node
		managed := sn.Managed()
		if m := c.memo[node.Name]; m != nil && m.node == node && m.managed == managed && slices.Equal(m.pods, sn.Pods) {
			for _, w := range m.series {
				w.g.current[w.key] = w.labels
			}
			c.lifetime.set(c.labelsOf(node, managed), now.Sub(node.CreationTimestamp.Time).Seconds())
			addInto(totalAllocatable, node.Status.Allocatable)
			addInto(totalRequests, m.requests)
			memo[node.Name] = m
			continue
		}
		m := &nodeMemo{node: node, managed: managed, pods: sn.Pods}
		labels := c.labelsOf(node, managed)
		var podReq, podLim, dsReq, dsLim []corev1.ResourceList
		for _, p := range sn.Pods {
			req, lim := podRequests(p), podLimits(p)
			podReq, podLim = append(podReq, req), append(podLim, lim)
			if scheduling.OwnedByDaemonSet(p) {
				dsReq, dsLim = append(dsReq, req), append(dsLim, lim)
			}
		}
		requests := sum(podReq...)
		m.requests = requests
		c.setResources(m, c.allocatable, labels, node.Status.Allocatable)
		c.setResources(m, c.podRequests, labels, requests)
		c.setResources(m, c.podLimits, labels, sum(podLim...))
		c.setResources(m, c.daemonRequests, labels, sum(dsReq...))
		c.setResources(m, c.daemonLimits, labels, sum(dsLim...))
		c.setResources(m, c.overhead, labels, subtract(node.Status.Capacity, node.Status.Allocatable))
		c.lifetime.set(labels, now.Sub(node.CreationTimestamp.Time).Seconds())
		addInto(totalAllocatable, node.Status.Allocatable)
		addInto(totalRequests, requests)
		memo[node.Name] = m
	}
	c.memo = memo
	for name, alloc := range totalAllocatable {
		// A resource nobody allocates has no meaningful utilization.
		if a := value(name, alloc); a > 0 {
			c.utilization.set(prometheus.Labels{LabelResourceType: resourceType(name)}, 100*value(name, totalRequests[name])/a)
		}
	}
	for _, g := range c.gauges() {
		g.sweep()
	}
}

func (c *Controller) labelsOf(node *corev1.Node, managed bool) prometheus.Labels {
	l := prometheus.Labels{
		LabelNodeName: node.Name,
		LabelPhase:    string(node.Status.Phase),
		LabelManaged:  strconv.FormatBool(managed),
	}
	for _, m := range c.nodeLabels {
		l[m.name] = node.Labels[m.key]
	}
	return l
}

func (c *Controller) setResources(m *nodeMemo, g *gauge, nodeLabels prometheus.Labels, list corev1.ResourceList) {
	for name, q := range list {
		l := make(prometheus.Labels, len(nodeLabels)+1)
		for k, v := range nodeLabels {
			l[k] = v
		}
		l[LabelResourceType] = resourceType(name)
		m.series = append(m.series, written{g: g, key: g.set(l, value(name, q)), labels: l})
	}
}

// resourceType is the resource_type label value: upstream lower-cases the name
// and turns "-" into "_" (ephemeral-storage -> ephemeral_storage).
func resourceType(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}

// value: cpu in cores (exact to the millicore), anything else in its base unit.
func value(name corev1.ResourceName, q resource.Quantity) float64 {
	if name == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return q.AsApproximateFloat64()
}

// gauge is a GaugeVec that remembers which series it set in the current pass,
// so that sweep can delete the ones that were not set again (nodes gone,
// resources no longer requested) without a Reset that would let a scrape see
// the gauge empty.
type gauge struct {
	vec      *prometheus.GaugeVec
	previous map[string]prometheus.Labels
	current  map[string]prometheus.Labels
}

func newGauge(opts prometheus.GaugeOpts, labels []string) *gauge {
	return &gauge{vec: prometheus.NewGaugeVec(opts, labels), previous: map[string]prometheus.Labels{}, current: map[string]prometheus.Labels{}}
}

// set sets the series and returns its key.
func (g *gauge) set(l prometheus.Labels, v float64) string {
	g.vec.With(l).Set(v)
	k := seriesKey(l)
	g.current[k] = l
	return k
}

func (g *gauge) sweep() {
	for k, l := range g.previous {
		if _, ok := g.current[k]; !ok {
			g.vec.Delete(l)
		}
	}
	g.previous, g.current = g.current, map[string]prometheus.Labels{}
}

func seriesKey(l prometheus.Labels) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(l[k])
		b.WriteByte(0)
	}
	return b.String()
}

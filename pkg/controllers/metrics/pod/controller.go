package pod

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/karpenter-go/karpenter/pkg/metrics"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// Label names of the per-pod gauges (upstream's).
const (
	LabelName             = "name"
	LabelNamespace        = "namespace"
	LabelDynamicResources = "dynamic_resources"
)

// Controller reconciles pods into the latency metrics.
type Controller struct {
	kube  client.Reader
	clock clock.Clock
	// times are the provisioner's moments per pending pod (nil: none, the
	// provisioning_* families then stay empty).
	times *state.PodSchedulingTimes

	boundDuration               *prometheus.HistogramVec
	startupDuration             prometheus.Summary
	provisioningBoundDuration   *prometheus.HistogramVec
	provisioningStartupDuration prometheus.Histogram
	// unbound and unstarted are read at scrape time from waiting (see
	// ageCollector), not set per pod: refreshing them by requeueing every
	// waiting pod each 10 s cost a cache read and a pod copy per pod per 10 s,
	// pods × their wait, which grows faster than a fleet does.
	unbound               *prometheus.Desc
	unstarted             *prometheus.Desc
	provisioningUnbound   *prometheus.Desc
	provisioningUnstarted *prometheus.Desc
	undecided             *prometheus.Desc

	// mu guards waiting: one pod key is never reconciled concurrently, but
	// different keys may be and they share the map.
	mu      sync.Mutex
	waiting map[types.NamespacedName]*waitingPod
}

// waitingPod is what the controller remembers of a pod it saw waiting.
// uid tells a pod apart from a later one with the same name (a StatefulSet
// replica recreated between two reconciles never shows up as NotFound).
type waitingPod struct {
	uid                types.UID
	created            time.Time
	unbound, unstarted bool
	// dynamic is upstream's dynamic_resources label: the pod claims DRA resources.
	dynamic string
}

// NewController creates the metrics and registers them with reg (the
// controller-runtime registry in the binary, a private one in tests). times
// are cluster state's record of the provisioner's work on pending pods.
func NewController(kube client.Reader, clk clock.Clock, reg prometheus.Registerer, times *state.PodSchedulingTimes) (*Controller, error) {
	c := &Controller{
		kube:  kube,
		clock: clk,
		times: times,
		boundDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "karpenter", Subsystem: "pods", Name: "bound_duration_seconds",
			Help:    "Seconds from a pod's creation until its PodScheduled condition became True.",
			Buckets: metrics.DurationBuckets(),
		}, []string{LabelDynamicResources}),
		provisioningBoundDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "karpenter", Subsystem: "pods", Name: "provisioning_bound_duration_seconds",
			Help:    "Seconds from when Karpenter first found a place for a pending pod until the pod was bound (from a moment in memory, not the pod's creation).",
			Buckets: metrics.DurationBuckets(),
		}, []string{LabelDynamicResources}),
		provisioningStartupDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "karpenter", Subsystem: "pods", Name: "provisioning_startup_duration_seconds",
			Help:    "Seconds from when Karpenter first found a place for a pending pod until the pod was Ready (from a moment in memory, not the pod's creation).",
			Buckets: metrics.DurationBuckets(),
		}),
		startupDuration: prometheus.NewSummary(prometheus.SummaryOpts{
			Namespace: "karpenter", Subsystem: "pods", Name: "startup_duration_seconds",
			Help:       "Seconds from a pod's creation until its Ready condition became True.",
			Objectives: SummaryObjectives(),
		}),
		unbound: prometheus.NewDesc("karpenter_pods_unbound_time_seconds",
			"Seconds since the creation of a pod that is not bound to a node yet.", []string{LabelName, LabelNamespace, LabelDynamicResources}, nil),
		unstarted: prometheus.NewDesc("karpenter_pods_unstarted_time_seconds",
			"Seconds since the creation of a pod that is not Ready yet.", []string{LabelName, LabelNamespace}, nil),
		provisioningUnbound: prometheus.NewDesc("karpenter_pods_provisioning_unbound_time_seconds",
			"Seconds since Karpenter first found a place for a pod that is not bound yet.", []string{LabelName, LabelNamespace, LabelDynamicResources}, nil),
		provisioningUnstarted: prometheus.NewDesc("karpenter_pods_provisioning_unstarted_time_seconds",
			"Seconds since Karpenter first found a place for a pod that is not Ready yet.", []string{LabelName, LabelNamespace}, nil),
		undecided: prometheus.NewDesc("karpenter_pods_provisioning_scheduling_undecided_time_seconds",
			"Seconds since Karpenter first saw a pending pod it has made no scheduling decision about yet.", []string{LabelName, LabelNamespace}, nil),
		waiting: map[types.NamespacedName]*waitingPod{},
	}
	for _, m := range []prometheus.Collector{c.boundDuration, c.startupDuration, c.provisioningBoundDuration, c.provisioningStartupDuration, ageCollector{c}} {
		if err := reg.Register(m); err != nil {
			return nil, fmt.Errorf("registering pod metrics: %w", err)
		}
	}
	return c, nil
}

// SummaryObjectives are upstream's summary quantiles: min, median, p90, p99
// and max, each within 0.01 rank error. A new map on every call.
func SummaryObjectives() map[float64]float64 {
	return map[float64]float64{0: 0.01, 0.5: 0.01, 0.9: 0.01, 0.99: 0.01, 1: 0.01}
}

// Register watches pods.
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("metrics.pod").
		For(&corev1.Pod{}).
		Complete(c)
}

// Reconcile updates the metrics for one pod.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &corev1.Pod{}
	if err := c.kube.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(p)
	return reconcile.Result{}, nil
}

// record updates the metrics from p: observations of its transitions, and
// whether it is still waiting (which the gauges read). Callers hold mu.
func (c *Controller) record(p *corev1.Pod) {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	w, known := c.waiting[key]
	if known && w.uid != p.UID {
		// Same name, new pod: what we remember belongs to its predecessor.
		c.forget(key)
		w, known = nil, false
	}
	terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	scheduled, scheduledAt := conditionTrue(p, corev1.PodScheduled)
	ready, readyAt := conditionTrue(p, corev1.PodReady)
	if !known {
		// Only a pod first seen Pending is tracked (see doc.go). A Running pod
		// has started once already, even if it is not Ready now (a crashing
		// container), and a finished one never will.
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
			return
		}
		w = &waitingPod{uid: p.UID, created: p.CreationTimestamp.Time, unbound: !scheduled, unstarted: !ready, dynamic: dynamicResources(p)}
		c.waiting[key] = w
	}

	_, _, schedulable := c.times.Times(key)
	if w.unbound {
		switch {
		case scheduled:
			observe(c.boundDuration.WithLabelValues(w.dynamic), p, scheduledAt)
			observeSince(c.provisioningBoundDuration.WithLabelValues(w.dynamic), schedulable, scheduledAt)
			w.unbound = false
		case terminal:
			w.unbound = false
		}
	}
	if w.unstarted {
		switch {
		case ready:
			observe(c.startupDuration, p, readyAt)
			observeSince(c.provisioningStartupDuration, schedulable, readyAt)
			w.unstarted = false
		case terminal:
			// A finished pod's Ready condition is False: it never started.
			w.unstarted = false
		}
	}
	if !w.unbound && !w.unstarted {
		// Both transitions are behind it; keeping the entry would only grow
		// the map by every pod the cluster ever ran.
		c.forget(key)
	}
}

// observeSince records from-to when Karpenter placed the pod before it got
// there (a pod bound before any decision of ours has nothing to report).
func observeSince(o prometheus.Observer, from, to time.Time) {
	if from.IsZero() || to.IsZero() || to.Before(from) {
		return
	}
	o.Observe(to.Sub(from).Seconds())
}

// dynamicResources is upstream's dynamic_resources label value: whether the
// pod claims resources through dynamic resource allocation.
func dynamicResources(p *corev1.Pod) string {
	if len(p.Spec.ResourceClaims) > 0 {
		return "true"
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, ctr := range cs {
			if len(ctr.Resources.Claims) > 0 {
				return "true"
			}
		}
	}
	return "false"
}

// observe records creation-to-at for p. A condition written without a
// transition time (only a hand-written status can lack one) has no duration
// to report, and a negative one would corrupt the distribution.
func observe(o prometheus.Observer, p *corev1.Pod, at time.Time) {
	if at.IsZero() || at.Before(p.CreationTimestamp.Time) {
		return
	}
	o.Observe(at.Sub(p.CreationTimestamp.Time).Seconds())
}

// forget drops a pod's gauges and memory, and cluster state's record of the
// provisioner's work on it. Callers hold mu.
func (c *Controller) forget(key types.NamespacedName) {
	delete(c.waiting, key)
	c.times.Forget(key)
}

// ageCollector exports the unbound and unstarted gauges of the pods still
// waiting: "now" on the controller's clock minus the pod's creation, read when
// the metrics are scraped, so no pod is reconciled again just to keep its
// gauge growing.
type ageCollector struct{ c *Controller }

func (a ageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- a.c.unbound
	ch <- a.c.unstarted
	ch <- a.c.provisioningUnbound
	ch <- a.c.provisioningUnstarted
	ch <- a.c.undecided
}

func (a ageCollector) Collect(ch chan<- prometheus.Metric) {
	c := a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for key, w := range c.waiting {
		age := now.Sub(w.created).Seconds()
		acked, decided, schedulable := c.times.Times(key)
		if w.unbound {
			ch <- prometheus.MustNewConstMetric(c.unbound, prometheus.GaugeValue, age, key.Name, key.Namespace, w.dynamic)
			if !schedulable.IsZero() {
				ch <- prometheus.MustNewConstMetric(c.provisioningUnbound, prometheus.GaugeValue, now.Sub(schedulable).Seconds(), key.Name, key.Namespace, w.dynamic)
			}
			if decided.IsZero() && !acked.IsZero() {
				ch <- prometheus.MustNewConstMetric(c.undecided, prometheus.GaugeValue, now.Sub(acked).Seconds(), key.Name, key.Namespace)
			}
		}
		if w.unstarted {
			ch <- prometheus.MustNewConstMetric(c.unstarted, prometheus.GaugeValue, age, key.Name, key.Namespace)
			if !schedulable.IsZero() {
				ch <- prometheus.MustNewConstMetric(c.provisioningUnstarted, prometheus.GaugeValue, now.Sub(schedulable).Seconds(), key.Name, key.Namespace)
			}
		}
	}
}

// conditionTrue returns whether the pod's condition t is True and since when.
func conditionTrue(p *corev1.Pod, t corev1.PodConditionType) (bool, time.Time) {
	for _, cond := range p.Status.Conditions {
		if cond.Type == t {
			return cond.Status == corev1.ConditionTrue, cond.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

package conditions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	apistatus "github.com/karpenter-go/karpenter/pkg/apis/status"
)

// Label names of the base label sets (upstream's).
const (
	LabelNamespace = "namespace"
	LabelName      = "name"
	LabelType      = "type"
	LabelStatus    = "status"
	LabelReason    = "reason"
	// LabelToStatus is the status a condition transitioned to, on the
	// transition duration histogram (LabelStatus is the one it left).
	LabelToStatus = "to_status"
	// LabelGroup and LabelKind name the object's API group and kind on the
	// kind-less families (operator_status_condition_*, operator_termination_*).
	LabelGroup = "group"
	LabelKind  = "kind"
)

// Kind describes one watched kind: what the metric names call it, how to make
// an empty object for Get and For, how to read its conditions, and which of
// its metadata labels become extra metric labels.
type Kind struct {
	// Name is the lower-case kind in the metric names (operator_<Name>_...).
	Name string
	// New returns an empty object of the kind.
	New func() client.Object
	// Conditions returns the object's conditions.
	Conditions func(client.Object) []apistatus.Condition
	// Labels are object label keys exported, on every family, as a metric label
	// named by PrometheusLabel; an object without the label gets "".
	Labels []string
	// Group and KindName are the API group and kind written on the kind-less
	// families when KindLess is set (as upstream's status controllers built
	// with EmitDeprecatedMetrics: NodeClaims, NodePools and NodeClasses, not
	// Nodes).
	Group, KindName string
	KindLess        bool
}

// NodeClaimKind is upstream's NodeClaim registration: the NodeClass label of
// the provider's node classes and the NodePool label as extra labels.
func NodeClaimKind(nodeClassLabels ...string) Kind {
	return Kind{
		Name:       "nodeclaim",
		New:        func() client.Object { return &v1.NodeClaim{} },
		Conditions: conditionsOf,
		Labels:     append(append([]string{}, nodeClassLabels...), v1.NodePoolLabelKey),
		Group:      v1.Group,
		KindName:   "NodeClaim",
		KindLess:   true,
	}
}

// NodePoolKind is upstream's NodePool registration: no extra labels.
func NodePoolKind() Kind {
	return Kind{
		Name:       "nodepool",
		New:        func() client.Object { return &v1.NodePool{} },
		Conditions: conditionsOf,
		Group:      v1.Group,
		KindName:   "NodePool",
		KindLess:   true,
	}
}

// NodeClassKind is upstream's registration of a provider's NodeClass kind
// (EC2NodeClass: operator_ec2nodeclass_*), with the kind-less families as
// upstream's NodeClass status controller emits them. example is an empty
// object of the kind.
func NodeClassKind(example client.Object, group, kind string) Kind {
	return Kind{
		Name:       strings.ToLower(kind),
		New:        func() client.Object { return example.DeepCopyObject().(client.Object) },
		Conditions: conditionsOf,
		Group:      group,
		KindName:   kind,
		KindLess:   true,
	}
}

// CapacityBufferKind is upstream's CapacityBuffer registration (gate
// CapacityBuffer): operator_capacitybuffer_* and the kind-less families.
func CapacityBufferKind() Kind {
	return Kind{
		Name: "capacitybuffer",
		New:  func() client.Object { return &autoscalingv1beta1.CapacityBuffer{} },
		Conditions: func(o client.Object) []apistatus.Condition {
			b := o.(*autoscalingv1beta1.CapacityBuffer)
			out := make([]apistatus.Condition, 0, len(b.Status.Conditions))
			for _, c := range b.Status.Conditions {
				out = append(out, apistatus.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
					ObservedGeneration: c.ObservedGeneration, LastTransitionTime: c.LastTransitionTime})
			}
			return out
		},
		Group:    autoscalingv1beta1.SchemeGroupVersion.Group,
		KindName: "CapacityBuffer",
		KindLess: true,
	}
}

// NodeKind is upstream's Node registration: a Node's kubelet conditions, with
// the NodeClass labels, the NodePool label and karpenter.sh/initialized as
// extra labels.
func NodeKind(nodeClassLabels ...string) Kind {
	return Kind{
		Name:       "node",
		New:        func() client.Object { return &corev1.Node{} },
		Conditions: nodeConditions,
		Labels:     append(append([]string{}, nodeClassLabels...), v1.NodePoolLabelKey, v1.NodeInitializedLabelKey),
	}
}

func conditionsOf(o client.Object) []apistatus.Condition {
	return o.(apistatus.Object).GetConditions()
}

// nodeConditions maps the core Node conditions onto ours; only the fields the
// metrics read matter (heartbeat times would only churn the comparison).
func nodeConditions(o client.Object) []apistatus.Condition {
	n := o.(*corev1.Node)
	out := make([]apistatus.Condition, 0, len(n.Status.Conditions))
	for _, c := range n.Status.Conditions {
		out = append(out, apistatus.Condition{
			Type:               string(c.Type),
			Status:             metav1.ConditionStatus(c.Status),
			Reason:             c.Reason,
			Message:            c.Message,
			LastTransitionTime: c.LastTransitionTime,
		})
	}
	return out
}

// PrometheusLabel turns an object label key into a metric label name the way
// upstream does: '/', '.' and '-' become '_'.
func PrometheusLabel(key string) string {
	return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(key)
}

// Controller reconciles the objects of one kind into the status condition
// and termination metrics.
type Controller struct {
	kube  client.Reader
	clock clock.Clock
	kind  Kind
	extra []string // Prometheus names of kind.Labels, same order

	count *prometheus.GaugeVec
	// currentSeconds and terminationCurrent are read at scrape time from seen
	// (ageCollector), not set per object: refreshing them by requeueing every
	// object each 10 s (upstream's way) cost a cache read and a copy per node
	// and NodeClaim per 10 s for as long as a fleet runs.
	currentSeconds, terminationCurrent     *prometheus.Desc
	currentLabels, terminationLabels       []string
	transitions                            *prometheus.CounterVec
	transitionSeconds, terminationDuration *prometheus.HistogramVec
	// shared holds the kind-less families of the registry, nil unless
	// kind.KindLess.
	shared *kindless

	// recorder, when set, records operatorpkg's events: a condition whose
	// status changed between two observations, and a finalizer that went.
	recorder record.EventRecorder

	// mu guards seen: one key is never reconciled concurrently, but different
	// keys may be and they share the map.
	mu   sync.Mutex
	seen map[types.NamespacedName]*observed
}

// Event reason of a removed finalizer (operatorpkg's); a condition's
// transition event has the condition type as its reason.
const EventFinalized = "Finalized"

// SetRecorder makes the controller record upstream's status events, as
// operatorpkg's status controller does: on each observed status change of a
// condition seen before, a Normal event with the condition type as reason
// ("Status condition transitioned, Type: Ready, Status: Unknown -> True,
// Reason: Ready"); and for each finalizer seen on the object that is gone
// (from it, or with it), a Normal Finalized event ("Finalized
// karpenter.sh/termination").
func (c *Controller) SetRecorder(rec record.EventRecorder) { c.recorder = rec }

func transitionMessage(cond apistatus.Condition, was metav1.ConditionStatus) string {
	msg := fmt.Sprintf("Status condition transitioned, Type: %s, Status: %s -> %s, Reason: %s", cond.Type, was, cond.Status, cond.Reason)
	if cond.Message != "" {
		msg += ", Message: " + cond.Message
	}
	return msg
}

// observed is what the controller remembers of an object from its last
// reconcile: the conditions (to detect transitions), the extra label values
// (to delete series written under old values) and the gauge series written
// (to delete exactly those that no longer apply).
type observed struct {
	uid        types.UID
	conditions map[string]apistatus.Condition
	extra      prometheus.Labels
	gauges     []prometheus.Labels
	since      []time.Time // lastTransitionTime of each of gauges
	deletedAt  *metav1.Time
	finalizers []string
}

// NewController creates the kind's six metric families and registers them
// with reg (the controller-runtime registry in the binary, a private one in
// tests).
func NewController(kube client.Reader, clk clock.Clock, reg prometheus.Registerer, kind Kind) (*Controller, error) {
	c := &Controller{kube: kube, clock: clk, kind: kind, seen: map[types.NamespacedName]*observed{}}
	for _, l := range kind.Labels {
		c.extra = append(c.extra, PrometheusLabel(l))
	}
	with := func(base ...string) []string { return append(base, c.extra...) }
	conditionSubsystem := kind.Name + "_status_condition"
	terminationSubsystem := kind.Name + "_termination"
	c.count = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "operator", Subsystem: conditionSubsystem, Name: "count",
		Help: "Number of conditions of an object with a given type, status and reason (1 per present condition).",
	}, with(LabelNamespace, LabelName, LabelType, LabelStatus, LabelReason))
	c.currentLabels = with(LabelNamespace, LabelName, LabelType, LabelStatus, LabelReason)
	c.currentSeconds = prometheus.NewDesc(prometheus.BuildFQName("operator", conditionSubsystem, "current_status_seconds"),
		"Seconds an object's condition has held its current status, from its lastTransitionTime.", c.currentLabels, nil)
	c.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "operator", Subsystem: conditionSubsystem, Name: "transitions_total",
		Help: "Observed condition transitions, labelled with the type, status and reason transitioned to.",
	}, with(LabelType, LabelStatus, LabelReason))
	c.transitionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "operator", Subsystem: conditionSubsystem, Name: "transition_seconds",
		Help:    "Seconds a condition held the status it left (labelled with that status) before an observed transition.",
		Buckets: prometheus.DefBuckets,
	}, with(LabelType, LabelStatus, LabelToStatus))
	c.terminationLabels = with(LabelNamespace, LabelName)
	c.terminationCurrent = prometheus.NewDesc(prometheus.BuildFQName("operator", terminationSubsystem, "current_time_seconds"),
		"Seconds an object has been terminating, since its deletionTimestamp.", c.terminationLabels, nil)
	c.terminationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "operator", Subsystem: terminationSubsystem, Name: "duration_seconds",
		Help:    "Seconds from an object's deletionTimestamp until it was seen gone.",
		Buckets: prometheus.DefBuckets,
	}, with())
	for _, m := range []prometheus.Collector{c.count, ageCollector{c}, c.transitions, c.transitionSeconds, c.terminationDuration} {
		if err := reg.Register(m); err != nil {
			return nil, fmt.Errorf("registering %s status metrics: %w", kind.Name, err)
		}
	}
	if kind.KindLess {
		shared, err := kindlessFor(reg)
		if err != nil {
			return nil, err
		}
		shared.add(c)
		c.shared = shared
	}
	return c, nil
}

// Register watches the kind.
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("metrics.status." + c.kind.Name).
		For(c.kind.New()).
		Complete(c)
}

// Reconcile updates the metrics for one object.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o := c.kind.New()
	if err := c.kube.Get(ctx, req.NamespacedName, o); err != nil {
		if apierrors.IsNotFound(err) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.gone(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.record(o)
	return reconcile.Result{}, nil
}

// record updates the metrics from o. Callers hold mu.
func (c *Controller) record(o client.Object) {
	key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	prev := c.seen[key]
	if prev != nil && prev.uid != o.GetUID() {
		// Same name, new object: what we remember belongs to its predecessor,
		// whose end we did not see, so it yields no observations.
		c.forget(key, prev)
		prev = nil
	}
	now := &observed{uid: o.GetUID(), conditions: map[string]apistatus.Condition{}, extra: prometheus.Labels{}}
	if fs := o.GetFinalizers(); len(fs) > 0 {
		now.finalizers = append([]string(nil), fs...)
	}
	if prev != nil && c.recorder != nil {
		for _, f := range prev.finalizers {
			if !slices.Contains(now.finalizers, f) {
				c.recorder.Event(o, corev1.EventTypeNormal, EventFinalized, "Finalized "+f)
			}
		}
	}
	for i, l := range c.kind.Labels {
		now.extra[c.extra[i]] = o.GetLabels()[l]
	}
	labels := func(base prometheus.Labels) prometheus.Labels {
		for k, v := range now.extra {
			base[k] = v
		}
		return base
	}

	for _, cond := range c.kind.Conditions(o) {
		now.conditions[cond.Type] = cond
		series := labels(prometheus.Labels{
			LabelNamespace: key.Namespace, LabelName: key.Name,
			LabelType: cond.Type, LabelStatus: string(cond.Status), LabelReason: cond.Reason,
		})
		c.count.With(series).Set(1)
		if c.shared != nil {
			c.shared.count.With(c.kindlessLabels(series, LabelNamespace, LabelName, LabelType, LabelStatus, LabelReason)).Set(1)
		}
		now.gauges = append(now.gauges, series)
		now.since = append(now.since, cond.LastTransitionTime.Time)

		// A condition transitions when its status differs from the one last
		// seen, including when it was not seen at all (upstream counts a
		// condition's appearance, so a freshly created object's Unknown
		// conditions are counted). Reason changes alone are not transitions.
		var was *apistatus.Condition
		if prev != nil {
			if p, ok := prev.conditions[cond.Type]; ok {
				was = &p
			}
		}
		if was != nil && was.Status == cond.Status {
			continue
		}
		transition := prometheus.Labels{LabelType: cond.Type, LabelStatus: string(cond.Status), LabelReason: cond.Reason}
		if c.shared != nil {
			c.shared.transitions.With(c.kindlessLabels(transition, LabelType, LabelStatus, LabelReason)).Inc()
		}
		c.transitions.With(labels(transition)).Inc()
		if was == nil {
			continue
		}
		if c.recorder != nil {
			c.recorder.Event(o, corev1.EventTypeNormal, cond.Type, transitionMessage(cond, was.Status))
		}
		// Both times come from the object, so a late reconcile does not
		// lengthen the duration; a hand-written status could make it negative,
		// which would corrupt the distribution.
		if d := cond.LastTransitionTime.Sub(was.LastTransitionTime.Time); d >= 0 {
			observed := prometheus.Labels{LabelType: cond.Type, LabelStatus: string(was.Status), LabelToStatus: string(cond.Status)}
			if c.shared != nil {
				c.shared.transitionSeconds.With(c.kindlessLabels(observed, LabelType, LabelStatus, LabelToStatus)).Observe(d.Seconds())
			}
			c.transitionSeconds.With(labels(observed)).Observe(d.Seconds())
		}
	}

	if ts := o.GetDeletionTimestamp(); ts != nil {
		now.deletedAt = ts.DeepCopy()
	}

	// Drop the series written last time that this pass did not write again: a
	// condition that changed status or reason, vanished, or whose extra label
	// values changed. Deleting after setting keeps scrapes from seeing a gap.
	if prev != nil {
		for _, old := range prev.gauges {
			if !containsLabels(now.gauges, old) {
				c.deleteCount(old)
			}
		}
	}
	c.seen[key] = now
}

// gone handles an object that no longer exists: its per-object series go, and
// if it was seen terminating, its termination duration is observed. Callers
// hold mu.
func (c *Controller) gone(key types.NamespacedName) {
	prev := c.seen[key]
	if prev == nil {
		return
	}
	if c.recorder != nil && len(prev.finalizers) > 0 {
		ref := c.kind.New()
		ref.SetNamespace(key.Namespace)
		ref.SetName(key.Name)
		ref.SetUID(prev.uid)
		for _, f := range prev.finalizers {
			c.recorder.Event(ref, corev1.EventTypeNormal, EventFinalized, "Finalized "+f)
		}
	}
	if prev.deletedAt != nil {
		if d := c.clock.Since(prev.deletedAt.Time); d >= 0 {
			c.terminationDuration.With(prev.extra).Observe(d.Seconds())
			if c.shared != nil {
				c.shared.terminationDuration.With(c.kindlessLabels(prometheus.Labels{})).Observe(d.Seconds())
			}
		}
	}
	c.forget(key, prev)
}

// forget deletes every per-object series written for key and its memory.
// Callers hold mu.
func (c *Controller) forget(key types.NamespacedName, prev *observed) {
	for _, old := range prev.gauges {
		c.deleteCount(old)
	}
	delete(c.seen, key)
}

// deleteCount deletes one count series and its kind-less twin.
func (c *Controller) deleteCount(series prometheus.Labels) {
	c.count.Delete(series)
	if c.shared != nil {
		c.shared.count.Delete(c.kindlessLabels(series, LabelNamespace, LabelName, LabelType, LabelStatus, LabelReason))
	}
}

// kindlessLabels copies the named labels of l and adds the kind's group and
// kind.
func (c *Controller) kindlessLabels(l prometheus.Labels, names ...string) prometheus.Labels {
	out := prometheus.Labels{LabelGroup: c.kind.Group, LabelKind: c.kind.KindName}
	for _, n := range names {
		out[n] = l[n]
	}
	return out
}

// ageCollector exports current_status_seconds and termination
// current_time_seconds of the objects seen: the controller's clock minus the
// condition's lastTransitionTime or the object's deletionTimestamp, read when
// the metrics are scraped, so no object is reconciled again just to keep its
// gauges growing.
type ageCollector struct{ c *Controller }

func (a ageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- a.c.currentSeconds
	ch <- a.c.terminationCurrent
}

func (a ageCollector) Collect(ch chan<- prometheus.Metric) {
	c := a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for key, o := range c.seen {
		for i, series := range o.gauges {
			ch <- prometheus.MustNewConstMetric(c.currentSeconds, prometheus.GaugeValue, now.Sub(o.since[i]).Seconds(), values(series, c.currentLabels)...)
		}
		if o.deletedAt != nil {
			ch <- prometheus.MustNewConstMetric(c.terminationCurrent, prometheus.GaugeValue, now.Sub(o.deletedAt.Time).Seconds(),
				values(termLabels(key, o.extra), c.terminationLabels)...)
		}
	}
}

// values lists l's values in the order of names.
func values(l prometheus.Labels, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = l[n]
	}
	return out
}

func termLabels(key types.NamespacedName, extra prometheus.Labels) prometheus.Labels {
	l := prometheus.Labels{LabelNamespace: key.Namespace, LabelName: key.Name}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

func containsLabels(set []prometheus.Labels, l prometheus.Labels) bool {
	for _, s := range set {
		if equalLabels(s, l) {
			return true
		}
	}
	return false
}

func equalLabels(a, b prometheus.Labels) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

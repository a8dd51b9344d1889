package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// RetriggerPeriod: a provisionable pod asks for a decision again this often while
// it stays pending (upstream's 10s), so capacity that failed to launch is retried.
const RetriggerPeriod = 10 * time.Second

// IsProvisionable reports whether Karpenter should find capacity for the pod: the
// kube-scheduler marked it Unschedulable, it is not bound, no preemption nominated
// a node for it, it is neither terminal nor terminating, and it is not owned by a
// DaemonSet (those follow nodes) or a Node (static pods).
func IsProvisionable(p *corev1.Pod) bool {
	if !candidate(p) {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// AwaitingScheduler reports whether the pod is one kube-scheduler has not
// tried yet: a candidate as for IsProvisionable, for the default scheduler,
// without scheduling gates, and without any PodScheduled condition (the
// scheduler sets one on its first attempt, the API server one on a gated pod).
//
// The provisioner decides for such pods too rather than waiting for the
// Unschedulable mark: while kube-scheduler works through a scale-up of
// hundreds of pods it marks them over tens of seconds, and each decision would
// see only the part it got through. Deciding early stays correct because the
// solver places every pod on existing and in-flight capacity first, as
// kube-scheduler would, and a NodeClaim is created only for pods no existing
// node can hold; the provisioner leaves out those that could preempt a pod
// running on an existing node (kube-scheduler would preempt rather than wait),
// see Provisioner.decisionPods. A pod bound before the window closes is no
// longer pending and drops out of the decision.
func AwaitingScheduler(p *corev1.Pod) bool {
	if !candidate(p) || len(p.Spec.SchedulingGates) > 0 {
		return false
	}
	if p.Spec.SchedulerName != "" && p.Spec.SchedulerName != corev1.DefaultSchedulerName {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return false
		}
	}
	return true
}

// candidate: not bound, not nominated by a preemption, neither terminal nor
// terminating, not owned by a DaemonSet or a Node.
func candidate(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" || p.DeletionTimestamp != nil {
		return false
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	return !scheduling.FollowsItsNode(p)
}

// PodTrigger reconciles pods: it triggers the batcher for provisionable ones (and
// for those kube-scheduler has not tried yet, see AwaitingScheduler) and
// keeps karpenter_pods_state current.
type PodTrigger struct {
	kube    client.Reader
	batcher *Batcher

	mu     sync.Mutex
	series map[types.NamespacedName][]string // label values last exported per pod
}

// NewPodTrigger returns the pod trigger controller.
func NewPodTrigger(kube client.Reader, b *Batcher) *PodTrigger {
	return &PodTrigger{kube: kube, batcher: b, series: map[types.NamespacedName][]string{}}
}

// Reconcile handles one pod.
func (t *PodTrigger) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &corev1.Pod{}
	if err := t.kube.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			t.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if err := t.export(ctx, p); err != nil {
		return reconcile.Result{}, err
	}
	if IsProvisionable(p) {
		t.batcher.Trigger(p.UID)
		return reconcile.Result{RequeueAfter: RetriggerPeriod}, nil
	}
	if AwaitingScheduler(p) {
		// Once, not every RetriggerPeriod: kube-scheduler gets to the pod
		// and, if nothing holds it, marks it Unschedulable, which triggers
		// again (and capacity lost meanwhile triggers a decision of its
		// own, see DeletionTrigger). Re-triggered, a fleet's backlog of
		// pods waiting for the scheduler re-opened a decision over all of
		// them every few seconds: at 5,000 nodes, 23,000 pods solved over
		// and over for no new NodeClaim, on the cores the scheduler lacked.
		t.batcher.Trigger(p.UID)
	}
	return reconcile.Result{}, nil
}

func (t *PodTrigger) export(ctx context.Context, p *corev1.Pod) error {
	// The first owner's self link, as upstream writes it.
	owner := ""
	if len(p.OwnerReferences) > 0 {
		ref := p.OwnerReferences[0]
		owner = fmt.Sprintf("/apis/%s/namespaces/%s/%ss/%s", ref.APIVersion, p.Namespace, strings.ToLower(ref.Kind), ref.Name)
	}
	var nodeLabels map[string]string
	if p.Spec.NodeName != "" {
		n := &corev1.Node{}
		if err := t.kube.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, n); err == nil {
			nodeLabels = n.Labels
		} else if !apierrors.IsNotFound(err) {
			return err
		}
	}
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	values := []string{p.Name, p.Namespace, owner, p.Spec.NodeName, strconv.FormatBool(p.Spec.NodeName != ""),
		nodeLabels[v1.NodePoolLabelKey], nodeLabels[corev1.LabelTopologyZone], nodeLabels[corev1.LabelArchStable],
		nodeLabels[v1.CapacityTypeLabelKey], nodeLabels[corev1.LabelInstanceTypeStable], string(p.Status.Phase),
		strconv.FormatBool(ready), strconv.FormatBool(nodeLabels[v1.NodePoolLabelKey] != "")}
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.series[key]; ok && !slices.Equal(old, values) {
		PodsState.DeleteLabelValues(old...)
	}
	t.series[key] = values
	PodsState.WithLabelValues(values...).Set(1)
	return nil
}

func (t *PodTrigger) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.series[key]; ok {
		PodsState.DeleteLabelValues(old...)
		delete(t.series, key)
	}
}

// Register watches pods.
func (t *PodTrigger) Register(mgr manager.Manager, concurrency int) error {
	return builder.ControllerManagedBy(mgr).
		Named("provisioner.trigger.pod").
		For(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(t)
}

// Package defaultspread gives pods the default topology spread constraints
// kube-scheduler will schedule them under, so that Karpenter's simulations
// (provisioning and disruption) spread as the scheduler will.
//
// kube-scheduler's PodTopologySpread plugin applies its configured
// defaultConstraints to a pod that declares no topologySpreadConstraints of
// its own (all or nothing: one constraint of its own and the defaults are not
// used). The defaults carry no label selector; the plugin deduces one for each
// pod: the selectors of the pod's namespace's Services that select the pod,
// merged, and the selector of the pod's controller when that is a
// ReplicationController (merged likewise), a ReplicaSet or a StatefulSet
// (whose requirements are added). A pod for which that gives nothing (a bare
// pod, a Job's or DaemonSet's pod that no Service selects) gets no defaults.
// Karpenter mirrors exactly that, from SCHEDULER_CONFIG's
// podTopologySpread.defaultConstraints (see pkg/operator/options); without
// them nothing changes.
//
// The defaults exist only in Karpenter's copies of the pods: Apply returns
// copies, and never writes to the API server or to the pods it was given.
package defaultspread

import (
	"context"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// The controller kinds whose selectors kube-scheduler deduces from.
var (
	replicationControllerKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")
	replicaSetKind            = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	statefulSetKind           = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// Applier applies the default constraints to the pods of one decision. It
// remembers the Services, controllers and selectors it looked up, so that a
// workload's pods cost one deduction; use a new one for each decision.
type Applier struct {
	kube        client.Reader
	constraints []corev1.TopologySpreadConstraint

	services  map[string][]corev1.Service
	owners    map[types.UID]*ownerSelector
	selectors map[selectorKey]*metav1.LabelSelector
}

// ownerSelector is what a pod's controller adds to the deduced selector: a
// ReplicationController's selector is merged into the Services' labels, a
// ReplicaSet's or StatefulSet's is added as requirements.
type ownerSelector struct {
	labels       map[string]string
	requirements []metav1.LabelSelectorRequirement
}

// selectorKey is everything the deduction reads from a pod.
type selectorKey struct {
	namespace string
	owner     types.UID
	labels    string
}

// New returns an Applier of constraints, reading Services and controllers
// through kube; nil when there are no constraints (a nil Applier returns the
// pods unchanged).
func New(kube client.Reader, constraints []corev1.TopologySpreadConstraint) *Applier {
	if len(constraints) == 0 {
		return nil
	}
	return &Applier{
		kube:        kube,
		constraints: constraints,
		services:    map[string][]corev1.Service{},
		owners:      map[types.UID]*ownerSelector{},
		selectors:   map[selectorKey]*metav1.LabelSelector{},
	}
}

// Apply returns pods with each pod that declares no topology spread
// constraints, and has a deducible selector, replaced by a copy carrying the
// default constraints with that selector. The pods given are not modified (they
// may be shared with an informer cache); the slice is new when a pod was
// replaced, and pods itself otherwise.
func (a *Applier) Apply(ctx context.Context, pods []*corev1.Pod) []*corev1.Pod {
	if a == nil {
		return pods
	}
	var out []*corev1.Pod
	for i, pod := range pods {
		if len(pod.Spec.TopologySpreadConstraints) > 0 {
			continue
		}
		selector := a.selector(ctx, pod)
		if selector == nil {
			continue
		}
		if out == nil {
			out = slices.Clone(pods)
		}
		out[i] = withConstraints(pod, a.constraints, selector)
	}
	if out == nil {
		return pods
	}
	return out
}

// withConstraints is a copy of pod whose spec has its own copy of the
// constraints, each with selector; the rest of the pod is shared, read-only.
func withConstraints(pod *corev1.Pod, constraints []corev1.TopologySpreadConstraint, selector *metav1.LabelSelector) *corev1.Pod {
	cp := *pod
	cp.Spec.TopologySpreadConstraints = make([]corev1.TopologySpreadConstraint, len(constraints))
	for i := range constraints {
		c := constraints[i].DeepCopy()
		c.LabelSelector = selector.DeepCopy()
		cp.Spec.TopologySpreadConstraints[i] = *c
	}
	return &cp
}

// selector is the selector kube-scheduler deduces for pod, nil when empty.
func (a *Applier) selector(ctx context.Context, pod *corev1.Pod) *metav1.LabelSelector {
	key := selectorKey{namespace: pod.Namespace, labels: labels.Set(pod.Labels).String()}
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner != nil {
		key.owner = owner.UID
	}
	if s, ok := a.selectors[key]; ok {
		return s
	}
	s := a.deduce(ctx, pod, owner)
	a.selectors[key] = s
	return s
}

func (a *Applier) deduce(ctx context.Context, pod *corev1.Pod, owner *metav1.OwnerReference) *metav1.LabelSelector {
	matchLabels := map[string]string{}
	podLabels := labels.Set(pod.Labels)
	services := a.namespaceServices(ctx, pod.Namespace)
	for i := range services {
		svc := &services[i]
		// A Service without a selector selects no pod.
		if svc.Spec.Selector == nil || !labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(podLabels) {
			continue
		}
		maps.Copy(matchLabels, svc.Spec.Selector)
	}
	var requirements []metav1.LabelSelectorRequirement
	if o := a.ownerSelector(ctx, pod, owner); o != nil {
		maps.Copy(matchLabels, o.labels)
		requirements = o.requirements
	}
	// An empty selector would count every pod of the namespace:
	// kube-scheduler applies no defaults then.
	if len(matchLabels) == 0 && len(requirements) == 0 {
		return nil
	}
	s := &metav1.LabelSelector{MatchExpressions: requirements}
	if len(matchLabels) > 0 {
		s.MatchLabels = matchLabels
	}
	return s
}

// namespaceServices lists the namespace's Services once per Applier. A failed
// list counts as none, as kube-scheduler ignores its lister's errors.
func (a *Applier) namespaceServices(ctx context.Context, namespace string) []corev1.Service {
	if svcs, ok := a.services[namespace]; ok {
		return svcs
	}
	list := &corev1.ServiceList{}
	if err := a.kube.List(ctx, list, client.InNamespace(namespace)); err != nil {
		log.FromContext(ctx).V(1).Info("deducing default topology spread selectors without the namespace's services", "namespace", namespace, "error", err.Error())
	}
	a.services[namespace] = list.Items
	return list.Items
}

// ownerSelector reads the pod's controller's selector once per Applier; nil
// when the controller is of another kind, is gone or cannot be read (the
// deduction goes on without it, as kube-scheduler's does).
func (a *Applier) ownerSelector(ctx context.Context, pod *corev1.Pod, owner *metav1.OwnerReference) *ownerSelector {
	if owner == nil {
		return nil
	}
	if o, ok := a.owners[owner.UID]; ok {
		return o
	}
	o, err := a.readOwner(ctx, pod.Namespace, owner)
	if err != nil {
		log.FromContext(ctx).V(1).Info("deducing a default topology spread selector without the pod's controller", "pod", pod.Namespace+"/"+pod.Name,
			"controller", owner.Kind+"/"+owner.Name, "error", err.Error())
	}
	a.owners[owner.UID] = o
	return o
}

func (a *Applier) readOwner(ctx context.Context, namespace string, owner *metav1.OwnerReference) (*ownerSelector, error) {
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return nil, nil
	}
	key := types.NamespacedName{Namespace: namespace, Name: owner.Name}
	switch gv.WithKind(owner.Kind) {
	case replicationControllerKind:
		rc := &corev1.ReplicationController{}
		if err := a.kube.Get(ctx, key, rc); err != nil {
			return nil, err
		}
		if len(rc.Spec.Selector) == 0 {
			return nil, nil
		}
		return &ownerSelector{labels: maps.Clone(rc.Spec.Selector)}, nil
	case replicaSetKind:
		rs := &appsv1.ReplicaSet{}
		if err := a.kube.Get(ctx, key, rs); err != nil {
			return nil, err
		}
		return requirementsOf(rs.Spec.Selector), nil
	case statefulSetKind:
		sts := &appsv1.StatefulSet{}
		if err := a.kube.Get(ctx, key, sts); err != nil {
			return nil, err
		}
		return requirementsOf(sts.Spec.Selector), nil
	}
	return nil, nil
}

// requirementsOf is a label selector as requirements (matchLabels as In), nil
// when it selects nothing or is not valid (kube-scheduler then adds nothing).
func requirementsOf(s *metav1.LabelSelector) *ownerSelector {
	if s == nil {
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
		return nil
	}
	var reqs []metav1.LabelSelectorRequirement
	keys := slices.Sorted(maps.Keys(s.MatchLabels))
	for _, k := range keys {
		reqs = append(reqs, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{s.MatchLabels[k]}})
	}
	for _, r := range s.MatchExpressions {
		reqs = append(reqs, *r.DeepCopy())
	}
	if len(reqs) == 0 {
		return nil
	}
	return &ownerSelector{requirements: reqs}
}

// ApplyToNodes applies the defaults (see Apply) to the pods bound to nodes,
// which a disruption simulation may schedule again. A node whose pods changed
// gets a new Pods slice: the one it had may be cluster state's.
func (a *Applier) ApplyToNodes(ctx context.Context, nodes []*scheduling.ExistingNode) {
	if a == nil {
		return
	}
	for _, n := range nodes {
		n.Pods = a.Apply(ctx, n.Pods)
	}
}

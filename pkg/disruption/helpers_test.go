package disruption_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// now is the fixed time every table case evaluates at: a Wednesday, 10:30 UTC.
var now = time.Date(2026, 3, 4, 10, 30, 0, 0, time.UTC)

const zone = "zone-a"

// itype builds an amd64/linux instance type offered in zone-a at the given
// on-demand and spot prices (a price <= 0 leaves that capacity type out).
func itype(name string, cpu, memGi int64, od, spot float64) *scheduling.InstanceType {
	var offerings []scheduling.Offering
	if od > 0 {
		offerings = append(offerings, scheduling.Offering{Zone: zone, CapacityType: scheduling.CapacityTypeOnDemand, Price: od, Available: true})
	}
	if spot > 0 {
		offerings = append(offerings, scheduling.Offering{Zone: zone, CapacityType: scheduling.CapacityTypeSpot, Price: spot, Available: true})
	}
	return &scheduling.InstanceType{
		Name: name,
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, name),
			scheduling.NewRequirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "amd64"),
			scheduling.NewRequirement(scheduling.LabelOS, corev1.NodeSelectorOpIn, "linux"),
		),
		Offerings: offerings,
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		},
		Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("100Mi")},
	}
}

// standardTypes: s (2 cpu, 0.17/h), m (4 cpu, 0.34/h), l (8 cpu, 0.68/h),
// spot at half price.
func standardTypes() []*scheduling.InstanceType {
	return []*scheduling.InstanceType{
		itype("s", 2, 8, 0.17, 0.085),
		itype("m", 4, 16, 0.34, 0.17),
		itype("l", 8, 32, 0.68, 0.34),
	}
}

// world builds an Input step by step.
type world struct {
	t     *testing.T
	in    *disruption.Input
	pools map[string]*disruption.NodePool
	types map[string]*scheduling.InstanceType
}

func newWorld(t *testing.T) *world {
	return &world{t: t, in: &disruption.Input{Now: now, Scheduling: &scheduling.Input{}}, pools: map[string]*disruption.NodePool{}, types: map[string]*scheduling.InstanceType{}}
}

type poolOpt = fixtures.NodePoolOption

var (
	whenEmpty = fixtures.WithConsolidationPolicy(v1.ConsolidationPolicyWhenEmpty)
	balanced  = fixtures.WithConsolidationPolicy(v1.ConsolidationPolicyBalanced)
	never     = fixtures.WithConsolidateAfter("Never")
	budgetsOf = fixtures.WithBudgets
)

var onDemandOnly = fixtures.NodePoolFunc(func(np *v1.NodePool) {
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		fixtures.Requirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))
})

func nodes(n string, reasons ...v1.DisruptionReason) v1.Budget {
	return v1.Budget{Nodes: n, Reasons: reasons}
}

func scheduled(n, schedule string, d time.Duration, reasons ...v1.DisruptionReason) v1.Budget {
	return v1.Budget{Nodes: n, Reasons: reasons, Schedule: &schedule, Duration: &metav1.Duration{Duration: d}}
}

// pool adds a NodePool (consolidateAfter 0s, WhenEmptyOrUnderutilized, budget
// 100%, on-demand and spot) that launches from its.
func (w *world) pool(name string, its []*scheduling.InstanceType, opts ...poolOpt) *v1.NodePool {
	base := []poolOpt{
		fixtures.WithUID("uid-" + name),
		fixtures.WithRequirements(fixtures.Requirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand, v1.CapacityTypeSpot)),
		fixtures.WithConsolidateAfter("0s"),
		fixtures.WithConsolidationPolicy(v1.ConsolidationPolicyWhenEmptyOrUnderutilized),
		fixtures.WithBudgets(v1.Budget{Nodes: "100%"}),
	}
	np := fixtures.NodePool(name, append(base, opts...)...)
	for _, it := range its {
		w.types[it.Name] = it
	}
	dp := &disruption.NodePool{NodePool: np, InstanceTypes: its}
	w.pools[name] = dp
	w.in.NodePools = append(w.in.NodePools, dp)
	var reqs []scheduling.Requirement
	for _, r := range np.Spec.Template.Spec.Requirements {
		req := scheduling.NewRequirement(r.Key, r.Operator, r.Values...)
		req.MinValues = r.MinValues
		reqs = append(reqs, req)
	}
	w.in.Scheduling.NodePools = append(w.in.Scheduling.NodePools, &scheduling.NodePool{
		Name: name, Requirements: scheduling.NewRequirements(reqs...), Labels: np.Spec.Template.ObjectMeta.Labels,
		Taints: np.Spec.Template.Spec.Taints, InstanceTypes: its,
	})
	return np
}

type nodeOpt func(*disruption.Node)

func notConsolidatable(n *disruption.Node) {
	n.NodeClaim.StatusConditions().Clear(v1.ConditionTypeConsolidatable)
}

func drifted(at time.Time) nodeOpt {
	return func(n *disruption.Node) {
		n.NodeClaim.Status.Conditions = append(n.NodeClaim.Status.Conditions, status.Condition{
			Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.NewTime(at)})
	}
}

func spot(n *disruption.Node) {
	n.Node.Labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeSpot
	n.NodeClaim.Labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeSpot
}

func uninitialized(n *disruption.Node) {
	n.Initialized = false
	n.Existing.Initialized = false
}

func annotated(k, v string) nodeOpt {
	return func(n *disruption.Node) { n.Node.Annotations = map[string]string{k: v} }
}

func claimAnnotated(k, v string) nodeOpt {
	return func(n *disruption.Node) { n.NodeClaim.Annotations = map[string]string{k: v} }
}

func tgp(d time.Duration) nodeOpt {
	return func(n *disruption.Node) { n.NodeClaim.Spec.TerminationGracePeriod = &metav1.Duration{Duration: d} }
}

func notReady(n *disruption.Node) {
	n.Node.Status.Conditions[0].Status = corev1.ConditionFalse
}

// node adds an initialized, Ready, Consolidatable node of the pool, of the
// given instance type, on-demand in zone-a.
func (w *world) node(name, pool, it string, opts ...nodeOpt) *disruption.Node {
	t, ok := w.types[it]
	if !ok {
		w.t.Fatalf("unknown instance type %s", it)
	}
	lbls := fixtures.WithLabels(map[string]string{
		v1.NodePoolLabelKey:            pool,
		corev1.LabelInstanceTypeStable: it,
		corev1.LabelTopologyZone:       zone,
		v1.CapacityTypeLabelKey:        v1.CapacityTypeOnDemand,
		corev1.LabelArchStable:         "amd64",
		corev1.LabelOSStable:           "linux",
		corev1.LabelHostname:           name,
	})
	k := fixtures.Node(name, fixtures.WithUID("node-"+name), lbls, fixtures.WithProviderID("kwok://"+name),
		fixtures.WithAllocatable(t.Allocatable()),
		fixtures.WithNodeConditions(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}))
	nc := fixtures.NodeClaim(name, fixtures.WithUID("nc-"+name), lbls, fixtures.CreatedAt(now.Add(-24*time.Hour)),
		fixtures.WithNodeName(name), fixtures.WithProviderID("kwok://"+name))
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	nc.StatusConditions().SetTrue(v1.ConditionTypeConsolidatable)
	n := &disruption.Node{Name: name, Node: k, NodeClaim: nc, NodePool: pool, Initialized: true}
	n.Existing = &scheduling.ExistingNode{
		Name: name, Labels: k.Labels, Taints: k.Spec.Taints, Allocatable: k.Status.Allocatable,
		Initialized: true, NodePool: pool,
	}
	for _, o := range opts {
		o(n)
	}
	w.in.Nodes = append(w.in.Nodes, n)
	return n
}

type podOpt = fixtures.PodOption

func podAnnotated(k, v string) podOpt { return fixtures.WithAnnotations(map[string]string{k: v}) }

func started(ago time.Duration) podOpt {
	return fixtures.PodFunc(func(p *corev1.Pod) {
		t := metav1.NewTime(now.Add(-ago))
		p.Status.StartTime = &t
	})
}

var (
	daemonSetPod = fixtures.WithOwners(metav1.OwnerReference{Kind: "DaemonSet", Name: "ds", APIVersion: "apps/v1"})
	mirrorPod    = fixtures.WithAnnotations(map[string]string{corev1.MirrorPodAnnotationKey: "x"})
	phase        = fixtures.WithPhase
)

func labeled(k, v string) podOpt { return fixtures.WithLabels(map[string]string{k: v}) }

// podOf is a Running pod of namespace ns, created an hour before now, whose
// UID is ns/name, requesting cpu and 256Mi.
func podOf(ns, name, cpu string, opts ...podOpt) *corev1.Pod {
	base := []podOpt{
		fixtures.WithNamespace(ns), fixtures.WithUID(ns + "/" + name), fixtures.CreatedAt(now.Add(-time.Hour)),
		fixtures.WithRequests("cpu", cpu, "memory", "256Mi"), fixtures.WithPhase(corev1.PodRunning),
	}
	return fixtures.Pod(name, append(base, opts...)...)
}

// pod binds a new pod requesting cpu to the node.
func (w *world) pod(n *disruption.Node, name, cpu string, opts ...podOpt) *corev1.Pod {
	p := podOf("default", name, cpu, opts...)
	p.Spec.NodeName = n.Name
	n.Existing.Pods = append(n.Existing.Pods, p)
	return p
}

// pending adds a pending pod.
func (w *world) pending(name, cpu string, opts ...podOpt) *corev1.Pod {
	p := podOf("default", name, cpu, opts...)
	p.Status.Phase = corev1.PodPending
	w.in.Scheduling.Pods = append(w.in.Scheduling.Pods, p)
	return p
}

func (w *world) pdb(name string, allowed int32, selector map[string]string) {
	w.in.PDBs = append(w.in.PDBs, fixtures.PodDisruptionBudget(name, fixtures.WithMinAvailable(intstr.FromInt32(1)),
		fixtures.WithSelector(selector), fixtures.WithPDBStatus(policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed})))
}

func (w *world) run() *disruption.Result {
	w.t.Helper()
	return disruption.Run(w.in)
}

// describe renders a result for failure messages and comparisons.
func describe(r *disruption.Result) string {
	var b strings.Builder
	if d := r.Decision; d != nil {
		fmt.Fprintf(&b, "decision %s/%s %s %v", d.Method, d.Method.Reason(), d.Action(), d.CandidateNames())
		for _, c := range d.Replacements {
			names := make([]string, len(c.InstanceTypes))
			for i, it := range c.InstanceTypes {
				names[i] = it.Name
			}
			fmt.Fprintf(&b, " -> %s%v@%.3f", c.NodePool.Name, names, c.Price)
		}
		fmt.Fprintf(&b, " (%s)\n", d.Explanation)
	} else {
		b.WriteString("no decision\n")
	}
	for _, e := range r.Explanations {
		fmt.Fprintf(&b, "%s: %s %s: %s\n", e.Node.Name, e.Method, e.Code, e.Message)
	}
	return b.String()
}

func explanation(r *disruption.Result, node string) *disruption.Explanation {
	for _, e := range r.Explanations {
		if e.Node.Name == node {
			return e
		}
	}
	return nil
}

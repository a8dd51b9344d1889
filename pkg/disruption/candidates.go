package disruption

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/donotdisrupt"
	"github.com/karpenter-go/karpenter/pkg/events"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// PodDeletionCostAnnotation is the ReplicaSet controller's pod deletion cost.
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// node is a Node with what a pass derives from it.
type node struct {
	*Node
	pool *NodePool
	// moving are the pods a disruption reschedules (not DaemonSet, mirror,
	// terminal or terminating pods).
	moving []*corev1.Pod
	// refused is the first moving pod the solver refuses wherever it would go
	// (Dynamic Resource Allocation requests while the solver does not simulate
	// them): nil when there is none. The node's pods cannot all move.
	refused *corev1.Pod
	// consolidatable and drifted mirror the NodeClaim's conditions.
	consolidatable bool
	drifted        bool
	driftedAt      time.Time
	driftReason    string
	// price of the node's offering per hour; priced is false when unknown.
	price        float64
	priced       bool
	instanceType *scheduling.InstanceType
	capacityType string
	// cost of disrupting it: the eviction cost of its pods scaled by the share
	// of its lifetime left.
	cost float64
	// rescheduleCost: 1 plus its pods' eviction costs counted from 0, with no
	// lifetime factor (Balanced scoring and deletion-cost ranking).
	rescheduleCost float64
	// repair is what the repair policies make of the Node's conditions.
	repair repairResult
	// rebooting: a reboot is in progress (the NodeClaim's Rebooting is
	// True). No method touches the node until it ends, and it counts against
	// every budget meanwhile.
	rebooting bool
	// blocks caches block() per class: [graceful, eventual].
	blocks   [2]*block
	blocksOK [2]bool
}

func (n *node) empty() bool { return len(n.moving) == 0 }

type block struct {
	code Code
	msg  string
}

type pdbInfo struct {
	namespace, name string
	selector        labels.Selector
	allowed         int32
}

func newNode(p *pass, in *Node) *node {
	n := &node{Node: in}
	for _, pod := range in.Pods() {
		if reschedulable(pod) {
			n.moving = append(n.moving, pod)
			if n.refused == nil && !p.in.Scheduling.Options.SimulateDRARequests && scheduling.HasDRARequests(pod) {
				n.refused = pod
			}
		}
	}
	var rebootEnded time.Time
	if in.NodeClaim != nil {
		conds := in.NodeClaim.StatusConditions()
		n.consolidatable = conds.Get(v1.ConditionTypeConsolidatable).IsTrue()
		if c := conds.Get(v1.ConditionTypeRebooting); c != nil {
			n.rebooting = c.IsTrue()
			if c.IsFalse() {
				rebootEnded = c.LastTransitionTime.Time
			}
		}
		if c := conds.Get(v1.ConditionTypeDrifted); c.IsTrue() {
			n.drifted = true
			n.driftedAt = c.LastTransitionTime.Time
			n.driftReason = c.Reason
		}
	}
	n.pool = p.pools[in.NodePool]
	if p.repairs != nil && in.Node != nil {
		n.repair = p.repairs.resolve(in.Node, p.in.Now, rebootEnded)
	}
	n.priceNode(p)
	n.cost = disruptionCost(n, p.in.Now, p.in.Options.PodDeletionCostManagement)
	n.rescheduleCost = rescheduleCost(n, p.in.Options.PodDeletionCostManagement)
	return n
}

// labels of the node: the Node's, or the NodeClaim's before it registered.
func (n *node) labels() map[string]string {
	if n.Node.Node != nil {
		return n.Node.Node.Labels
	}
	if n.Existing != nil {
		return n.Existing.Labels
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Labels
	}
	return nil
}

// priceNode finds the node's instance type in its NodePool and the price of the
// offering it runs on (its zone and capacity type).
func (n *node) priceNode(p *pass) {
	if n.pool == nil {
		return
	}
	lbls := n.labels()
	name := lbls[corev1.LabelInstanceTypeStable]
	zone := lbls[corev1.LabelTopologyZone]
	n.capacityType = lbls[v1.CapacityTypeLabelKey]
	if it := p.instanceType(n.pool, name); it != nil {
		n.instanceType = it
		best := math.Inf(1)
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == n.capacityType && o.Price < best {
				best = o.Price
			}
		}
		if !math.IsInf(best, 1) {
			n.price, n.priced = best, true
		}
		return
	}
}

// instanceType finds a pool's instance type by name (the first of that name),
// through a map built once per pool and pass rather than a scan per node.
func (p *pass) instanceType(np *NodePool, name string) *scheduling.InstanceType {
	m, ok := p.typesByName[np]
	if !ok {
		m = make(map[string]*scheduling.InstanceType, len(np.InstanceTypes))
		for _, it := range np.InstanceTypes {
			if _, dup := m[it.Name]; !dup {
				m[it.Name] = it
			}
		}
		p.typesByName[np] = m
	}
	return m[name]
}

// reschedulable pods need a new home when their node goes: not owned by a
// DaemonSet (it runs everywhere) or by the node (mirror pods), not finished and
// not already terminating.
func reschedulable(p *corev1.Pod) bool {
	return active(p) && !ownedBy(p, "DaemonSet") && !mirror(p)
}

func active(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

func ownedBy(p *corev1.Pod, kind string) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == kind {
			return true
		}
	}
	return false
}

func mirror(p *corev1.Pod) bool {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	return ownedBy(p, "Node")
}

// evictionCost follows upstream: 1, raised by the pod's deletion cost and
// priority, clamped to [-10, 10].
func evictionCost(p *corev1.Pod, managed bool) float64 {
	cost := 1.0
	// The user's karpenter.sh/disruption-cost first; else, unless Karpenter
	// writes it itself, the ReplicaSet controller's pod-deletion-cost. Both
	// are int32s, as the API server and the ReplicaSet controller read them.
	if v, ok := p.Annotations[v1.DisruptionCostAnnotationKey]; ok {
		if c, err := strconv.ParseInt(v, 10, 32); err == nil {
			cost += float64(c) / math.Pow(2, 27)
		}
	} else if v, ok := p.Annotations[PodDeletionCostAnnotation]; ok && !managed {
		if c, err := strconv.ParseInt(v, 10, 32); err == nil {
			cost += float64(c) / math.Pow(2, 27)
		}
	}
	if p.Spec.Priority != nil {
		cost += float64(*p.Spec.Priority) / math.Pow(2, 25)
	}
	return math.Max(-10, math.Min(10, cost))
}

func disruptionCost(n *node, now time.Time, managed bool) float64 {
	c := 0.0
	for _, p := range n.moving {
		c += evictionCost(p, managed)
	}
	// A node close to expiry is cheaper to disrupt: its pods move soon anyway.
	if nc := n.NodeClaim; nc != nil && nc.Spec.ExpireAfter.Duration != nil && *nc.Spec.ExpireAfter.Duration > 0 {
		life := *nc.Spec.ExpireAfter.Duration
		left := nc.CreationTimestamp.Add(life).Sub(now)
		c *= math.Max(0, math.Min(1, float64(left)/float64(life)))
	}
	return c
}

func newPDBs(in *Input) map[string][]*pdbInfo {
	out := map[string][]*pdbInfo{}
	for _, pdb := range in.PDBs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			// An unparseable selector selects nothing for the eviction API either.
			continue
		}
		out[pdb.Namespace] = append(out[pdb.Namespace], &pdbInfo{namespace: pdb.Namespace, name: pdb.Name, selector: sel, allowed: pdb.Status.DisruptionsAllowed})
	}
	for _, l := range out {
		sort.Slice(l, func(i, j int) bool { return l[i].name < l[j].name })
	}
	return out
}

// block returns why the node may not be disrupted by a method of this class,
// or nil. Nodes that are not candidates at all (unmanaged, in flight, already
// being disrupted) return a block with an empty message: nothing to explain.
func (p *pass) block(n *node, m Method) *block {
	if r, ok := m.(ruled); ok {
		return r.block(p, n)
	}
	class := 0
	if !m.graceful() {
		class = 1
	}
	if n.blocksOK[class] {
		return n.blocks[class]
	}
	b := p.computeBlock(n, m.graceful())
	n.blocks[class], n.blocksOK[class] = b, true
	return b
}

var silent = &block{}

func (p *pass) computeBlock(n *node, graceful bool) *block {
	// Without the solver's view of the node (Existing) its pods are unknown: it
	// might look empty. It is left for a later pass.
	if n.NodeClaim == nil || n.Node.Node == nil || n.Existing == nil || n.Deleting || n.MarkedForDeletion || n.rebooting {
		return silent
	}
	if !n.Initialized {
		return &block{CodeNotInitialized, fmt.Sprintf("node %s is not initialized yet", n.Name)}
	}
	if n.pool == nil {
		if n.NodePool == "" {
			return silent
		}
		return &block{CodeNodePoolNotFound, fmt.Sprintf("nodepool %s of node %s not found", n.NodePool, n.Name)}
	}
	if n.Nominated {
		return &block{CodeNominated, fmt.Sprintf("node %s is nominated for pending pods", n.Name)}
	}
	if n.Node.Node.Annotations[v1.DoNotDisruptAnnotationKey] == "true" {
		return &block{CodeDoNotDisrupt, fmt.Sprintf("node %s has %s", n.Name, v1.DoNotDisruptAnnotationKey)}
	}
	if n.NodeClaim.Annotations[v1.DoNotDisruptAnnotationKey] == "true" {
		return &block{CodeDoNotDisrupt, fmt.Sprintf("nodeclaim %s has %s", n.NodeClaim.Name, v1.DoNotDisruptAnnotationKey)}
	}
	// Drift with a terminationGracePeriod goes ahead despite blocking pods: the
	// grace period bounds how long they can hold the node once it drains.
	if !graceful && n.NodeClaim.Spec.TerminationGracePeriod != nil {
		return nil
	}
	pods := n.Pods()
	for _, pod := range pods {
		if msg, ok := doNotDisrupt(pod, p.in.Now, p.in.Events); ok {
			return &block{CodeDoNotDisrupt, msg}
		}
	}
	for _, pod := range pods {
		if msg, ok := p.pdbBlocks(pod); ok {
			return &block{CodePodDisruptionBudget, msg}
		}
	}
	return nil
}

// doNotDisrupt reports whether a pod's karpenter.sh/do-not-disrupt annotation
// is in force (see package donotdisrupt): "true", or a duration counted from
// the pod's start that has not elapsed. An invalid value is ignored. What it
// finds about a duration or an invalid value is told on the pod through
// events, when the input has a publisher.
func doNotDisrupt(pod *corev1.Pod, now time.Time, pub events.Publisher) (string, bool) {
	if !active(pod) {
		return "", false
	}
	st := donotdisrupt.Evaluate(pod, now)
	if e := st.Event(pod); e != nil && pub != nil {
		pub.Publish(*e)
	}
	if !st.Active {
		return "", false
	}
	name := pod.Namespace + "/" + pod.Name
	if st.Until.IsZero() {
		if st.Value == "true" {
			return fmt.Sprintf("pod %s has %s", name, v1.DoNotDisruptAnnotationKey), true
		}
		return fmt.Sprintf("pod %s has %s=%s and has not started", name, v1.DoNotDisruptAnnotationKey, st.Value), true
	}
	return fmt.Sprintf("pod %s has %s=%s (until %s)", name, v1.DoNotDisruptAnnotationKey, st.Value, formatUntil(st.Until, now)), true
}

// pdbBlocks reports whether evicting the pod would be refused: a PDB selecting
// it allows no disruption, or several PDBs select it (the eviction API refuses
// those). Pods that are not running yet are evicted without consulting PDBs.
func (p *pass) pdbBlocks(pod *corev1.Pod) (string, bool) {
	if !active(pod) || mirror(pod) || pod.Status.Phase == corev1.PodPending {
		return "", false
	}
	var matched []*pdbInfo
	for _, pdb := range p.pdbs[pod.Namespace] {
		if pdb.selector.Matches(labels.Set(pod.Labels)) {
			matched = append(matched, pdb)
		}
	}
	switch {
	case len(matched) > 1:
		names := make([]string, len(matched))
		for i, m := range matched {
			names[i] = m.namespace + "/" + m.name
		}
		return fmt.Sprintf("pod %s/%s is selected by more than one PDB (%s), so it cannot be evicted", pod.Namespace, pod.Name, strings.Join(names, ", ")), true
	case len(matched) == 1 && matched[0].allowed <= 0:
		return fmt.Sprintf("PDB %s/%s blocks eviction of %s", matched[0].namespace, matched[0].name, pod.Name), true
	}
	return "", false
}

// wants reports whether a method would act on the node were nothing in the
// way, and if not whether a person should be told why (consolidation turned off
// by the NodePool's policy). Nodes without a NodeClaim or NodePool are decided
// here; the others by the method's filter.
func (p *pass) wants(n *node, m Method) (bool, *block) {
	if n.pool == nil || n.NodeClaim == nil {
		// A managed node whose NodePool is gone: explain it when a condition says
		// it would otherwise be disrupted.
		return n.NodeClaim != nil && n.NodePool != "" && (n.drifted || n.consolidatable || n.repair.eligible), nil
	}
	return m.wants(n)
}

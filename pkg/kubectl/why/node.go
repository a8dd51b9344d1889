package why

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/capacitybuffer"
	"github.com/karpenter-go/karpenter/pkg/kubectl/catalog"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/state"
)

// conditionDisruptionBlocked is the NodeClaim condition the disruption
// controller writes (see pkg/controllers/disrupter).
const conditionDisruptionBlocked = "DisruptionBlocked"

// maxCheaperShown bounds the cheaper instance types listed with why they were out.
const maxCheaperShown = 5

// Node explains what the disruption passes would do with a node (named by
// its Node or NodeClaim name) and why its instance type was chosen.
func Node(ctx context.Context, snap *snapshot.Snapshot, name string) (string, error) {
	p, err := planner(ctx, snap)
	if err != nil {
		return "", err
	}
	var sn *state.StateNode
	for _, n := range p.Cluster.Nodes() {
		if n.Name() == name || (n.NodeClaim != nil && n.NodeClaim.Name == name) {
			sn = n
		}
	}
	if sn == nil {
		return "", fmt.Errorf("no node or nodeclaim %s in %s", name, snap.Source)
	}
	var b strings.Builder
	title := "node " + sn.Name()
	if sn.NodeClaim != nil && sn.NodeClaim.Name != sn.Name() {
		title += " (nodeclaim " + sn.NodeClaim.Name + ")"
	} else if sn.Node == nil {
		title = "nodeclaim " + sn.Name() + " (no node yet)"
	}
	labels := sn.Labels()
	fmt.Fprintf(&b, "%s: nodepool %s, %s, %s, %s\n", title, orNone(sn.NodePool()), orNone(labels[corev1.LabelInstanceTypeStable]),
		orNone(labels[corev1.LabelTopologyZone]), orNone(labels[v1.CapacityTypeLabelKey]))
	pods := sn.Pods
	np := findPool(p.Cluster.NodePools(), sn.NodePool())

	pl, err := p.Compute(ctx, 0)
	if err != nil {
		return "", err
	}
	b.WriteString("\nDisruption:\n")
	decided := false
	for _, d := range pl.Disruptions {
		for _, n := range d.Nodes {
			if n == sn.Name() {
				decided = true
				fmt.Fprintf(&b, "  candidate: the disruption passes would %s it (step %d, %s, reason %s): %s\n", d.Action, d.Step, d.Method, d.Reason, d.Explanation)
			}
		}
	}
	if !decided {
		blocked := false
		for _, x := range pl.Blocked {
			if x.Node == sn.Name() {
				blocked = true
				verb := "blocked"
				if !x.Blocking {
					verb = "not consolidated"
				}
				fmt.Fprintf(&b, "  not a candidate, %s (%s wants it, %s): %s\n", verb, x.Method, x.Code, x.Message)
			}
		}
		if !blocked {
			fmt.Fprintf(&b, "  not a candidate: %s\n", notWanted(sn, np, pods))
		}
	}
	if kept := p.Cluster.BufferPods(sn); len(kept) > 0 {
		fmt.Fprintf(&b, "  it keeps room for %s: disruption counts that room as taken, like pods of the node\n", bufferChunks(kept))
	}
	if sn.NodeClaim != nil {
		if c := sn.NodeClaim.StatusConditions().Get(conditionDisruptionBlocked); c != nil && c.IsTrue() {
			fmt.Fprintf(&b, "  the controller's last pass said (DisruptionBlocked, %s): %s\n", c.Reason, c.Message)
		}
	}
	b.WriteString("\nInstance type:\n")
	its, err := p.CloudProvider.GetInstanceTypes(ctx, np)
	if np == nil || err != nil {
		b.WriteString("  its nodepool's instance types are unknown\n")
		return b.String(), nil
	}
	instanceTypeChoice(&b, sn, np, its)
	return b.String(), nil
}

// bufferChunks names the CapacityBuffers whose chunks are kept on a node:
// "2 chunks of CapacityBuffer default/spare".
func bufferChunks(pods []*corev1.Pod) string {
	count := map[string]int{}
	var names []string
	for _, pod := range pods {
		if key, ok := capacitybuffer.Of(pod); ok {
			if count[key.String()] == 0 {
				names = append(names, key.String())
			}
			count[key.String()]++
		}
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%d chunk(s) of CapacityBuffer %s", count[n], n)
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func findPool(pools []*v1.NodePool, name string) *v1.NodePool {
	for _, np := range pools {
		if np.Name == name {
			return np
		}
	}
	return nil
}

// notWanted says why no disruption method considers the node at all.
func notWanted(sn *state.StateNode, np *v1.NodePool, pods []*corev1.Pod) string {
	switch {
	case sn.NodeClaim == nil:
		return "Karpenter does not manage it (no NodeClaim)"
	case np == nil:
		return fmt.Sprintf("its nodepool %q does not exist", sn.NodePool())
	case sn.Rebooting():
		c := sn.NodeClaim.StatusConditions().Get(v1.ConditionTypeRebooting)
		return fmt.Sprintf("it is being rebooted (Rebooting %s: %s); no disruption takes it until the reboot ends", c.Reason, c.Message)
	case !sn.Initialized():
		return "it has not finished initializing"
	}
	workload := 0
	for _, p := range pods {
		if !scheduling.OwnedByDaemonSet(p) && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			workload++
		}
	}
	d := np.Spec.Disruption
	if d.ConsolidateAfter.Duration == nil {
		return fmt.Sprintf("nodepool %s never consolidates (consolidateAfter: Never); it is not drifted", np.Name)
	}
	if !sn.NodeClaim.StatusConditions().IsTrue(v1.ConditionTypeConsolidatable) {
		return fmt.Sprintf("its NodeClaim is not Consolidatable yet: pods came or went within the last consolidateAfter (%s)", d.ConsolidateAfter.Duration)
	}
	if d.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty && workload > 0 {
		return fmt.Sprintf("nodepool %s only removes empty nodes (consolidationPolicy WhenEmpty) and it runs %d pod(s)", np.Name, workload)
	}
	return fmt.Sprintf("it runs %d pod(s) and is not drifted; consolidation found it no cheaper arrangement worth a change", workload)
}

type priced struct {
	it    *scheduling.InstanceType
	price float64
	why   string // "" when the type was allowed and big enough
}

// instanceTypeChoice compares the node's type with the pool's other types:
// the cheaper ones and why they were out (the NodeClaim's requirements, made
// from its pods, or its requests), and the next cheapest that would have done.
func instanceTypeChoice(b *strings.Builder, sn *state.StateNode, np *v1.NodePool, its []*scheduling.InstanceType) {
	labels := sn.Labels()
	chosen := labels[corev1.LabelInstanceTypeStable]
	zone, ct := labels[corev1.LabelTopologyZone], labels[v1.CapacityTypeLabelKey]
	var poolReqs []scheduling.Requirement
	for _, r := range np.Spec.Template.Spec.Requirements {
		poolReqs = append(poolReqs, scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	pool := scheduling.NewRequirements(poolReqs...)
	var claimReqs []scheduling.Requirement
	var requests corev1.ResourceList
	if sn.NodeClaim != nil {
		for _, r := range sn.NodeClaim.Spec.Requirements {
			if r.Key == corev1.LabelInstanceTypeStable {
				continue // the claim lists the types it allowed; judge each on the other keys
			}
			claimReqs = append(claimReqs, scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
		}
		requests = sn.NodeClaim.Spec.Resources.Requests
	}
	claim := scheduling.NewRequirements(claimReqs...)
	var list []priced
	var mine *priced
	for _, it := range its {
		if it.Requirements.Intersects(pool) != nil {
			continue
		}
		price := math.Inf(1)
		for _, o := range it.Offerings {
			if (zone == "" || o.Zone == zone) && (ct == "" || o.CapacityType == ct) && o.Price < price {
				price = o.Price
			}
		}
		if math.IsInf(price, 1) {
			continue
		}
		e := priced{it: it, price: price}
		if err := it.Requirements.Intersects(claim); err != nil {
			e.why = "ruled out by the NodeClaim's requirements (from its pods and pool): " + err.Error()
		} else if short, lack := shortfall(requests, it.Allocatable()); short > 0 {
			e.why = fmt.Sprintf("too small for the NodeClaim's requests {%s}: lacks %s", scheduling.FormatResources(requests), scheduling.FormatResources(lack))
		}
		list = append(list, e)
	}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].price != list[j].price {
			return list[i].price < list[j].price
		}
		return list[i].it.Name < list[j].it.Name
	})
	for i := range list {
		if list[i].it.Name == chosen {
			mine = &list[i]
		}
	}
	if mine == nil {
		fmt.Fprintf(b, "  %s is not among nodepool %s's instance types any more (in %s %s)\n", orNone(chosen), np.Name, orNone(zone), orNone(ct))
		return
	}
	var cheaperFit *priced
	for i := range list {
		if e := &list[i]; e.it.Name != chosen && e.price < mine.price && e.why == "" && cheaperFit == nil {
			cheaperFit = e
		}
	}
	if cheaperFit == nil {
		fmt.Fprintf(b, "  %s costs $%.4f/h (%s, %s); it is the cheapest of nodepool %s's types that fit the NodeClaim", chosen, mine.price, zone, ct, np.Name)
	} else {
		fmt.Fprintf(b, "  %s costs $%.4f/h (%s, %s); cheaper types fit the NodeClaim's requests now, from %s at $%.4f/h (the pods it was launched for needed more, offerings or prices changed, or the pods' constraints allowed only it); consolidation replaces it when that pays",
			chosen, mine.price, zone, ct, cheaperFit.it.Name, cheaperFit.price)
	}
	if price, ok := catalog.PriceOf(nodeOf(sn)); ok && math.Abs(price-mine.price) > 1e-9 {
		fmt.Fprintf(b, " (the catalog now prices it at $%.4f/h)", price)
	}
	b.WriteString(".\n")
	// The cheaper types nearest in price are the ones a reader compares with.
	var cheaper []*priced
	var next *priced
	for i := range list {
		e := &list[i]
		if e.it.Name == chosen {
			continue
		}
		if e.price <= mine.price && e.why != "" {
			cheaper = append(cheaper, e)
		}
		if e.price >= mine.price && e.why == "" && next == nil {
			next = e
		}
	}
	if len(cheaper) > maxCheaperShown {
		fmt.Fprintf(b, "  %d cheaper types are ruled out; the nearest in price:\n", len(cheaper))
		cheaper = cheaper[len(cheaper)-maxCheaperShown:]
	}
	for _, e := range cheaper {
		fmt.Fprintf(b, "  cheaper %s ($%.4f/h): %s\n", e.it.Name, e.price, e.why)
	}
	if next != nil {
		fmt.Fprintf(b, "  next cheapest that fits: %s at $%.4f/h (+$%.4f/h)\n", next.it.Name, next.price, next.price-mine.price)
	}
}

func nodeOf(sn *state.StateNode) *corev1.Node {
	if sn.Node != nil {
		return sn.Node
	}
	n := &corev1.Node{}
	n.Labels = sn.Labels()
	n.Spec.ProviderID = sn.ProviderID()
	return n
}

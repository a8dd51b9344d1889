package why

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Pod explains where Karpenter would put a pod, or why nowhere.
func Pod(ctx context.Context, snap *snapshot.Snapshot, namespace, name string) (string, error) {
	var pod *corev1.Pod
	for _, p := range snapshot.All[*corev1.Pod](snap) {
		if p.Namespace == namespace && p.Name == name {
			pod = p
		}
	}
	if pod == nil {
		return "", fmt.Errorf("pod %s/%s not found in %s", namespace, name, snap.Source)
	}
	key := namespace + "/" + name
	var b strings.Builder
	if pod.Spec.NodeName != "" {
		fmt.Fprintf(&b, "pod %s is bound to node %s: it is not pending (try: kubectl karpenter why node/%s)\n", key, pod.Spec.NodeName, pod.Spec.NodeName)
		return b.String(), nil
	}
	p, err := planner(ctx, snap)
	if err != nil {
		return "", err
	}
	in, res, err := p.Provision(ctx)
	if err != nil {
		return "", err
	}
	for _, e := range res.ExistingNodes {
		for _, q := range e.Pods {
			if q.Namespace == namespace && q.Name == name {
				kind := "node"
				if e.Node.InFlight {
					kind = "nodeclaim (launching)"
				}
				fmt.Fprintf(&b, "pod %s fits on existing %s %s: the kube-scheduler should bind it there; Karpenter launches nothing for it.\n", key, kind, e.Node.Name)
				return b.String(), nil
			}
		}
	}
	for _, c := range res.NewClaims {
		for _, q := range c.Pods {
			if q.Namespace == namespace && q.Name == name {
				fmt.Fprintf(&b, "pod %s is pending for want of capacity: Karpenter would launch a node of nodepool %s for it", key, c.NodePool.Name)
				if len(c.InstanceTypes) > 0 {
					fmt.Fprintf(&b, " (%s, $%.4f/h, with %d other pod(s))", c.InstanceTypes[0].Name, c.Price, len(c.Pods)-1)
				}
				b.WriteString(".\n")
				return b.String(), nil
			}
		}
	}
	for q, perr := range res.PodErrors {
		if q.Namespace != namespace || q.Name != name {
			continue
		}
		if scheduling.IsDRAError(perr) {
			fmt.Fprintf(&b, "pod %s would stay pending: it claims devices through Dynamic Resource Allocation (resource claims), "+
				"and Karpenter launches nothing for such pods while IGNORE_DRA_REQUESTS is true (the default).\n", key)
			fmt.Fprintf(&b, "  - %s\n", perr.Error())
			return b.String(), nil
		}
		fmt.Fprintf(&b, "pod %s would stay pending: no NodePool can launch a node for it and no existing node can take it.\n", key)
		reasons := []string{perr.Error()}
		if pe, ok := perr.(*scheduling.PodError); ok {
			reasons = pe.Reasons
		}
		for _, r := range reasons {
			fmt.Fprintf(&b, "  - %s\n", r)
		}
		closest(&b, in, pod)
		return b.String(), nil
	}
	if !isUnschedulable(pod) {
		fmt.Fprintf(&b, "pod %s is not pending for Karpenter: the kube-scheduler has not marked it Unschedulable (phase %s).\n", key, pod.Status.Phase)
		return b.String(), nil
	}
	fmt.Fprintf(&b, "pod %s is not provisioned for (it is terminating, finished, or owned by a DaemonSet or a node).\n", key)
	return b.String(), nil
}

func isUnschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// closest writes, per NodePool, the instance type whose allocatable comes
// closest to the pod's requests, and what it lacks, when none is big enough.
func closest(b *strings.Builder, in *scheduling.Input, pod *corev1.Pod) {
	req := scheduling.PodRequests(pod)
	for _, np := range in.NodePools {
		var best *scheduling.InstanceType
		bestShort, bestLack := math.Inf(1), corev1.ResourceList(nil)
		fits := false
		for _, it := range np.InstanceTypes {
			if it.Requirements.Intersects(np.Requirements) != nil {
				continue
			}
			short, lack := shortfall(req, it.Allocatable())
			if short == 0 {
				fits = true
				break
			}
			if short < bestShort {
				best, bestShort, bestLack = it, short, lack
			}
		}
		if fits || best == nil {
			continue
		}
		fmt.Fprintf(b, "  nodepool %s: no instance type is big enough; the closest is %s (allocatable %s), which lacks %s.\n",
			np.Name, best.Name, scheduling.FormatResources(best.Allocatable()), scheduling.FormatResources(bestLack))
	}
}

// shortfall sums, over the requested resources, the fraction of the request
// that allocatable misses, and lists the missing amounts.
func shortfall(req, alloc corev1.ResourceList) (float64, corev1.ResourceList) {
	total := 0.0
	lack := corev1.ResourceList{}
	names := make([]string, 0, len(req))
	for n := range req {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		want := req[corev1.ResourceName(n)]
		have, ok := alloc[corev1.ResourceName(n)]
		if !ok {
			have = resource.Quantity{}
		}
		if want.Cmp(have) <= 0 || want.IsZero() {
			continue
		}
		missing := want.DeepCopy()
		missing.Sub(have)
		lack[corev1.ResourceName(n)] = missing
		total += missing.AsApproximateFloat64() / want.AsApproximateFloat64()
	}
	return total, lack
}

package disruption_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func TestTmpWhole(t *testing.T) {
	bc := newBenchCluster(t, 100, workload{fullShare: 0.5})
	r := disruption.Run(bc.in)
	t.Logf("%s", r.Decision.Explanation)
	cand := map[string]bool{}
	for _, c := range r.Decision.Candidates {
		cand[c.Name] = true
	}
	in := *bc.in.Scheduling
	var moving []*corev1.Pod
	for _, n := range bc.in.Nodes {
		if cand[n.Name] {
			for _, p := range n.Existing.Pods {
				if len(p.OwnerReferences) == 0 {
					moving = append(moving, p)
				}
			}
			continue
		}
		in.ExistingNodes = append(in.ExistingNodes, n.Existing)
	}
	in.Pods = append(moving, in.Pods...)
	res := scheduling.Solve(&in)
	t.Logf("whole cluster: %d moving pods, %d errors, %d new claims", len(moving), len(res.PodErrors), len(res.NewClaims))
	for _, c := range res.NewClaims {
		t.Logf("claim %s price %.3f pods %d", c.Hostname, c.Price, len(c.Pods))
		for _, p := range c.Pods {
			t.Logf("  %s %v", p.Name, p.Spec.TopologySpreadConstraints)
		}
	}
}

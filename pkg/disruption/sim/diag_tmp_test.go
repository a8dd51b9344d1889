package sim

import (
	"context"
	"fmt"
	"sort"
	"testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/ec2bench"
)

func TestDiagFreshEC2(t *testing.T) {
	its, err := ec2bench.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Seed: 1, Policy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, InstanceTypes: its,
		WellKnownLabels: append(append([]string(nil), scheduling.DefaultWellKnownLabels...), awsv1.WellKnownLabels...)}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for s.step < s.cfg.Steps {
		if _, err := s.Step(); err != nil {
			t.Fatal(err)
		}
	}
	pods := s.livePods()
	in := s.solverInput(pods, false)
	in.Options.Repack = true
	b, _ := scheduling.LowerBound(in)
	fmt.Println("pods", len(pods), "bound", b.PricePerHour)
	for _, m := range b.Mix { fmt.Printf("  mix %s %s %.2f x $%.3f\n", m.NodePool, m.InstanceType, m.Count, m.PricePerHour) }
	tot := map[string][2]float64{}
	for _, p := range pods { k := "general"; if len(p.Spec.Tolerations) > 0 { k = "batch" }; v := tot[k]; v[0] += p.Spec.Containers[0].Resources.Requests.Cpu().AsApproximateFloat64(); v[1] += p.Spec.Containers[0].Resources.Requests.Memory().AsApproximateFloat64()/(1<<30); tot[k] = v }
	fmt.Println(tot)
	in.Options.Repack = false
	fmt.Println("no repack", scheduling.Solve(in).TotalPrice())
	in.Options.Repack = true
	res := scheduling.Solve(in)
	fmt.Println("repack", res.TotalPrice())
	var lines []string
	for _, c := range res.NewClaims {
		it, off := cheapestOffering(c)
		kinds := map[string]int{}
		for _, p := range c.Pods {
			kinds[p.Labels["app"]]++
		}
		lines = append(lines, fmt.Sprintf("%-5s %-14s %-10s %5.3f claimPrice %5.3f cpu %v mem %v pods %d %v ntypes %d", c.NodePool.Name, it.Name, off.CapacityType+"/"+off.Zone, off.Price, c.Price, c.Requests.Cpu(), c.Requests.Memory(), len(c.Pods), kinds, len(c.InstanceTypes)))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
}

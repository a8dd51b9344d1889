package ec2bench_test

import (
	"testing"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/ec2bench"
)

func TestCatalogIsTheProvidersViewOfEveryType(t *testing.T) {
	its := sharedCatalog(t)
	if len(its) != 1363 {
		t.Fatalf("%d instance types, want the facts file's 1,363", len(its))
	}
	var m5 *scheduling.InstanceType
	for _, it := range its {
		if it.Name == "m5.large" {
			m5 = it
		}
	}
	if m5 == nil {
		t.Fatal("no m5.large")
	}
	// 3 ENIs x (10 - 1) IPv4 addresses + 2.
	if got := m5.Capacity.Pods().Value(); got != 29 {
		t.Errorf("m5.large max pods %d, want 29 (ENI-limited)", got)
	}
	if got := m5.Capacity.Cpu().MilliValue(); got != 2000 {
		t.Errorf("m5.large cpu %dm, want 2000m", got)
	}
	if m5.Overhead.Cpu().IsZero() || m5.Overhead.Memory().IsZero() {
		t.Errorf("m5.large overhead %v: kube-reserved is missing", m5.Overhead)
	}
	zones := map[string]bool{}
	var onDemand, spot float64
	for _, o := range m5.Offerings {
		zones[o.Zone] = true
		switch o.CapacityType {
		case "on-demand":
			onDemand = o.Price
		case "spot":
			spot = o.Price
		}
	}
	if len(zones) != len(ec2bench.Zones) {
		t.Errorf("m5.large offered in %v, want %v", zones, ec2bench.Zones)
	}
	if onDemand != 0.096 {
		t.Errorf("m5.large on-demand $%v/h, want us-east-1's $0.096", onDemand)
	}
	if spot <= 0 || spot >= onDemand {
		t.Errorf("m5.large spot $%v/h, want below on-demand", spot)
	}
}

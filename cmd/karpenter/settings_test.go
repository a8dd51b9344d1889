package main

import (
	"strings"
	"testing"
)

// With upstream v1.15's chart environment (both gate settings as its chart
// renders them, some gates turned on) the controller starts, reports all 13
// gates, and warns about the one that is enabled but not implemented
// (DRAEFA; NodeRepair, NodeClassCEL and RebootForRepair are), and about
// nothing else of the gates.
func TestUpstreamChartGatesStartWithOneWarningEach(t *testing.T) {
	env := map[string]string{
		"CLUSTER_NAME":      "demo",
		"FEATURE_GATES":     "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,TerminateFirstDrift=false,TerminateFirstRepair=false,PodDeletionCostManagement=false",
		"AWS_FEATURE_GATES": "NodeClassCEL=true,DRANVIDIAGPU=false,DRAEFA=true,RebootForRepair=true",
	}
	opts, provider, err := parse([]string{"--cloud-provider=aws"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("upstream's chart settings refused: %v", err)
	}
	gates, warnings := settingsReport(opts, provider)
	if len(gates) != 13 {
		t.Errorf("%d gates reported, want 9 core and 4 AWS: %+v", len(gates), gates)
	}
	var gateWarnings []string
	for _, w := range warnings {
		if strings.HasPrefix(w, "feature gate ") {
			gateWarnings = append(gateWarnings, w)
		}
	}
	if len(gateWarnings) != 1 || !strings.Contains(gateWarnings[0], "DRAEFA is enabled (AWS_FEATURE_GATES) but not implemented yet") {
		t.Errorf("gate warnings %q", gateWarnings)
	}
}

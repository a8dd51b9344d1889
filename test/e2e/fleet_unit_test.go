package e2e_test

import "testing"

// TestFleetDeploymentsSplitThePods: the fleet's pods come in Deployments of the asked size,
// the last one holding the rest, and no pod is lost or added.
func TestFleetDeploymentsSplitThePods(t *testing.T) {
	deps := fleetDeployments(1001, 500)
	want := []int32{500, 500, 1}
	if len(deps) != len(want) {
		t.Fatalf("%d Deployments, want %d", len(deps), len(want))
	}
	names := map[string]bool{}
	for i, d := range deps {
		if *d.Spec.Replicas != want[i] {
			t.Errorf("Deployment %d has %d replicas, want %d", i, *d.Spec.Replicas, want[i])
		}
		if names[d.Name] {
			t.Errorf("two Deployments named %s", d.Name)
		}
		names[d.Name] = true
		if d.Spec.Selector.MatchLabels["app"] != d.Name {
			t.Errorf("Deployment %s selects %v: Deployments must not share pods", d.Name, d.Spec.Selector.MatchLabels)
		}
	}
	if deps := fleetDeployments(500, 500); len(deps) != 1 || *deps[0].Spec.Replicas != 500 {
		t.Errorf("500 pods in Deployments of 500: got %d Deployments", len(deps))
	}
}

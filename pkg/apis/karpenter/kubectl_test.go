package karpenter_test

import (
	"context"
	"strings"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// kubectl retries while kubectl fails: the apiserver publishes a new CRD's
// OpenAPI (used by explain) shortly after the CRD is established.
func kubectl(t *testing.T, args ...string) string {
	return environment(t).KubectlEventually(t, args...)
}

// TestKubectlExplainBudgets: `kubectl explain nodepool.spec.disruption.budgets`
// documents every budget field from the Go doc comments.
func TestKubectlExplainBudgets(t *testing.T) {
	out := kubectl(t, "explain", "nodepool.spec.disruption.budgets")
	for _, want := range []string{"karpenter.sh", "NodePool", "duration", "nodes", "reasons", "schedule", "cron expression", "most restrictive"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain output lacks %q:\n%s", want, out)
		}
	}
}

// TestPrinterColumns: `kubectl get nodepools` and `kubectl get nodeclaims`
// show the upstream columns.
func TestPrinterColumns(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	np := expectations.Manifest(t, baseNodePool, "")
	np.SetName("columns")
	nc := expectations.Manifest(t, baseNodeClaim, "")
	nc.SetName("columns")
	if err := e.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, np) })
	if err := e.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, nc) })
	for resource, want := range map[string][]string{
		"nodepools":  {"NAME", "NODECLASS", "NODES", "READY", "AGE"},
		"nodeclaims": {"NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"},
	} {
		header := strings.Fields(strings.SplitN(kubectl(t, "get", resource), "\n", 2)[0])
		if strings.Join(header, " ") != strings.Join(want, " ") {
			t.Errorf("kubectl get %s columns = %v, want %v", resource, header, want)
		}
	}
	wide := strings.Fields(strings.SplitN(kubectl(t, "get", "nodeclaims", "-o", "wide"), "\n", 2)[0])
	if got, want := strings.Join(wide, " "), "NAME TYPE CAPACITY ZONE NODE READY AGE IMAGEID ID NODEPOOL NODECLASS DRIFTED"; got != want {
		t.Errorf("kubectl get nodeclaims -o wide columns = %s, want %s", got, want)
	}
	// The karpenter category lists both kinds.
	if out := kubectl(t, "get", "karpenter"); !strings.Contains(out, "nodepool.karpenter.sh/columns") || !strings.Contains(out, "nodeclaim.karpenter.sh/columns") {
		t.Errorf("kubectl get karpenter:\n%s", out)
	}
}

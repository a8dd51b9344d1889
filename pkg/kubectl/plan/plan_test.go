package plan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
)

func compute(t testing.TB, s *snapshot.Snapshot) *plan.Plan {
	t.Helper()
	p, err := plan.PlanSnapshot(context.Background(), s, nil, nil, nil, nil, plan.Options{Now: plantest.Now})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPendingPodsBecomeNodeClaims(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	for i := range 6 {
		if err := s.Add(plantest.PendingPod(fmt.Sprintf("web-%d", i), "1")); err != nil {
			t.Fatal(err)
		}
	}
	p := compute(t, s)
	if len(p.Launches) == 0 {
		t.Fatalf("no launches: %+v", p)
	}
	pods := 0
	for _, l := range p.Launches {
		pods += len(l.Pods)
		if l.NodePool != "default" || l.InstanceType == "" || !strings.HasSuffix(l.InstanceType, "-amd64-linux") ||
			l.Zone == "" || l.CapacityType != v1.CapacityTypeOnDemand || l.PricePerHour <= 0 || l.For != "provisioning" {
			t.Errorf("launch %+v", l)
		}
	}
	if pods != 6 || len(p.Pending) != 0 {
		t.Errorf("%d pods placed, pending %v", pods, p.Pending)
	}
	if p.CostPerHourBefore != 0 || p.CostPerHourAfter <= 0 {
		t.Errorf("cost %v -> %v", p.CostPerHourBefore, p.CostPerHourAfter)
	}
	if len(p.Disruptions) != 0 {
		t.Errorf("disruptions right after a launch: %+v", p.Disruptions)
	}
}

func TestPodNoInstanceTypeFitsStaysPending(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	if err := s.Add(plantest.PendingPod("huge", "5000")); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Pending) != 1 || p.Pending[0].Pod != "default/huge" || !strings.Contains(strings.Join(p.Pending[0].Reasons, " "), "default") {
		t.Fatalf("pending = %+v", p.Pending)
	}
	if len(p.Launches) != 0 {
		t.Errorf("launches %+v", p.Launches)
	}
}

// Three empty nodes and a budget of one node: emptiness deletes one, and the
// budget blocks the two others, which the plan says.
func TestEmptyNodesAreDeletedWithinTheBudget(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	for i := range 3 {
		n, nc := plantest.Node(t, fmt.Sprintf("empty-%d", i), "c-2x-amd64-linux")
		if err := s.Add(n, nc); err != nil {
			t.Fatal(err)
		}
	}
	p := compute(t, s)
	var table strings.Builder
	if err := plan.Write(&table, p, "table"); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	for _, want := range []string{"Disrupt (1 steps)", "delete empty-", "budget: nodepool default", "DisruptionBudget", "Cost: $"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table does not say %q", want)
		}
	}
	if len(p.Disruptions) != 1 || p.Disruptions[0].Reason != string(v1.DisruptionReasonEmpty) || len(p.Disruptions[0].Nodes) != 1 ||
		p.Disruptions[0].Action != "delete" {
		t.Fatalf("disruptions = %+v", p.Disruptions)
	}
	if len(p.Budgets) == 0 || p.Budgets[0].NodePool != "default" || p.Budgets[0].Allowed != 0 {
		t.Errorf("budgets = %+v", p.Budgets)
	}
	blocked := 0
	for _, b := range p.Blocked {
		if b.Code == "DisruptionBudget" && b.Blocking {
			blocked++
		}
	}
	if blocked != 2 {
		t.Errorf("blocked = %+v", p.Blocked)
	}
	if p.CostPerHourAfter >= p.CostPerHourBefore || p.CostPerHourBefore <= 0 {
		t.Errorf("cost %v -> %v", p.CostPerHourBefore, p.CostPerHourAfter)
	}
}

// A big node with one small pod is replaced by a cheaper one (single-node
// consolidation), and the replacement is listed.
func TestUnderutilizedNodeIsReplacedByACheaperOne(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	n, nc := plantest.Node(t, "big", "c-16x-amd64-linux")
	if err := s.Add(n, nc, plantest.BoundPod("small", "big", "500m")); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Disruptions) != 1 {
		t.Fatalf("disruptions = %+v, blocked %+v", p.Disruptions, p.Blocked)
	}
	d := p.Disruptions[0]
	if d.Reason != string(v1.DisruptionReasonUnderutilized) || d.Action != "replace" || len(d.Replacements) != 1 ||
		d.Replacements[0].PricePerHour >= d.PricePerHourRemoved || d.Explanation == "" {
		t.Errorf("disruption = %+v", d)
	}
	if p.CostPerHourAfter >= p.CostPerHourBefore {
		t.Errorf("cost %v -> %v", p.CostPerHourBefore, p.CostPerHourAfter)
	}
}

func TestDoNotDisruptPodBlocksConsolidation(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	n, nc := plantest.Node(t, "big", "c-16x-amd64-linux")
	pod := plantest.BoundPod("precious", "big", "500m")
	pod.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	if err := s.Add(n, nc, pod); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Disruptions) != 0 || len(p.Blocked) != 1 || p.Blocked[0].Code != "DoNotDisrupt" || !strings.Contains(p.Blocked[0].Message, "precious") {
		t.Fatalf("disruptions %+v blocked %+v", p.Disruptions, p.Blocked)
	}
}

// plan -f old-provisioners/: the v1alpha5 Provisioner is converted to a v1
// NodePool (pointed at the cluster's KWOKNodeClass) and launches for the
// pending pods.
func TestMigrationManifestsArePlanned(t *testing.T) {
	ctx := context.Background()
	ms, notes, err := snapshot.ReadManifests(ctx, []string{"testdata/old-provisioners"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].ConvertedFrom == "" {
		t.Fatalf("manifests %+v", ms)
	}
	retarget, err := snapshot.Retarget(ms, "KWOKNodeClass/default")
	if err != nil || len(retarget) != 1 {
		t.Fatalf("retarget %v %v", retarget, err)
	}
	var applied []snapshot.Manifest
	for _, m := range ms {
		if _, ok := m.Object.(*v1.NodePool); ok {
			applied = append(applied, m)
		}
	}
	s := plantest.Base(t, "testdata/nodepool.yaml")
	// The migration replaces the default pool: --delete it.
	old := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	old.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("NodePool"))
	deleted := []snapshot.Manifest{{Object: old}}
	for i := range 3 {
		if err := s.Add(plantest.PendingPod(fmt.Sprintf("app-%d", i), "3")); err != nil {
			t.Fatal(err)
		}
	}
	p, err := plan.PlanSnapshot(ctx, s, applied, deleted, nil, append(notes, retarget...), plan.Options{Now: plantest.Now})
	if err != nil {
		t.Fatal(err)
	}
	legacy := 0
	for _, l := range p.Launches {
		if l.NodePool == "legacy" {
			legacy++
			if l.InstanceType != "c-4x-amd64-linux" && l.InstanceType != "m-4x-amd64-linux" {
				t.Errorf("legacy launch of %s", l.InstanceType)
			}
		}
	}
	if legacy == 0 || legacy != len(p.Launches) {
		t.Errorf("nothing launched by the converted pool: %+v", p.Launches)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "converted from v1alpha5 Provisioner legacy") {
		t.Errorf("notes %q", p.Notes)
	}
}

func TestInvalidManifestFailsNamingFileObjectAndField(t *testing.T) {
	_, _, err := snapshot.ReadManifests(context.Background(), []string{"testdata/bad"}, nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"testdata/bad/nodepool.yaml", "NodePool broken", "spec.template.spec.requirements"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestScaleAddsAndRemovesPods(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	// A deployment with no pods yet, scaled to 4.
	d := deployment("web", 0)
	if err := s.Add(d); err != nil {
		t.Fatal(err)
	}
	if err := s.Scale(snapshot.Scale{Namespace: "default", Name: "web", Replicas: 4}); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	pods := 0
	for _, l := range p.Launches {
		pods += len(l.Pods)
	}
	if pods != 4 {
		t.Fatalf("launches for %d pods, want 4: %+v", pods, p.Launches)
	}
	if err := s.Scale(snapshot.Scale{Namespace: "default", Name: "missing", Replicas: 1}); err == nil || !strings.Contains(err.Error(), "default/missing") {
		t.Errorf("err = %v", err)
	}
}

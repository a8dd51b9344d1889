package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

// TestRepackConsolidationReplacesNodesWithACheaperMix: on a catalog of three
// KWOK types (m-8x: 8 cpu, 32Gi, $0.68/h; c-8x: 8 cpu, 8Gi, $0.25/h; r-2x: 2
// cpu, 32Gi, $0.25/h), a NodePool first limited to family m runs two m-8x
// nodes, each with a cpu-heavy pod (6.5 cpu, 768Mi) and a memory-heavy one
// (500m, 26Gi). Once the limit is lifted no upstream move applies (neither
// node's pods fit one cheaper node, and all four fit no single node), and
// repack consolidation replaces both nodes with two c-8x and two r-2x ($1.00/h
// instead of $1.36/h): replacements launched first, the PDB of the cpu pods
// (one unavailable at a time) and the budget kept, nothing left pending.
func TestRepackConsolidationReplacesNodesWithACheaperMix(t *testing.T) {
	t.Parallel()
	catalog := filepath.Join(t.TempDir(), "instance-types.json")
	writeKWOKCatalog(t, catalog, []kwokType{{"m", 8, 32, 0.68}, {"c", 8, 8, 0.25}, {"r", 2, 32, 0.25}})
	e := startProvisioning(t, kwok.InstanceTypesFilePathEnv+"="+catalog)
	pool := kit.DefaultNodePool("default", "default", 16)
	pool.Spec.Template.Spec.Requirements[2].Values = []string{v1.CapacityTypeOnDemand}
	pool.Spec.Template.Spec.Requirements = append(pool.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
		Key: kwokv1alpha1.InstanceFamilyLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}})
	pool.Spec.Disruption = v1.Disruption{
		ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		Budgets:             []v1.Budget{{Nodes: "100%"}},
	}
	w := startInvariantWatcher(t, e, "default")
	e.apply(t, kit.DefaultNodeClass(0), pool,
		withGrace(kit.Deployment("default", "cpu", 2, "6500m", "768Mi", false), 2), maxUnavailablePDB("cpu", 1),
		withGrace(kit.Deployment("default", "mem", 2, "500m", "26Gi", false), 2))
	e.waitRunning(t, 4, 3*time.Minute)
	if got := nodeTypes(t, e); got != "m-8x-amd64-linux,m-8x-amd64-linux" {
		t.Fatalf("before: nodes %s, want two m-8x", got)
	}

	e.updateNodePool(t, "default", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = np.Spec.Template.Spec.Requirements[:len(np.Spec.Template.Spec.Requirements)-1]
	})
	want := "c-8x-amd64-linux,c-8x-amd64-linux,r-2x-amd64-linux,r-2x-amd64-linux"
	var got string
	if err := poll(e.ctx, 5*time.Minute, func() (bool, error) {
		c, err := kit.Count(e.ctx, e.Client, "default")
		if err != nil {
			return false, err
		}
		got = nodeTypes(t, e)
		return got == want && c.Running == 4 && c.Pods == 4 && c.Nodes == c.NodeClaimsAll, nil
	}); err != nil {
		t.Fatalf("nodes %s, want %s: %v; karpenter log %s", got, want, err, e.karpenter.LogPath)
	}
	if n := commandsByMethod(t, e.karpenter.LogPath)["repack_consolidation"]; n != 1 {
		t.Errorf("repack consolidation commands: %d, want 1 (%v)", n, commandsByMethod(t, e.karpenter.LogPath))
	}
	w.Assert(t)
}

// nodeTypes lists the instance types of the default pool's live nodes, sorted.
func nodeTypes(t *testing.T, e *provisioningEnv) string {
	var out []string
	for _, n := range e.nodesOf(t, "default") {
		if n.DeletionTimestamp == nil {
			out = append(out, n.Labels[corev1.LabelInstanceTypeStable])
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

type kwokType struct {
	family     string
	cpu, memGi int
	price      float64
}

// writeKWOKCatalog writes a KWOK instance type catalog (kwok's
// InstanceTypeOptions, the format of pkg/providers/kwok/instance_types.json):
// each type amd64/linux, offered on-demand in test-zone-a at its price.
func writeKWOKCatalog(t *testing.T, path string, types []kwokType) {
	t.Helper()
	var out []kwok.InstanceTypeOptions
	for _, it := range types {
		out = append(out, kwok.InstanceTypeOptions{
			Name: fmt.Sprintf("%s-%dx-amd64-linux", it.family, it.cpu),
			Offerings: []kwok.OfferingOptions{{Price: it.price, Available: true, Requirements: []corev1.NodeSelectorRequirement{
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-a"}},
			}}},
			Architecture: "amd64", OperatingSystems: []corev1.OSName{corev1.Linux},
			Resources: corev1.ResourceList{
				corev1.ResourceCPU:              *resource.NewQuantity(int64(it.cpu), resource.DecimalSI),
				corev1.ResourceMemory:           *resource.NewQuantity(int64(it.memGi)<<30, resource.BinarySI),
				corev1.ResourcePods:             resource.MustParse("110"),
				corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
			},
		})
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

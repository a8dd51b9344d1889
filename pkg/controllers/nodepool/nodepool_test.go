package nodepool_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodepool"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func TestCounterSumsCapacityOfTheNodePoolsNodeClaims(t *testing.T) {
	ctx, clk := setup(t)
	np := nodePool("default", "default")
	ExpectApplied(ctx, t, e.Client, np, nodePool("other", "default"))
	a := nodeClaim("a", "default", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("32")})
	b := nodeClaim("b", "default", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi"), "example.com/gpu": resource.MustParse("1")})
	pending := nodeClaim("c", "default", nil)
	foreign := nodeClaim("d", "other", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")})
	ExpectApplied(ctx, t, e.Client, a, b, pending, foreign)

	counter := nodepool.NewCounter(e.Client, clk)
	ExpectReconciled(ctx, t, counter, np)
	got := ExpectExists(ctx, t, e.Client, np).Status.Resources
	want := map[corev1.ResourceName]string{corev1.ResourceCPU: "2500m", corev1.ResourceMemory: "5Gi", corev1.ResourcePods: "32", "example.com/gpu": "1", "nodes": "3", corev1.ResourceEphemeralStorage: "0"}
	for name, q := range want {
		g := got[name]
		if g.Cmp(resource.MustParse(q)) != 0 {
			t.Errorf("status.resources[%s] = %s, want %s", name, g.String(), q)
		}
	}
	if n := ExpectExists(ctx, t, e.Client, np).Status.Nodes; n == nil || *n != 3 {
		t.Errorf("status.nodes = %v, want 3", n)
	}

	ExpectFinalizersRemoved(ctx, t, e.Client, a)
	ExpectDeleted(ctx, t, e.Client, a, b)
	ExpectReconciled(ctx, t, counter, np)
	if n := ExpectExists(ctx, t, e.Client, np).Status.Nodes; n == nil || *n != 1 {
		t.Errorf("status.nodes after deletions = %v, want 1", n)
	}
	got = ExpectExists(ctx, t, e.Client, np).Status.Resources
	if n := got["nodes"]; n.Value() != 1 {
		t.Fatalf("nodes after deletions: %s", n.String())
	}
	if _, ok := got["example.com/gpu"]; ok {
		t.Fatalf("a resource no NodeClaim has any more must be dropped: %v", got)
	}
	if c := got[corev1.ResourceCPU]; !c.IsZero() {
		t.Fatalf("cpu after deletions: %s", c.String())
	}
}

func TestReadinessMirrorsTheNodeClass(t *testing.T) {
	ctx, clk := setup(t)
	catalog, _ := kwok.LoadInstanceTypes("")
	cp := kwok.New(ctx, e.Client, clk, catalog)
	readiness := nodepool.NewReadiness(e.Client, cp, clk)
	validation := nodepool.NewValidation(e.Client, clk)
	np := nodePool("default", "default")
	ExpectApplied(ctx, t, e.Client, np)
	ExpectReconciled(ctx, t, validation, np)

	ExpectReconciled(ctx, t, readiness, np)
	np = ExpectExists(ctx, t, e.Client, np)
	if c := np.StatusConditions().Get(v1.ConditionTypeNodeClassReady); !c.IsFalse() || c.Reason != "NodeClassNotFound" {
		t.Fatalf("missing NodeClass: %+v", c)
	}
	if np.StatusConditions().Root().IsTrue() {
		t.Fatal("Ready with a missing NodeClass")
	}

	ExpectApplied(ctx, t, e.Client, kwokNodeClass("default", false))
	ExpectReconciled(ctx, t, readiness, np)
	np = ExpectExists(ctx, t, e.Client, np)
	if c := np.StatusConditions().Get(v1.ConditionTypeNodeClassReady); !c.IsFalse() || c.Reason != "NodeClassNotReady" || c.Message != "set not ready by a test" {
		t.Fatalf("not ready NodeClass: %+v", c)
	}

	ExpectApplied(ctx, t, e.Client, kwokNodeClass("default", true))
	clk.Step(time.Minute)
	ExpectReconciled(ctx, t, readiness, np)
	np = ExpectExists(ctx, t, e.Client, np)
	c := np.StatusConditions().Get(v1.ConditionTypeNodeClassReady)
	if !c.IsTrue() || !np.StatusConditions().Root().IsTrue() {
		t.Fatalf("NodeClassReady %+v Ready %+v", c, np.StatusConditions().Root())
	}
	if !c.LastTransitionTime.Time.Equal(clk.Now().Truncate(time.Second)) {
		t.Fatalf("transition not stamped with the controller clock: %v vs %v", c.LastTransitionTime, clk.Now())
	}

	// A NodeClass kind the provider does not support.
	aws := nodePool("aws", "default")
	aws.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	ExpectApplied(ctx, t, e.Client, aws)
	ExpectReconciled(ctx, t, readiness, aws)
	if c := ExpectExists(ctx, t, e.Client, aws).StatusConditions().Get(v1.ConditionTypeNodeClassReady); !c.IsFalse() || !strings.Contains(c.Message, "not supported") {
		t.Fatalf("unsupported kind: %+v", c)
	}
}

func TestValidationCondition(t *testing.T) {
	ctx, clk := setup(t)
	validation := nodepool.NewValidation(e.Client, clk)
	good := nodePool("good", "default")
	// The schema, as upstream's, does not check requirement values; runtime
	// validation does.
	bad := nodePool("bad", "default")
	bad.Spec.Template.Spec.Requirements = append(bad.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: "example.com/x", Operator: corev1.NodeSelectorOpIn, Values: []string{"not a label value!"}})
	ExpectApplied(ctx, t, e.Client, good, bad)
	ExpectReconciled(ctx, t, validation, good)
	ExpectReconciled(ctx, t, validation, bad)
	if c := ExpectExists(ctx, t, e.Client, good).StatusConditions().Get(v1.ConditionTypeValidationSucceeded); !c.IsTrue() {
		t.Fatalf("good: %+v", c)
	}
	bad = ExpectExists(ctx, t, e.Client, bad)
	if c := bad.StatusConditions().Get(v1.ConditionTypeValidationSucceeded); !c.IsFalse() || !strings.Contains(c.Message, `spec.template.spec.requirements[1]: invalid value "not a label value!"`) {
		t.Fatalf("bad: %+v", c)
	}
	if bad.StatusConditions().Root().IsTrue() {
		t.Fatal("an invalid NodePool must not be Ready")
	}
}

// A budget schedule that passes the CRD's rules but that the disruption
// controller cannot evaluate (a backwards range) or that never fires is
// reported on the NodePool, naming the budget's field, instead of silently
// blocking disruption while the pool looks healthy.
func TestValidationReportsBudgetsTheDisruptionControllerCannotUse(t *testing.T) {
	ctx, clk := setup(t)
	validation := nodepool.NewValidation(e.Client, clk)
	for _, tc := range []struct{ name, schedule, want string }{
		{"backwards", "5-1 * * * *", `spec.disruption.budgets[1]: schedule: schedule "5-1 * * * *": minute: range "5-1" runs backwards`},
		{"never", "0 0 31 2 *", `spec.disruption.budgets[1]: schedule "0 0 31 2 *" never fires`},
	} {
		np := nodePool(tc.name, "default")
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		np.Spec.Disruption.Budgets = []v1.Budget{
			{Nodes: "10%"},
			{Nodes: "0", Schedule: ptr.To(tc.schedule), Duration: &metav1.Duration{Duration: time.Hour}},
		}
		ExpectApplied(ctx, t, e.Client, np) // the CRD accepts it
		ExpectReconciled(ctx, t, validation, np)
		np = ExpectExists(ctx, t, e.Client, np)
		c := np.StatusConditions().Get(v1.ConditionTypeValidationSucceeded)
		if !c.IsFalse() || c.Reason != "InvalidDisruptionBudget" || !strings.Contains(c.Message, tc.want) ||
			!strings.Contains(c.Message, "no node of this NodePool is disrupted voluntarily until it is fixed") {
			t.Fatalf("%s: ValidationSucceeded = %+v, want False/InvalidDisruptionBudget naming %q", tc.name, c, tc.want)
		}
		if np.StatusConditions().Root().IsTrue() {
			t.Fatalf("%s: Ready with a budget the disruption controller cannot use", tc.name)
		}
		// Fixing the budget clears the condition.
		np.Spec.Disruption.Budgets[1].Schedule = ptr.To("0 9 * * mon-fri")
		ExpectApplied(ctx, t, e.Client, np)
		ExpectReconciled(ctx, t, validation, np)
		if c := ExpectExists(ctx, t, e.Client, np).StatusConditions().Get(v1.ConditionTypeValidationSucceeded); !c.IsTrue() {
			t.Fatalf("%s: after the fix: %+v", tc.name, c)
		}
	}
}

func TestRuntimeValidate(t *testing.T) {
	for name, mutate := range map[string]func(*v1.NodePool){
		"restricted label":     func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["kubernetes.io/hostname"] = "x" },
		"restricted domain":    func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["karpenter.sh/custom"] = "x" },
		"bad label value":      func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["team"] = "a b" },
		"nodepool requirement": func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements[0].Key = v1.NodePoolLabelKey },
		"In without values":    func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements[0].Values = nil },
		"Gt with a word": func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Operator, np.Spec.Template.Spec.Requirements[0].Values = corev1.NodeSelectorOpGt, []string{"many"}
		},
		"unknown operator":       func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements[0].Operator = "Near" },
		"bad taint effect":       func(np *v1.NodePool) { np.Spec.Template.Spec.Taints[0].Effect = "Sometimes" },
		"duplicate taint":        func(np *v1.NodePool) { np.Spec.Template.Spec.StartupTaints = np.Spec.Template.Spec.Taints[:1] },
		"missing nodeClassRef":   func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef = nil },
		"minValues above values": func(np *v1.NodePool) { two := 2; np.Spec.Template.Spec.Requirements[0].MinValues = &two },
		"unknown capacity type": func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"preemptible"}})
		},
		"tenancy host only": func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceTenancy, Operator: corev1.NodeSelectorOpIn, Values: []string{"host"}})
		},
		"minValues above the known values": func(np *v1.NodePool) {
			two := 2
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceTenancy, Operator: corev1.NodeSelectorOpIn, Values: []string{"host", "dedicated"}, MinValues: &two})
		},
	} {
		np := nodePool("x", "default")
		if err := nodepool.RuntimeValidate(np); err != nil {
			t.Fatalf("base NodePool invalid: %v", err)
		}
		mutate(np)
		if err := nodepool.RuntimeValidate(np); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	np := nodePool("x", "default")
	np.Spec.Template.ObjectMeta.Labels[corev1.LabelTopologyZone] = "test-zone-a"
	np.Spec.Template.ObjectMeta.Labels["node.kubernetes.io/role"] = "worker"
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}})
	if err := nodepool.RuntimeValidate(np); err != nil {
		t.Errorf("well-known labels and exception domains must be allowed: %v", err)
	}
	// Some known values are enough; unknown ones next to them are ignored.
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceTenancy, Operator: corev1.NodeSelectorOpIn, Values: []string{"host", "dedicated"}},
		v1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceTenancy, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"host"}})
	if err := nodepool.RuntimeValidate(np); err != nil {
		t.Errorf("a known tenancy next to an unknown one must be allowed: %v", err)
	}
	np.Spec.Template.Spec.Requirements[len(np.Spec.Template.Spec.Requirements)-2].Values = []string{"host"}
	if err := nodepool.RuntimeValidate(np); err == nil || !strings.Contains(err.Error(), "karpenter.k8s.aws/instance-tenancy In [host]") {
		t.Errorf("tenancy In [host]: %v, want an error naming it", err)
	}
}

func TestHashIsTheProvisionersAndIgnoresRequirementsAndTaintOrder(t *testing.T) {
	a := nodePool("a", "default")
	b := nodePool("b", "default")
	b.Spec.Template.Spec.Taints = []corev1.Taint{a.Spec.Template.Spec.Taints[1], a.Spec.Template.Spec.Taints[0]}
	b.Spec.Template.Spec.Requirements = nil
	if a.Hash() != b.Hash() {
		t.Fatal("taint order and requirements must not change the hash")
	}
	b.Spec.Template.ObjectMeta.Labels["team"] = "b"
	if a.Hash() == b.Hash() {
		t.Fatal("a label change must change the hash")
	}
	c := nodePool("c", "other")
	if a.Hash() == c.Hash() {
		t.Fatal("a NodeClass change must change the hash")
	}
}

func TestHashControllerAnnotatesNodePoolAndRestampsOldClaims(t *testing.T) {
	ctx, _ := setup(t)
	np := nodePool("default", "default")
	ExpectApplied(ctx, t, e.Client, np)
	old := nodeClaim("old", "default", nil)
	old.Annotations = map[string]string{v1.NodePoolHashAnnotationKey: "123", v1.NodePoolHashVersionAnnotationKey: "v2"}
	current := nodeClaim("current", "default", nil)
	current.Annotations = map[string]string{v1.NodePoolHashAnnotationKey: "stale-but-same-version", v1.NodePoolHashVersionAnnotationKey: v1.NodePoolHashVersion}
	ExpectApplied(ctx, t, e.Client, old, current)

	ExpectReconciled(ctx, t, nodepool.NewHashController(e.Client), np)
	np = ExpectExists(ctx, t, e.Client, np)
	want := np.Hash()
	if np.Annotations[v1.NodePoolHashAnnotationKey] != want || np.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion {
		t.Fatalf("nodepool annotations %v", np.Annotations)
	}
	if got := ExpectExists(ctx, t, e.Client, old).Annotations; got[v1.NodePoolHashAnnotationKey] != want || got[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion {
		t.Fatalf("claim of another hash version not re-stamped: %v", got)
	}
	// Same version, different hash: that is drift, and must be left for the drift check to see.
	if got := ExpectExists(ctx, t, e.Client, current).Annotations[v1.NodePoolHashAnnotationKey]; got != "stale-but-same-version" {
		t.Fatalf("drifted claim re-stamped: %s", got)
	}
}

// A NodePool whose cpu limit is 0 is valid and Ready (a zero limit pauses a
// pool), but its ValidationSucceeded condition says that it launches nothing;
// raising the limit clears the note.
func TestValidationSaysZeroLimitAdmitsNoNode(t *testing.T) {
	ctx, clk := setup(t)
	validation := nodepool.NewValidation(e.Client, clk)
	np := nodePool("paused", "default")
	np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("0")}
	ExpectApplied(ctx, t, e.Client, np)
	ExpectReconciled(ctx, t, validation, np)
	c := ExpectExists(ctx, t, e.Client, np).StatusConditions().Get(v1.ConditionTypeValidationSucceeded)
	want := "limits allow no node (limits.cpu is 0): this NodePool launches nothing until the limit is raised"
	if !c.IsTrue() || c.Reason != nodepool.ReasonLimitsAdmitNoNode || c.Message != want {
		t.Fatalf("ValidationSucceeded %+v, want True/%s/%q", c, nodepool.ReasonLimitsAdmitNoNode, want)
	}
	np = ExpectExists(ctx, t, e.Client, np)
	np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("4")}
	ExpectApplied(ctx, t, e.Client, np)
	ExpectReconciled(ctx, t, validation, np)
	if c := ExpectExists(ctx, t, e.Client, np).StatusConditions().Get(v1.ConditionTypeValidationSucceeded); !c.IsTrue() || c.Reason == nodepool.ReasonLimitsAdmitNoNode || c.Message != "" {
		t.Fatalf("after raising the limit: %+v", c)
	}
}

// A static NodePool while the StaticCapacity gate is off: the NodePool stays
// Ready and ValidationSucceeded's reason and message say what it does; the
// Balanced policy is valid like the others.
func TestValidationSaysWhatStaticAndBalancedPoolsDo(t *testing.T) {
	ctx, clk := setup(t)
	validation := nodepool.NewValidation(e.Client, clk)
	static := nodePool("static", "default")
	static.Spec.Replicas = ptr.To[int64](3)
	balanced := nodePool("balanced", "default")
	balanced.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
	ExpectApplied(ctx, t, e.Client, static, balanced)
	for _, tc := range []struct {
		np      *v1.NodePool
		reason  string
		message string
	}{
		{static, nodepool.ReasonStaticCapacityDisabled, "spec.replicas is 3: the StaticCapacity feature gate is off: a static NodePool launches no node"},
		{balanced, "ValidationSucceeded", ""},
	} {
		ExpectReconciled(ctx, t, validation, tc.np)
		c := ExpectExists(ctx, t, e.Client, tc.np).StatusConditions().Get(v1.ConditionTypeValidationSucceeded)
		if !c.IsTrue() || c.Reason != tc.reason || !strings.HasPrefix(c.Message, tc.message) {
			t.Errorf("%s: ValidationSucceeded %+v, want True/%s/%q...", tc.np.Name, c, tc.reason, tc.message)
		}
	}
}

// The readiness controller records the NodeClass generation it saw; when the
// NodeClass changes, a NodeRegistrationHealthy=False left by earlier launches
// goes back to Unknown (the change may be the fix), as upstream's does.
func TestReadinessResetsRegistrationHealthWhenTheNodeClassChanges(t *testing.T) {
	ctx, clk := setup(t)
	catalog, _ := kwok.LoadInstanceTypes("")
	cp := kwok.New(ctx, e.Client, clk, catalog)
	readiness := nodepool.NewReadiness(e.Client, cp, clk)
	nc := kwokNodeClass("changing", true)
	np := nodePool("unhealthy", "changing")
	ExpectApplied(ctx, t, e.Client, nc, np)
	ExpectReconciled(ctx, t, readiness, np)
	nc = ExpectExists(ctx, t, e.Client, nc)
	np = ExpectExists(ctx, t, e.Client, np)
	if np.Status.NodeClassObservedGeneration != nc.Generation || nc.Generation == 0 {
		t.Fatalf("nodeClassObservedGeneration %d, NodeClass generation %d", np.Status.NodeClassObservedGeneration, nc.Generation)
	}
	conditions := np.StatusConditions()
	conditions.SetFalse(v1.ConditionTypeNodeRegistrationHealthy, "RegistrationFailed", "set by a test")
	ExpectStatusUpdated(ctx, t, e.Client, np)
	ExpectReconciled(ctx, t, readiness, np)
	if c := ExpectExists(ctx, t, e.Client, np).StatusConditions().Get(v1.ConditionTypeNodeRegistrationHealthy); !c.IsFalse() {
		t.Fatalf("unchanged NodeClass: NodeRegistrationHealthy %+v, want it left False", c)
	}

	nc.Spec.NodeRegistrationDelay = metav1.Duration{Duration: 45 * time.Second}
	ExpectApplied(ctx, t, e.Client, nc)
	nc = ExpectExists(ctx, t, e.Client, nc)
	ExpectReconciled(ctx, t, readiness, np)
	np = ExpectExists(ctx, t, e.Client, np)
	if c := np.StatusConditions().Get(v1.ConditionTypeNodeRegistrationHealthy); c == nil || !c.IsUnknown() || c.Reason != "NodeClassChanged" {
		t.Fatalf("changed NodeClass: NodeRegistrationHealthy %+v, want Unknown/NodeClassChanged", c)
	}
	if np.Status.NodeClassObservedGeneration != nc.Generation {
		t.Fatalf("nodeClassObservedGeneration %d, want %d", np.Status.NodeClassObservedGeneration, nc.Generation)
	}
}

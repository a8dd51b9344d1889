package candidacy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/candidacy"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodepool"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// legacyTaint is how the seeds retire an old pool: taint its template so
// that every node drifts and is replaced by one that fits elsewhere.
var legacyTaint = corev1.Taint{Key: "karpenter.sh/legacy", Value: "true", Effect: corev1.TaintEffectNoSchedule}

func expectNotDrifted(t *testing.T, nc *v1.NodeClaim, why string) {
	t.Helper()
	if c := cond(nc, v1.ConditionTypeDrifted); c != nil {
		t.Fatalf("%s: Drifted = %+v, want no condition", why, c)
	}
}

func expectDrifted(t *testing.T, nc *v1.NodeClaim, reason string, msgParts ...string) {
	t.Helper()
	c := cond(nc, v1.ConditionTypeDrifted)
	if !c.IsTrue() || c.Reason != reason {
		t.Fatalf("Drifted = %+v, want True/%s", c, reason)
	}
	for _, p := range msgParts {
		if !strings.Contains(c.Message, p) {
			t.Errorf("Drifted message %q does not mention %q", c.Message, p)
		}
	}
}

// TestDriftByLegacyTaint: adding karpenter.sh/legacy=true:NoSchedule to a
// NodePool's template drifts its nodes (a migration path of the seeds);
// taking it off again clears the condition.
func TestDriftByLegacyTaint(t *testing.T) {
	f := setup(t)
	np := nodePool("old", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "old-node", true)
	requeue, nc := f.reconcile(t, nc)
	expectNotDrifted(t, nc, "fresh NodeClaim")
	if requeue > candidacy.DriftRecheckInterval {
		t.Fatalf("RequeueAfter = %v, want at most the drift re-check %v", requeue, candidacy.DriftRecheckInterval)
	}

	update(f, t, np, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, legacyTaint)
	})
	_, nc = f.reconcile(t, nc)
	expectDrifted(t, nc, candidacy.ReasonNodePoolDrifted, `NodePool "old"`, "taints")

	update(f, t, np, func(np *v1.NodePool) { np.Spec.Template.Spec.Taints = nil })
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "taint removed again")
}

// TestDriftByTemplateChanges: every hashed template field drifts.
func TestDriftByTemplateChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*v1.NodePool)
	}{
		{"label value", func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["team"] = "b" }},
		{"label added", func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["tier"] = "web" }},
		{"annotation", func(np *v1.NodePool) {
			np.Spec.Template.ObjectMeta.Annotations = map[string]string{"example.com/a": "b"}
		}},
		{"startup taint", func(np *v1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/booting", Effect: corev1.TaintEffectNoSchedule}}
		}},
		{"nodeClassRef", func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" }},
		{"expireAfter", func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("24h") }},
		{"terminationGracePeriod", func(np *v1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			np := nodePool("default", "30s")
			ExpectApplied(f.ctx, t, e.Client, np)
			nc := launched(f, t, np, "node-a", true)
			_, nc = f.reconcile(t, nc)
			expectNotDrifted(t, nc, "before the change")
			update(f, t, np, tc.mutate)
			_, nc = f.reconcile(t, nc)
			expectDrifted(t, nc, candidacy.ReasonNodePoolDrifted, `NodePool "default"`)
		})
	}
}

// TestNoDriftOnDisruptionWeightOrLimits: budgets, consolidation settings,
// weight and limits do not describe the nodes, so changing them replaces
// nothing.
func TestNoDriftOnDisruptionWeightOrLimits(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true)
	before := ExpectExists(f.ctx, t, e.Client, np.DeepCopy()).Hash()
	update(f, t, np, func(np *v1.NodePool) {
		np.Spec.Weight = ptr.To[int32](50)
		np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("100"), "nodes": resource.MustParse("10")}
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}, {Nodes: "20%", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
		np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
	})
	stored := ExpectExists(f.ctx, t, e.Client, np.DeepCopy())
	if after := stored.Hash(); after != before {
		t.Fatalf("NodePool hash changed from %s to %s on a disruption/weight/limits change", before, after)
	}
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "after changing budgets, consolidation, weight and limits")
}

// TestDriftByRequirementRemoval: a node whose capacity type the NodePool no
// longer allows is drifted, with the label and requirement named.
func TestDriftByRequirementRemoval(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true) // on-demand
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "on-demand allowed")

	update(f, t, np, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[1].Values = []string{v1.CapacityTypeSpot}
	})
	if got := ExpectExists(f.ctx, t, e.Client, np.DeepCopy()); got.Hash() != nc.Annotations[v1.NodePoolHashAnnotationKey] {
		t.Fatal("requirements must not be part of the hash: the drift below has to come from the requirements check")
	}
	_, nc = f.reconcile(t, nc)
	expectDrifted(t, nc, candidacy.ReasonRequirementsDrifted, v1.CapacityTypeLabelKey+"="+v1.CapacityTypeOnDemand, "In [spot]")

	// Allowing it again clears the drift.
	update(f, t, np, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[1].Values = []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}
	})
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "on-demand allowed again")
}

// TestDriftByNewRequirementOnMissingLabel: a new positive requirement on a
// label the node does not carry drifts it; a negative one does not.
func TestDriftByNewRequirementOnMissingLabel(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true)
	update(f, t, np, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: "example.com/gpu", Operator: corev1.NodeSelectorOpDoesNotExist})
	})
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "DoesNotExist on an absent label")
	update(f, t, np, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}})
	})
	_, nc = f.reconcile(t, nc)
	expectDrifted(t, nc, candidacy.ReasonRequirementsDrifted, corev1.LabelArchStable, "arm64")
}

// TestDriftByCloudProvider: the provider's reason becomes the condition's;
// a reason the API would reject as a condition reason is kept in the message.
func TestDriftByCloudProvider(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true)

	f.cloud.reason = "ImageDrifted"
	_, nc = f.reconcile(t, nc)
	expectDrifted(t, nc, "ImageDrifted", "ImageDrifted", "kwok")

	f.cloud.reason = "image changed: ami-1 -> ami-2"
	_, nc = f.reconcile(t, nc)
	expectDrifted(t, nc, candidacy.ReasonCloudProviderDrifted, "image changed: ami-1 -> ami-2")

	f.cloud.reason = ""
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "provider no longer reports drift")

	// A provider error is returned (retried with backoff), not taken for "no drift".
	f.cloud.err = errors.New("throttled")
	if err := ExpectReconcileFailed(f.ctx, t, f.ctrl, nc); !strings.Contains(err.Error(), "throttled") {
		t.Fatalf("error %v does not carry the provider's", err)
	}
}

// TestDriftByInstanceTypeNotFound: once the NodeClaim is an hour old, an
// instance type gone from the provider's list, or one left without an
// offering in the NodeClaim's zone and capacity type, drifts it; an offering
// that is only unavailable does not.
func TestDriftByInstanceTypeNotFound(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true) // c-2x-amd64-linux, on-demand, test-zone-a
	catalog, err := f.cloud.GetInstanceTypes(f.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	var others []*scheduling.InstanceType
	var own *scheduling.InstanceType
	for _, it := range catalog {
		if it.Name == "c-2x-amd64-linux" {
			own = it
		} else {
			others = append(others, it)
		}
	}
	if own == nil {
		t.Fatal("catalog lacks c-2x-amd64-linux")
	}

	f.cloud.instanceTypes = others
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "a NodeClaim younger than an hour is not checked")

	// The API server stamped creation with its own (real) clock, a second or
	// so after the fake clock's start.
	f.clk.Step(candidacy.InstanceTypeDriftMinAge + 2*time.Second)
	_, nc = f.reconcile(t, nc)
	expectDrifted(t, nc, candidacy.ReasonInstanceTypeNotFound, "c-2x-amd64-linux", "no longer offered")

	// The type is back, but without its on-demand offering in test-zone-a.
	reduced := *own
	reduced.Offerings = nil
	for _, o := range own.Offerings {
		if o.Zone == "test-zone-a" && o.CapacityType == v1.CapacityTypeOnDemand {
			continue
		}
		reduced.Offerings = append(reduced.Offerings, o)
	}
	f.cloud.instanceTypes = append([]*scheduling.InstanceType{&reduced}, others...)
	_, nc = f.reconcile(t, nc)
	expectDrifted(t, nc, candidacy.ReasonInstanceTypeNotFound, "no on-demand offering in zone test-zone-a")

	// Unavailable is not gone.
	unavailable := *own
	unavailable.Offerings = append([]scheduling.Offering(nil), own.Offerings...)
	for i := range unavailable.Offerings {
		unavailable.Offerings[i].Available = false
	}
	f.cloud.instanceTypes = append([]*scheduling.InstanceType{&unavailable}, others...)
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "offerings only unavailable")
}

// TestStaticDriftWinsOverProvider: checks run cheapest first; the reason is
// the first that applies.
func TestStaticDriftWinsOverProvider(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true)
	f.cloud.reason = "ImageDrifted"
	update(f, t, np, func(np *v1.NodePool) { np.Spec.Template.Spec.Taints = []corev1.Taint{legacyTaint} })
	_, nc = f.reconcile(t, nc)
	expectDrifted(t, nc, candidacy.ReasonNodePoolDrifted)
}

// TestNotLaunchedIsNeverDrifted: before the instance exists nothing can be
// stale; even a mismatching hash and a drifting provider leave it alone.
func TestNotLaunchedIsNeverDrifted(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", false)
	nc.StatusConditions().SetUnknown(v1.ConditionTypeLaunched, "Launching", "launching")
	ExpectStatusUpdated(f.ctx, t, e.Client, nc)
	f.cloud.reason = "ImageDrifted"
	update(f, t, np, func(np *v1.NodePool) { np.Spec.Template.Spec.Taints = []corev1.Taint{legacyTaint} })
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "not launched")
}

// TestForeignHashVersionIsRestampedNotDrifted: a NodeClaim carrying upstream
// Karpenter's hash version "v3" and a hash computed by upstream's algorithm
// is not drifted; the NodePool hash controller re-stamps it with ours, after
// which template changes drift it as usual.
func TestForeignHashVersionIsRestampedNotDrifted(t *testing.T) {
	if v1.NodePoolHashVersion == "v3" {
		t.Fatal(`NodePoolHashVersion must differ from upstream's "v3": our hashes are computed differently`)
	}
	f := setup(t)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "from-upstream", true)
	nc.Annotations[v1.NodePoolHashAnnotationKey] = "6112256470433597548"
	nc.Annotations[v1.NodePoolHashVersionAnnotationKey] = "v3"
	ExpectApplied(f.ctx, t, e.Client, nc)

	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "upstream v3 hash")

	ExpectReconciled(f.ctx, t, nodepool.NewHashController(e.Client), np)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	stored := ExpectExists(f.ctx, t, e.Client, np.DeepCopy())
	if nc.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion ||
		nc.Annotations[v1.NodePoolHashAnnotationKey] != stored.Hash() {
		t.Fatalf("NodeClaim not re-stamped: %v", nc.Annotations)
	}
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "re-stamped")

	update(f, t, np, func(np *v1.NodePool) { np.Spec.Template.Spec.Taints = []corev1.Taint{legacyTaint} })
	_, nc = f.reconcile(t, nc)
	expectDrifted(t, nc, candidacy.ReasonNodePoolDrifted)
}

// TestNodeClaimWithoutHashIsNotStaticallyDrifted: a NodeClaim someone wrote
// by hand (no hash annotations) is judged by requirements and provider only.
func TestNodeClaimWithoutHashIsNotStaticallyDrifted(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "30s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "hand-made", true)
	nc.Annotations = nil
	ExpectApplied(f.ctx, t, e.Client, nc)
	update(f, t, np, func(np *v1.NodePool) { np.Spec.Template.Spec.Taints = []corev1.Taint{legacyTaint} })
	_, nc = f.reconcile(t, nc)
	expectNotDrifted(t, nc, "no hash annotations")
}

// TestUnderAManager: with the controller (and the NodePool hash controller)
// running in a manager, tainting the NodePool drifts its NodeClaim and the
// NodeClaim becomes consolidatable on its own, with no test code calling
// Reconcile: the NodePool watch and the requeues bring it back.
func TestUnderAManager(t *testing.T) {
	f := setup(t)
	np := nodePool("default", "0s")
	ExpectApplied(f.ctx, t, e.Client, np)
	nc := launched(f, t, np, "node-a", true)

	mgr, err := manager.New(e.Config, manager.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := candidacy.NewController(mgr.GetClient(), f.cloud, f.clk).Register(mgr); err != nil {
		t.Fatal(err)
	}
	if err := nodepool.NewHashController(mgr.GetClient()).Register(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	Eventually(t, 20*time.Second, func() error {
		if c := cond(ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()), v1.ConditionTypeConsolidatable); !c.IsTrue() {
			return fmt.Errorf("Consolidatable = %+v", c)
		}
		return nil
	})
	update(f, t, np, func(np *v1.NodePool) { np.Spec.Template.Spec.Taints = []corev1.Taint{legacyTaint} })
	Eventually(t, 20*time.Second, func() error {
		c := cond(ExpectExists(f.ctx, t, e.Client, nc.DeepCopy()), v1.ConditionTypeDrifted)
		if !c.IsTrue() || c.Reason != candidacy.ReasonNodePoolDrifted {
			return fmt.Errorf("Drifted = %+v", c)
		}
		return nil
	})
}

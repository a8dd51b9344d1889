package provisioning_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/provisioning"
	"github.com/karpenter-go/karpenter/pkg/events"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// draPod is a pending pod that claims a device through Dynamic Resource
// Allocation.
func draPod(name, cpu string) *corev1.Pod {
	return fixtures.Pod(name,
		fixtures.WithTolerations(corev1.Toleration{Key: "example.com/dedicated", Operator: corev1.TolerationOpExists}),
		fixtures.WithRequests("cpu", cpu),
		fixtures.WithResourceClaim("gpu", "gpu-template"),
		fixtures.Unschedulable())
}

// With IGNORE_DRA_REQUESTS=true (the default) a pending pod with a resource
// claim launches nothing: it gets one FailedScheduling event saying why and
// which setting decides it, per event window, while the pod beside it is
// provisioned for.
func TestPodWithResourceClaimLaunchesNothing(t *testing.T) {
	f := newFixture(t)
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"))
	dra, plain := draPod("dra", "1"), pendingPod("plain", "1")
	ExpectApplied(f.ctx, t, testEnv.Client, dra, plain)
	if stored := ExpectExists(f.ctx, t, testEnv.Client, dra); len(stored.Spec.ResourceClaims) != 1 {
		t.Fatalf("the API server dropped the pod's resource claims: %+v", stored.Spec)
	}
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 {
		t.Fatalf("want 1 nodeclaim, for the plain pod only, got %d", len(res.NodeClaims))
	}
	if pods := res.Solve.NewClaims[0].Pods; len(pods) != 1 || pods[0].Name != "plain" {
		t.Fatalf("the nodeclaim holds %v, want the plain pod only", pods)
	}
	if len(res.Solve.PodErrors) != 1 {
		t.Fatalf("pod errors %v, want the pod with the claim's", res.Solve.PodErrors)
	}
	for p, err := range res.Solve.PodErrors {
		if p.Name != "dra" || !scheduling.IsDRAError(err) {
			t.Fatalf("pod %s: %v, want the Dynamic Resource Allocation refusal", p.Name, err)
		}
	}
	want := "Warning " + provisioning.EventFailedScheduling + " Failed to schedule pod, " + scheduling.DRAErrorMessage
	got := f.failedScheduling()
	if len(got) != 1 || got[0] != want {
		t.Fatalf("FailedScheduling events %q, want exactly %q", got, want)
	}
	for _, words := range []string{"Dynamic Resource Allocation", "not yet supported by Karpenter", "IGNORE_DRA_REQUESTS"} {
		if !strings.Contains(got[0], words) {
			t.Errorf("event %q does not say %q", got[0], words)
		}
	}

	// The next batches do not launch for it either, and the event is not
	// repeated within the window.
	res = f.schedule(t)
	if len(res.NodeClaims) != 0 || len(res.Solve.NewClaims) != 0 {
		t.Fatalf("a later batch launched for the pod with the claim: %+v", res.Solve.NewClaims)
	}
	if got := f.failedScheduling(); len(got) != 0 {
		t.Fatalf("the event was repeated within the window: %q", got)
	}
	f.clock.Step(events.EventDedupeWindow + time.Second)
	f.schedule(t)
	if got := f.failedScheduling(); len(got) != 1 || got[0] != want {
		t.Fatalf("after the window, events %q, want %q once", got, want)
	}
	ncs := &v1.NodeClaimList{}
	if err := testEnv.Client.List(f.ctx, ncs); err != nil {
		t.Fatal(err)
	}
	if len(ncs.Items) != 1 {
		t.Fatalf("%d nodeclaims in the API, want the plain pod's one", len(ncs.Items))
	}
}

// IGNORE_DRA_REQUESTS=false provisions for the pod by its other requests (its
// claims are not simulated).
func TestPodWithResourceClaimWhenSimulating(t *testing.T) {
	f := newFixture(t)
	f.provisioner = provisioning.NewProvisioner(testEnv.Client, &instanceTypes{its: fake.InstanceTypes(20)}, f.cluster, f.recorder, f.clock,
		provisioning.Options{SyncTimeout: 2 * time.Second, SimulateDRARequests: true})
	ExpectApplied(f.ctx, t, testEnv.Client, nodeClass("default", true), nodePool("default", "default"), draPod("dra", "1"))
	res := f.schedule(t)
	if len(res.NodeClaims) != 1 || len(res.Solve.PodErrors) != 0 {
		t.Fatalf("nodeclaims %d, errors %v: want the pod provisioned for", len(res.NodeClaims), res.Solve.PodErrors)
	}
	if got := f.failedScheduling(); len(got) != 0 {
		t.Fatalf("FailedScheduling events %q", got)
	}
}

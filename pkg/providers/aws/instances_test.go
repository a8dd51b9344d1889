package aws_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func launchSetup(t *testing.T) (context.Context, *aws.CloudProvider, *launchtest.Env, *awsv1.EC2NodeClass) {
	t.Helper()
	ctx := context.Background()
	ExpectCleanedUp(ctx, t, e.Client, &v1.NodePoolList{}, &awsv1.EC2NodeClassList{})
	env := launchtest.New(t)
	nc := env.NodeClass(t, "default")
	nc.UID = ""
	nc.Status = awsv1.EC2NodeClassStatus{}
	ExpectApplied(ctx, t, e.Client, nc)
	env.Resolve(t, nc) // with the API server's UID
	ExpectStatusUpdated(ctx, t, e.Client, nc)
	cp := aws.New(e.Client, env.InstanceTypes, aws.WithInstances(env.Instances, env.ClusterName))
	return ctx, cp, env, nc
}

// Create returns the NodeClaim as launched; Get and List see it; Delete
// terminates it and then answers NodeClaimNotFound.
func TestCreateGetListDelete(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	claim := launchtest.NodeClaim("default-abcde", nc, []string{scheduling.CapacityTypeSpot, scheduling.CapacityTypeOnDemand}, "m5.large", "m5.xlarge")
	claim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: mustParse("2")}
	got, err := cp.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Status.ProviderID, "aws:///us-west-2") || got.Status.ImageID == "" {
		t.Errorf("status %+v", got.Status)
	}
	for k, want := range map[string]string{
		corev1.LabelInstanceTypeStable: "m5.xlarge", // m5.large allocates 1.93 CPUs
		v1.CapacityTypeLabelKey:        "spot",
		corev1.LabelArchStable:         "amd64",
		corev1.LabelOSStable:           "linux",
		awsv1.LabelInstanceFamily:      "m5",
		awsv1.LabelInstanceCPU:         "4",
		v1.NodePoolLabelKey:            "default",
		awsv1.LabelNodeClass:           "default",
	} {
		if got.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], want)
		}
	}
	if got.Labels[corev1.LabelTopologyZone] == "" || got.Labels[awsv1.LabelTopologyZoneID] == "" {
		t.Errorf("zone labels missing: %v", got.Labels)
	}
	if got.Annotations[awsv1.AnnotationEC2NodeClassHash] != nc.Hash() || got.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != awsv1.EC2NodeClassHashVersion ||
		got.Annotations[awsv1.AnnotationInstanceProfile] != nc.Status.InstanceProfile {
		t.Errorf("annotations %v", got.Annotations)
	}
	if cpu := got.Status.Capacity[corev1.ResourceCPU]; cpu.String() != "4" {
		t.Errorf("capacity cpu %s", cpu.String())
	}
	if _, ok := got.Status.Allocatable[corev1.ResourceMemory]; !ok {
		t.Error("no allocatable memory")
	}

	again, err := cp.Get(ctx, got.Status.ProviderID)
	if got.Name != claim.Name {
		t.Errorf("created NodeClaim named %q, want %q", got.Name, claim.Name)
	}
	if err != nil || again.Status.ProviderID != got.Status.ProviderID || again.Labels[corev1.LabelInstanceTypeStable] != "m5.xlarge" {
		t.Fatalf("Get: %+v, %v", again, err)
	}
	list, err := cp.List(ctx)
	if err != nil || len(list) != 1 || list[0].Status.ProviderID != got.Status.ProviderID {
		t.Fatalf("List: %v, %v", list, err)
	}

	claim.Status.ProviderID = got.Status.ProviderID
	if err := cp.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	// Terminated at the emulator's next look.
	if err := cp.Delete(ctx, claim); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("second Delete: %v, want NodeClaimNotFound", err)
	}
	if _, err := cp.Get(ctx, got.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after termination: %v, want NodeClaimNotFound", err)
	}
	if list, err := cp.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("List after termination: %d, %v", len(list), err)
	}
	if len(env.Emulator.Instances()) != 1 {
		t.Errorf("%d instances launched, want 1", len(env.Emulator.Instances()))
	}
}

// Requests no instance type fits, or capacity that ran out, are
// InsufficientCapacityErrors; a NodeClaim whose class is missing is
// NodeClassNotReady.
func TestCreateErrors(t *testing.T) {
	ctx, cp, env, nc := launchSetup(t)
	big := launchtest.NodeClaim("big", nc, []string{"on-demand"}, "m5.large")
	big.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: mustParse("64")}
	if _, err := cp.Create(ctx, big); !cloudprovider.IsInsufficientCapacityError(err) || !strings.Contains(err.Error(), "fits the requests") {
		t.Errorf("error %v, want an InsufficientCapacityError about the requests", err)
	}
	for _, z := range env.Emulator.Options().Zones {
		env.Emulator.SetInsufficientCapacity("on-demand", "m5.large", z, true)
	}
	if _, err := cp.Create(ctx, launchtest.NodeClaim("ice", nc, []string{"on-demand"}, "m5.large")); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("error %v, want an InsufficientCapacityError", err)
	}
	missing := launchtest.NodeClaim("missing", nc, []string{"on-demand"})
	missing.Spec.NodeClassRef.Name = "missing"
	if _, err := cp.Create(ctx, missing); !cloudprovider.IsNodeClassNotReadyError(err) || !strings.Contains(err.Error(), `EC2NodeClass "missing" of NodeClaim "missing" not found`) {
		t.Errorf("error %v, want NodeClassNotReady naming the class", err)
	}
}

func mustParse(s string) resource.Quantity { return resource.MustParse(s) }

package instanceprofile_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instanceprofile"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
)

const (
	cluster = "karpenter-demo"
	role    = "KarpenterNodeRole-karpenter-demo"
)

func setup(t *testing.T) (*awsemulator.Emulator, *instanceprofile.Provider, *iam.Client, *clocktesting.FakeClock) {
	t.Helper()
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	clk := clocktesting.NewFakeClock(time.Now())
	api := iam.NewFromConfig(awstest.Config(e))
	return e, instanceprofile.NewProvider(api, "us-west-2", cluster, clk), api, clk
}

func nodeClass(name, uid string) *v1.EC2NodeClass {
	return &v1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)},
		Spec:       v1.EC2NodeClassSpec{Role: role, Tags: map[string]string{"team": "a"}},
	}
}

func profiles(e *awsemulator.Emulator) []awsemulator.InstanceProfile { return e.InstanceProfiles() }

func TestCreateTagAndReuse(t *testing.T) {
	e, p, _, _ := setup(t)
	ctx := context.Background()
	nc := nodeClass("default", "uid-1")
	name, err := p.Ensure(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^karpenter-demo_\d+$`).MatchString(name) {
		t.Errorf("name %q, want <cluster>_<hash>", name)
	}
	ps := profiles(e)
	if len(ps) != 1 {
		t.Fatalf("%d profiles", len(ps))
	}
	ip := ps[0]
	if ip.Name != name || ip.Path != "/karpenter/us-west-2/karpenter-demo/uid-1/" || len(ip.Roles) != 1 || ip.Roles[0] != role {
		t.Errorf("profile %+v", ip)
	}
	want := map[string]string{
		"team": "a", "kubernetes.io/cluster/karpenter-demo": "owned", "eks:eks-cluster-name": cluster,
		"karpenter.k8s.aws/ec2nodeclass": "default", "topology.kubernetes.io/region": "us-west-2",
	}
	for k, v := range want {
		if ip.Tags[k] != v {
			t.Errorf("tag %s = %q, want %q", k, ip.Tags[k], v)
		}
	}
	// With the name in status the profile is reused from the cache: no IAM call.
	nc.Status.InstanceProfile = name
	before := e.Calls("iam", "GetRole") + e.Calls("iam", "GetInstanceProfile") + e.Calls("iam", "CreateInstanceProfile")
	again, err := p.Ensure(ctx, nc)
	if err != nil || again != name || e.Calls("iam", "GetRole")+e.Calls("iam", "GetInstanceProfile")+e.Calls("iam", "CreateInstanceProfile") != before {
		t.Errorf("reuse: %q %v", again, err)
	}
	// A second class gets its own profile; names differ even for equal class names.
	other, err := p.Ensure(ctx, nodeClass("default", "uid-2"))
	if err != nil || other == name || len(profiles(e)) != 2 {
		t.Errorf("second class: %q %v, %d profiles", other, err, len(profiles(e)))
	}
}

// A status write that never landed must not leak a second profile: the one
// under the class's path is found and reused, and new tags are added to it.
func TestLostStatusReusesThePathsProfile(t *testing.T) {
	e, _, api, clk := setup(t)
	ctx := context.Background()
	nc := nodeClass("default", "uid-1")
	name, err := instanceprofile.NewProvider(api, "us-west-2", cluster, clk).Ensure(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh provider (a restarted controller), no status.
	nc.Spec.Tags["cost-center"] = "42"
	again, err := instanceprofile.NewProvider(api, "us-west-2", cluster, clk).Ensure(ctx, nc)
	if err != nil || again != name {
		t.Fatalf("got %q %v, want the existing %q", again, err, name)
	}
	if n := e.Calls("iam", "CreateInstanceProfile"); n != 1 {
		t.Errorf("%d CreateInstanceProfile calls, want 1", n)
	}
	if ps := profiles(e); len(ps) != 1 || ps[0].Tags["cost-center"] != "42" {
		t.Errorf("profiles %+v", ps)
	}
}

func TestMissingRoleCreatesNothing(t *testing.T) {
	e, p, _, _ := setup(t)
	nc := nodeClass("default", "uid-1")
	nc.Spec.Role = "NoSuchRole"
	_, err := p.Ensure(context.Background(), nc)
	var missing *instanceprofile.RoleNotFoundError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), `spec.role "NoSuchRole": the IAM role does not exist`) {
		t.Errorf("err = %v", err)
	}
	if len(profiles(e)) != 0 || e.Calls("iam", "CreateInstanceProfile") != 0 {
		t.Error("no profile may be created for a missing role")
	}
	// Roles given with a path use their name.
	e.AddRole("PathRole")
	nc.Spec.Role = "nodes/PathRole"
	if _, err := p.Ensure(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	if ps := profiles(e); len(ps) != 1 || ps[0].Roles[0] != "PathRole" {
		t.Errorf("profiles %+v", ps)
	}
}

func TestRetriesAndDeleteAll(t *testing.T) {
	e, p, api, _ := setup(t)
	ctx := context.Background()
	e.InjectFault(awsemulator.Fault{Service: "iam", Action: "CreateInstanceProfile", Code: "Throttling", Count: 1})
	e.InjectFault(awsemulator.Fault{Service: "iam", Action: "AddRoleToInstanceProfile", Code: "ServiceUnavailable", Count: 1})
	nc := nodeClass("default", "uid-1")
	name, err := p.Ensure(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	// A stray profile under the same path (a lost status write of an older
	// controller) is deleted with the class too.
	if _, err := api.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("stray"), Path: aws.String(p.Path(nc))}); err != nil {
		t.Fatal(err)
	}
	other := nodeClass("other", "uid-2")
	if _, err := p.Ensure(ctx, other); err != nil {
		t.Fatal(err)
	}
	nc.Status.InstanceProfile = name
	if err := p.DeleteAll(ctx, nc); err != nil {
		t.Fatal(err)
	}
	ps := profiles(e)
	if len(ps) != 1 || ps[0].Path != p.Path(other) {
		t.Errorf("only the other class's profile may remain: %+v", ps)
	}
	if err := p.DeleteAll(ctx, nc); err != nil {
		t.Errorf("deleting again is a no-op: %v", err)
	}
}

func TestUnmanagedProfileIsChecked(t *testing.T) {
	_, p, api, _ := setup(t)
	ctx := context.Background()
	_, err := p.Get(ctx, "MyProfile")
	var missing *instanceprofile.NotFoundError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), `spec.instanceProfile "MyProfile": the instance profile does not exist`) {
		t.Errorf("err = %v", err)
	}
	if _, err := api.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("MyProfile")}); err != nil {
		t.Fatal(err)
	}
	if ip, err := p.Get(ctx, "MyProfile"); err != nil || aws.ToString(ip.InstanceProfileName) != "MyProfile" {
		t.Errorf("existing: %v", err)
	}
}

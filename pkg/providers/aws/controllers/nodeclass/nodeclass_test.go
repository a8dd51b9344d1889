package nodeclass_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instanceprofile"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/settings"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

func TestResolvesStatusAsUpstream(t *testing.T) {
	f := setup(t)
	nc := newNodeClass("default")
	ExpectApplied(f.ctx, t, e.Client, nc)
	res := ExpectReconciled(f.ctx, t, f.c, nc)
	if res.RequeueAfter != time.Minute {
		t.Errorf("requeue after %v, want the 1m refresh interval", res.RequeueAfter)
	}
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		t.Error("the termination finalizer must be added")
	}
	for _, typ := range []string{v1.ConditionTypeSubnetsReady, v1.ConditionTypeSecurityGroupsReady, v1.ConditionTypeAMIsReady, v1.ConditionTypeInstanceProfileReady, v1.ConditionTypeValidationSucceeded, status.ConditionReady} {
		expectCondition(t, nc, typ, metav1.ConditionTrue, typ, "")
	}

	// Subnets: the four private ones with zone and zone id.
	zones := map[string]string{}
	for _, s := range nc.Status.Subnets {
		zones[s.Zone] = s.ZoneID
		if !strings.HasPrefix(s.ID, "subnet-") {
			t.Errorf("subnet %+v", s)
		}
	}
	if len(nc.Status.Subnets) != 4 || zones["us-west-2a"] != "usw2-az1" || zones["us-west-2d"] != "usw2-az4" {
		t.Errorf("subnets %+v", nc.Status.Subnets)
	}
	if len(nc.Status.SecurityGroups) != 1 || nc.Status.SecurityGroups[0].Name != "eks-cluster-sg-"+cluster || !strings.HasPrefix(nc.Status.SecurityGroups[0].ID, "sg-") {
		t.Errorf("security groups %+v", nc.Status.SecurityGroups)
	}
	// AMIs: five AL2023 1.34 variants with upstream's requirements.
	if len(nc.Status.AMIs) != 5 {
		t.Fatalf("amis %+v", nc.Status.AMIs)
	}
	var std *v1.AMI
	for i, a := range nc.Status.AMIs {
		if strings.Contains(a.Name, "x86_64-standard-1.34-v20251115") {
			std = &nc.Status.AMIs[i]
		}
	}
	if std == nil {
		t.Fatalf("no x86_64 standard AMI in %+v", nc.Status.AMIs)
	}
	want := []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: v1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: v1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}
	if len(std.Requirements) != 3 {
		t.Fatalf("requirements %+v", std.Requirements)
	}
	for i := range want {
		got := std.Requirements[i]
		if got.Key != want[i].Key || got.Operator != want[i].Operator || strings.Join(got.Values, ",") != strings.Join(want[i].Values, ",") {
			t.Errorf("requirement %d = %+v, want %+v", i, got, want[i])
		}
	}
	// The instance profile Karpenter created for spec.role.
	profiles := f.aws.InstanceProfiles()
	if len(profiles) != 1 || nc.Status.InstanceProfile != profiles[0].Name || profiles[0].Roles[0] != role ||
		profiles[0].Path != "/karpenter/us-west-2/"+cluster+"/"+string(nc.UID)+"/" {
		t.Errorf("status.instanceProfile %q, profiles %+v", nc.Status.InstanceProfile, profiles)
	}
	// Validation dry-ran the three launch calls.
	for _, a := range []string{"CreateFleet", "CreateLaunchTemplate", "RunInstances"} {
		if f.aws.Calls("ec2", a) != 1 {
			t.Errorf("%s called %d times, want one dry run", a, f.aws.Calls("ec2", a))
		}
	}

	// A second reconcile in the same minute changes nothing and asks AWS nothing new.
	before := f.aws.AllCalls()
	rv := nc.ResourceVersion
	nc = f.reconcile(t, nc)
	if nc.ResourceVersion != rv {
		t.Error("an unchanged status must not be written again")
	}
	if after := f.aws.AllCalls(); len(after) != len(before) || sum(after) != sum(before) {
		t.Errorf("AWS calls within the caches' lifetime: before %v, after %v", before, after)
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestTermsThatMatchNothing(t *testing.T) {
	f := setup(t)
	nc := newNodeClass("typos")
	nc.Spec.SubnetSelectorTerms = []v1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "karpenter-dmeo"}}, {ID: "subnet-0123456789abcdef0"}}
	nc.Spec.SecurityGroupSelectorTerms = []v1.SecurityGroupSelectorTerm{{Name: "eks-cluster-sg"}}
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeSubnetsReady, metav1.ConditionFalse, nodeclass.ReasonSubnetsNotFound,
		`subnetSelectorTerms[0] matched no subnet: tags {"karpenter.sh/discovery":"karpenter-dmeo"}; subnetSelectorTerms[1] matched no subnet: id "subnet-0123456789abcdef0"`)
	expectCondition(t, nc, v1.ConditionTypeSecurityGroupsReady, metav1.ConditionFalse, nodeclass.ReasonSecurityGroupsNotFound,
		`securityGroupSelectorTerms[0] matched no security group: name "eks-cluster-sg"`)
	expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, nodeclass.ReasonDependenciesNotReady, "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution")
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionFalse, nodeclass.ReasonSubnetsNotFound, "subnetSelectorTerms[0]")
	if nc.Status.Subnets != nil || nc.Status.SecurityGroups != nil {
		t.Errorf("nothing resolved, nothing in status: %+v", nc.Status)
	}
	if f.aws.Calls("ec2", "CreateFleet") != 0 {
		t.Error("no dry run while dependencies are not ready")
	}

	// Fixing the tag: the matching term makes the condition True, the stale id is still named.
	nc.Spec.SubnetSelectorTerms[0].Tags["karpenter.sh/discovery"] = cluster
	nc.Spec.SecurityGroupSelectorTerms = []v1.SecurityGroupSelectorTerm{{Name: "eks-cluster-sg-" + cluster}}
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeSubnetsReady, metav1.ConditionTrue, v1.ConditionTypeSubnetsReady, `subnetSelectorTerms[1] matched no subnet: id "subnet-0123456789abcdef0"`)
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
	if len(nc.Status.Subnets) != 4 {
		t.Errorf("subnets %+v", nc.Status.Subnets)
	}
}

func TestAMIProblemsNameTheTerm(t *testing.T) {
	f := setup(t)
	cases := []struct {
		name   string
		terms  []v1.AMISelectorTerm
		family *string
		reason string
		msg    string
	}{
		{"unknown-version", []v1.AMISelectorTerm{{Alias: "al2023@v19990101"}}, nil, nodeclass.ReasonAMINotFound,
			`amiSelectorTerms[0] matched no AMI: alias "al2023@v19990101" (no SSM parameter of version "v19990101" exists for Kubernetes 1.34`},
		{"al2-on-1-34", []v1.AMISelectorTerm{{Alias: "al2@latest"}}, nil, "AMIAliasUnsupported",
			`amiSelectorTerms[0].alias: "al2@latest": AL2 AMIs are not published for Kubernetes 1.33 and later (the cluster runs 1.34); use al2023 or bottlerocket`},
		{"no-such-image", []v1.AMISelectorTerm{{Tags: map[string]string{"Name": "golden"}}, {Name: "golden-*", Owner: "self"}}, ptr.To(v1.AMIFamilyAL2023), nodeclass.ReasonAMINotFound,
			`amiSelectorTerms[0] matched no AMI: tags {"Name":"golden"}; amiSelectorTerms[1] matched no AMI: name "golden-*", owner "self"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nc := newNodeClass(c.name)
			nc.Spec.AMISelectorTerms, nc.Spec.AMIFamily = c.terms, c.family
			ExpectApplied(f.ctx, t, e.Client, nc)
			nc = f.reconcile(t, nc)
			expectCondition(t, nc, v1.ConditionTypeAMIsReady, metav1.ConditionFalse, c.reason, c.msg)
			expectCondition(t, nc, status.ConditionReady, metav1.ConditionFalse, c.reason, c.msg)
			if nc.Status.AMIs != nil {
				t.Errorf("amis %+v", nc.Status.AMIs)
			}
			// The rest still resolves.
			expectCondition(t, nc, v1.ConditionTypeSubnetsReady, metav1.ConditionTrue, v1.ConditionTypeSubnetsReady, "")
		})
	}
}

func TestRoleAndInstanceProfileProblems(t *testing.T) {
	f := setup(t)
	nc := newNodeClass("no-role")
	nc.Spec.Role = "NoSuchRole"
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeInstanceProfileReady, metav1.ConditionFalse, nodeclass.ReasonRoleNotFound, `spec.role "NoSuchRole": the IAM role does not exist`)
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionFalse, nodeclass.ReasonRoleNotFound, "spec.role")
	if len(f.aws.InstanceProfiles()) != 0 {
		t.Error("no profile for a role that does not exist")
	}
	// The role appears: the next reconcile creates the profile.
	f.aws.AddRole("NoSuchRole")
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, v1.ConditionTypeInstanceProfileReady, metav1.ConditionTrue, v1.ConditionTypeInstanceProfileReady, "")
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")

	// spec.instanceProfile is checked, not managed.
	un := newNodeClass("unmanaged")
	un.Spec.Role, un.Spec.InstanceProfile = "", ptr.To("MyProfile")
	ExpectApplied(f.ctx, t, e.Client, un)
	un = f.reconcile(t, un)
	expectCondition(t, un, v1.ConditionTypeInstanceProfileReady, metav1.ConditionFalse, nodeclass.ReasonInstanceProfileNotFound, `spec.instanceProfile "MyProfile": the instance profile does not exist`)
	if un.Status.InstanceProfile != "" {
		t.Errorf("status.instanceProfile %q for a missing profile", un.Status.InstanceProfile)
	}
}

func TestDryRunDenials(t *testing.T) {
	for _, c := range []struct{ action, reason, msg string }{
		{"CreateFleet", nodeclass.ReasonCreateFleetAuthFailed, "Controller isn't authorized to call ec2:CreateFleet"},
		{"CreateLaunchTemplate", nodeclass.ReasonCreateLaunchTemplateAuthFailed, "Controller isn't authorized to call ec2:CreateLaunchTemplate"},
		{"RunInstances", nodeclass.ReasonRunInstancesAuthFailed, "Controller isn't authorized to call ec2:RunInstances"},
	} {
		t.Run(c.action, func(t *testing.T) {
			f := setup(t)
			f.aws.DenyAction("ec2", c.action)
			nc := newNodeClass("denied")
			ExpectApplied(f.ctx, t, e.Client, nc)
			nc = f.reconcile(t, nc)
			expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, c.reason, c.msg)
			expectCondition(t, nc, status.ConditionReady, metav1.ConditionFalse, c.reason, c.msg)
			order := []string{"CreateLaunchTemplate", "CreateFleet", "RunInstances"}
			denied := false
			for _, a := range order {
				if denied && f.aws.Calls("ec2", a) != 0 {
					t.Errorf("%s dry-ran after %s was denied", a, c.action)
				}
				denied = denied || a == c.action
			}
			// The answer is cached while nothing changes; the permission fixed
			// and the cache expired, validation passes.
			f.aws.AllowAction("ec2", c.action)
			nc = f.reconcile(t, nc)
			expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, c.reason, c.msg)
			f.clk.Step(nodeclass.ValidationTTL)
			nc = f.reconcile(t, nc)
			expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, v1.ConditionTypeValidationSucceeded, "")
		})
	}
	t.Run("disabled", func(t *testing.T) {
		f := setup(t, func(o *settings.Options) { o.DisableDryRun = true })
		f.aws.DenyAction("ec2", "CreateFleet")
		nc := newNodeClass("no-dry-run")
		ExpectApplied(f.ctx, t, e.Client, nc)
		nc = f.reconcile(t, nc)
		expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, nodeclass.ReasonDryRunDisabled, "Dry run is disabled")
		expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
		if n := f.aws.Calls("ec2", "CreateFleet") + f.aws.Calls("ec2", "RunInstances") + f.aws.Calls("ec2", "CreateLaunchTemplate"); n != 0 {
			t.Errorf("%d dry runs with DISABLE_DRY_RUN", n)
		}
	})
}

func TestAWSOutagesKeepTheLastAnswer(t *testing.T) {
	f := setup(t)
	// First reconcile during an outage: Unknown with the reason, an error to retry.
	f.aws.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSubnets", Code: "RequestLimitExceeded"})
	nc := newNodeClass("outage")
	ExpectApplied(f.ctx, t, e.Client, nc)
	if err := ExpectReconcileFailed(f.ctx, t, f.c, nc); !strings.Contains(err.Error(), "RequestLimitExceeded") {
		t.Errorf("err = %v", err)
	}
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	expectCondition(t, nc, v1.ConditionTypeSubnetsReady, metav1.ConditionUnknown, nodeclass.ReasonResolutionFailed, "subnetSelectorTerms[0]")
	expectCondition(t, nc, v1.ConditionTypeValidationSucceeded, metav1.ConditionUnknown, nodeclass.ReasonDependenciesNotReady, "")
	expectCondition(t, nc, v1.ConditionTypeAMIsReady, metav1.ConditionTrue, v1.ConditionTypeAMIsReady, "")

	// Recovered: Ready. A later outage keeps the resolved subnets and True.
	f.aws.ClearFaults()
	nc = f.reconcile(t, nc)
	expectCondition(t, nc, status.ConditionReady, metav1.ConditionTrue, status.ConditionReady, "")
	subnets := nc.Status.Subnets
	f.aws.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeSubnets", Code: "InternalError"})
	f.clk.Step(time.Minute)
	ExpectReconcileFailed(f.ctx, t, f.c, nc)
	nc = ExpectExists(f.ctx, t, e.Client, nc)
	expectCondition(t, nc, v1.ConditionTypeSubnetsReady, metav1.ConditionTrue, v1.ConditionTypeSubnetsReady, "")
	if len(nc.Status.Subnets) != len(subnets) {
		t.Errorf("subnets %+v after an outage, had %+v", nc.Status.Subnets, subnets)
	}
}

func TestRefreshPicksUpChanges(t *testing.T) {
	f := setup(t)
	nc := newNodeClass("refresh")
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	victim := nc.Status.Subnets[0].ID
	f.aws.RemoveSubnet(victim)
	f.aws.AddSubnet(awsemulator.Subnet{Zone: "us-west-2a", AvailableIPs: 9000, Tags: discovery()})
	nc = f.reconcile(t, nc)
	if len(nc.Status.Subnets) != 4 {
		t.Errorf("within the refresh interval the cached subnets stay: %+v", nc.Status.Subnets)
	}
	f.clk.Step(f.opts.SubnetRefreshInterval)
	nc = f.reconcile(t, nc)
	if len(nc.Status.Subnets) != 4 || nc.Status.Subnets[0].Zone != "us-west-2a" || nc.Status.Subnets[0].ID == victim {
		t.Errorf("after the refresh interval: %+v (removed %s; the new 9000-IP subnet first)", nc.Status.Subnets, victim)
	}
}

// Without an EKS cluster of CLUSTER_NAME, aliases follow the API server's version.
func TestKubernetesVersionFromTheAPIServer(t *testing.T) {
	f := setup(t, func(o *settings.Options) { o.ClusterName = "self-managed" })
	nc := newNodeClass("self-managed")
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	info, err := e.KubeClient.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	want := "-1." + strings.TrimSuffix(info.Minor, "+") + "-v20251115"
	if len(nc.Status.AMIs) != 5 || !strings.Contains(nc.Status.AMIs[0].Name, want) {
		t.Errorf("amis for the API server's version (%s): %+v\n%s", want, nc.Status.AMIs, conditionSummary(nc))
	}
}

// A changed spec.role gets an instance profile of its own; the old profile
// keeps the old role for the nodes running with it and is deleted once no
// NodeClaim records it (after a grace period for launches in flight).
// Switching to spec.instanceProfile retires the managed profile the same way.
func TestRoleChangeMakesANewInstanceProfile(t *testing.T) {
	f := setup(t)
	nc := newNodeClass("role-change")
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	first := nc.Status.InstanceProfile
	if first == "" {
		t.Fatalf("no instance profile: %s", conditionSummary(nc))
	}
	profile := func(name string) *awsemulator.InstanceProfile {
		for _, p := range f.aws.InstanceProfiles() {
			if p.Name == name {
				return &p
			}
		}
		return nil
	}
	// A node runs with the first profile.
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "running", Annotations: map[string]string{v1.AnnotationInstanceProfile: first}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: v1.Group, Kind: "EC2NodeClass", Name: nc.Name},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
		},
	}
	ExpectApplied(f.ctx, t, e.Client, claim)

	f.aws.AddRole("OtherRole")
	nc.Spec.Role = "OtherRole"
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	second := nc.Status.InstanceProfile
	expectCondition(t, nc, v1.ConditionTypeInstanceProfileReady, metav1.ConditionTrue, v1.ConditionTypeInstanceProfileReady, "")
	if second == "" || second == first {
		t.Fatalf("status.instanceProfile %q after the role change, want a new profile (was %q)", second, first)
	}
	if p := profile(second); p == nil || len(p.Roles) != 1 || p.Roles[0] != "OtherRole" {
		t.Errorf("new profile %+v, want it to hold OtherRole", p)
	}
	if p := profile(first); p == nil || len(p.Roles) != 1 || p.Roles[0] != role {
		t.Errorf("old profile %+v, want it kept with %s for the running node", p, role)
	}
	// Still used by the NodeClaim: kept however long it waits.
	f.clk.Step(2 * instanceprofile.UnusedGracePeriod)
	nc = f.reconcile(t, nc)
	if profile(first) == nil {
		t.Fatal("old profile deleted while a NodeClaim uses it")
	}
	// The node goes: the profile is deleted after the grace period.
	ExpectDeleted(f.ctx, t, e.Client, claim)
	nc = f.reconcile(t, nc)
	if profile(first) == nil {
		t.Fatal("old profile deleted before the grace period")
	}
	f.clk.Step(instanceprofile.UnusedGracePeriod)
	nc = f.reconcile(t, nc)
	if profile(first) != nil {
		t.Errorf("old profile %s not deleted once unused", first)
	}
	if nc.Status.InstanceProfile != second || profile(second) == nil {
		t.Errorf("current profile %q changed or went", nc.Status.InstanceProfile)
	}

	// Back to the first role: again a new profile, not the old one swapped.
	nc.Spec.Role = role
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	third := nc.Status.InstanceProfile
	if third == second || third == first || profile(third) == nil || profile(third).Roles[0] != role {
		t.Errorf("profile after switching back: %q (%+v)", third, profile(third))
	}

	// spec.instanceProfile instead of spec.role: the managed profiles go.
	iamapi := iam.NewFromConfig(awstest.Config(f.aws))
	if _, err := iamapi.CreateInstanceProfile(f.ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: ptr.To("MyProfile")}); err != nil {
		t.Fatal(err)
	}
	nc.Spec.Role, nc.Spec.InstanceProfile = "", ptr.To("MyProfile")
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	if nc.Status.InstanceProfile != "MyProfile" {
		t.Fatalf("status.instanceProfile %q, want MyProfile", nc.Status.InstanceProfile)
	}
	f.clk.Step(instanceprofile.UnusedGracePeriod)
	nc = f.reconcile(t, nc)
	if profile(second) != nil || profile(third) != nil || profile("MyProfile") == nil {
		t.Errorf("profiles after switching to spec.instanceProfile: %+v", f.aws.InstanceProfiles())
	}
}

// SECURITY_GROUP_REFRESH_INTERVAL is how long DescribeSecurityGroups answers
// are reused, as upstream's security group cache: a security group tagged
// for discovery after the class resolved shows in status.securityGroups
// only once the interval has passed, even though the class is reconciled
// (and its subnets re-read) every minute before that.
func TestSecurityGroupRefreshIntervalIsHonoured(t *testing.T) {
	f := setup(t, func(o *settings.Options) { o.SecurityGroupRefreshInterval = 3 * time.Minute })
	nc := newNodeClass("sg-refresh")
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	before := len(nc.Status.SecurityGroups)
	if before == 0 {
		t.Fatal("no security group resolved")
	}
	late := f.aws.AddSecurityGroup(awsemulator.SecurityGroup{Name: "late", Tags: discovery()})
	calls := f.aws.Calls("ec2", "DescribeSecurityGroups")
	for i := 0; i < 2; i++ {
		f.clk.Step(time.Minute)
		nc = f.reconcile(t, nc)
		if len(nc.Status.SecurityGroups) != before {
			t.Fatalf("after %d minute(s), within the 3m interval, status.securityGroups changed: %+v", i+1, nc.Status.SecurityGroups)
		}
	}
	if n := f.aws.Calls("ec2", "DescribeSecurityGroups"); n != calls {
		t.Errorf("%d DescribeSecurityGroups calls within the interval", n-calls)
	}
	f.clk.Step(time.Minute)
	nc = f.reconcile(t, nc)
	found := false
	for _, g := range nc.Status.SecurityGroups {
		found = found || g.ID == late.ID
	}
	if !found || len(nc.Status.SecurityGroups) != before+1 {
		t.Fatalf("after the 3m interval status.securityGroups %+v, want %s added", nc.Status.SecurityGroups, late.ID)
	}
}

package awsemulator_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

// shippedPolicy is docs/aws/controller-policy.json rendered for the emulator.
func shippedPolicy(t *testing.T, e *awsemulator.Emulator) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/aws/controller-policy.json")
	ok(t, err)
	return e.RenderPolicy(string(b), nil)
}

func enforceShippedPolicy(t *testing.T, c *clients) {
	t.Helper()
	ok(t, c.e.SetPolicy(shippedPolicy(t, c.e)))
}

func ec2TagList(kv ...string) []ec2types.Tag {
	var out []ec2types.Tag
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, ec2types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	return out
}

// karpenterTags are the tags Karpenter puts on what it launches for nodepool "default".
var karpenterTags = []string{
	"kubernetes.io/cluster/karpenter-demo", "owned",
	"eks:eks-cluster-name", "karpenter-demo",
	"karpenter.sh/nodepool", "default",
	"karpenter.k8s.aws/ec2nodeclass", "default",
}

// karpenterWorld creates, under the shipped policy, what Karpenter creates before a
// launch: a tagged instance profile holding the node role and a tagged launch template.
func karpenterWorld(t *testing.T, c *clients, ltTags []string) (ltName string, subnets []ec2types.Subnet) {
	t.Helper()
	profile := "karpenter-demo_123"
	_, err := c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
		InstanceProfileName: aws.String(profile), Path: aws.String("/karpenter/us-west-2/karpenter-demo/uid-1/"),
		Tags: []iamtypes.Tag{
			{Key: aws.String("kubernetes.io/cluster/karpenter-demo"), Value: aws.String("owned")},
			{Key: aws.String("eks:eks-cluster-name"), Value: aws.String("karpenter-demo")},
			{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")},
			{Key: aws.String("topology.kubernetes.io/region"), Value: aws.String("us-west-2")},
		},
	})
	ok(t, err)
	_, err = c.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(profile), RoleName: aws.String("KarpenterNodeRole-karpenter-demo")})
	ok(t, err)
	_, err = c.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profile)})
	ok(t, err)
	ami, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	ok(t, err)
	sgs, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "karpenter-demo")}})
	ok(t, err)
	sn, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "karpenter-demo")}})
	ok(t, err)
	ltName = "karpenter.k8s.aws/1234"
	_, err = c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(ltName),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            ami.Parameter.Value,
			SecurityGroupIds:   []string{*sgs.SecurityGroups[0].GroupId},
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(profile)},
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{
				{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: ec2TagList(karpenterTags...)},
			},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2TagList(ltTags...)}},
	})
	ok(t, err)
	return ltName, sn.Subnets
}

// karpenterFleet is a CreateFleet as Karpenter sends it, with tags on fleet, instance and volume.
func karpenterFleet(lt string, subnets []ec2types.Subnet, tags []string) *ec2.CreateFleetInput {
	in := fleetInput(lt, ec2types.DefaultTargetCapacityTypeSpot, 1, []string{"m5.large", "c5.large"}, subnets)
	in.TagSpecifications = []ec2types.TagSpecification{
		{ResourceType: ec2types.ResourceTypeFleet, Tags: ec2TagList(tags...)},
		{ResourceType: ec2types.ResourceTypeInstance, Tags: ec2TagList(tags...)},
		{ResourceType: ec2types.ResourceTypeVolume, Tags: ec2TagList(tags...)},
	}
	return in
}

func expectNoDenials(t *testing.T, e *awsemulator.Emulator) {
	t.Helper()
	for _, d := range e.Denials() {
		t.Errorf("denied: %s", d)
	}
}

// expectDenied checks the error AWS answers and the recorded denial.
func expectDenied(t *testing.T, c *clients, err error, code, permission, resource string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected %s denied on %s, got success", permission, resource)
	}
	if errorCode(err) != code {
		t.Fatalf("expected %s, got %q: %v", code, errorCode(err), err)
	}
	want := "is not authorized to perform: " + permission + " on resource: " + resource
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	ds := c.e.Denials()
	if len(ds) == 0 {
		t.Fatalf("no denial recorded")
	}
	last := ds[len(ds)-1]
	if last.Permission != permission || last.Resource != resource {
		t.Fatalf("last denial %s, want %s on %s", last, permission, resource)
	}
}

func TestShippedPolicyAllowsKarpentersCalls(t *testing.T) {
	c := start(t)
	enforceShippedPolicy(t, c)
	queue := "karpenter-demo"
	if _, err := c.e.CreateQueue(queue); err != nil {
		t.Fatal(err)
	}

	// Discovery and pricing.
	_, err := c.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(5)})
	ok(t, err)
	_, err = c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{filter("name", "amazon-eks-node-al2023-x86_64-standard-1.34-*")}})
	ok(t, err)
	_, err = c.ec2.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []ec2types.InstanceType{"m5.large"}})
	ok(t, err)
	_, err = c.pricing.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(1)})
	ok(t, err)
	_, err = c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("karpenter-demo")})
	ok(t, err)
	_, err = c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-karpenter-demo")})
	ok(t, err)
	_, err = c.iam.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/karpenter/us-west-2/karpenter-demo/")})
	ok(t, err)

	lt, subnets := karpenterWorld(t, c, karpenterTags)

	// The dry runs of EC2NodeClass validation answer DryRunOperation: authorized.
	_, err = c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{DryRun: aws.Bool(true), LaunchTemplateName: aws.String("karpenter.k8s.aws/validation"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")},
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2TagList(karpenterTags...)}}})
	expectError(t, err, "DryRunOperation", 412)
	dry := karpenterFleet("karpenter.k8s.aws/validation", subnets, karpenterTags)
	dry.DryRun = aws.Bool(true)
	_, err = c.ec2.CreateFleet(ctx, dry)
	expectError(t, err, "DryRunOperation", 412)

	// Launch, tag, describe, terminate, delete the template.
	out, err := c.ec2.CreateFleet(ctx, karpenterFleet(lt, subnets, karpenterTags))
	ok(t, err)
	if len(out.Instances) != 1 {
		t.Fatalf("fleet launched %+v (errors %+v)", out.Instances, out.Errors)
	}
	id := out.Instances[0].InstanceIds[0]
	_, err = c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2TagList("Name", "ip-10-0-0-1.us-west-2.compute.internal", "karpenter.sh/nodeclaim", "default-abcde", "eks:eks-cluster-name", "karpenter-demo")})
	ok(t, err)
	_, err = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	ok(t, err)
	_, err = c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	ok(t, err)
	_, err = c.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(lt)})
	ok(t, err)

	// Interruption queue.
	url, err := c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	ok(t, err)
	_, err = c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, WaitTimeSeconds: 0})
	ok(t, err)

	// The instance profile's lifecycle.
	p := "karpenter-demo_123"
	_, err = c.iam.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(p), Tags: []iamtypes.Tag{
		{Key: aws.String("kubernetes.io/cluster/karpenter-demo"), Value: aws.String("owned")},
		{Key: aws.String("eks:eks-cluster-name"), Value: aws.String("karpenter-demo")},
		{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")},
		{Key: aws.String("topology.kubernetes.io/region"), Value: aws.String("us-west-2")},
		{Key: aws.String("team"), Value: aws.String("a")},
	}})
	ok(t, err)
	_, err = c.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(p), RoleName: aws.String("KarpenterNodeRole-karpenter-demo")})
	ok(t, err)
	_, err = c.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(p)})
	ok(t, err)
	expectNoDenials(t, c.e)
}

func TestShippedPolicyDeniesOutsideItsScope(t *testing.T) {
	c := start(t)
	// Before enforcement: an instance nobody tagged, and a launch template of another cluster.
	lt, subnets := launchWorld(t, c, "x86_64")
	bare := fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, 1, []string{"m5.large"}, subnets)
	bare.TagSpecifications = nil
	untagged, err := c.ec2.CreateFleet(ctx, bare)
	ok(t, err)
	enforceShippedPolicy(t, c)
	region, acct := "us-west-2", "123456789012"

	// CreateFleet without the cluster tag: denied on the fleet it would create.
	ourLT, _ := karpenterWorld(t, c, karpenterTags)
	noCluster := []string{"eks:eks-cluster-name", "karpenter-demo", "karpenter.sh/nodepool", "default"}
	_, err = c.ec2.CreateFleet(ctx, karpenterFleet(ourLT, subnets, noCluster))
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:CreateFleet", "arn:aws:ec2:"+region+":"+acct+":fleet/*")
	if !strings.Contains(err.Error(), "because no identity-based policy allows the ec2:CreateFleet action") {
		t.Fatalf("message: %v", err)
	}
	// ... also as a dry run.
	dry := karpenterFleet(ourLT, subnets, noCluster)
	dry.DryRun = aws.Bool(true)
	_, err = c.ec2.CreateFleet(ctx, dry)
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:CreateFleet", "arn:aws:ec2:"+region+":"+acct+":fleet/*")
	// Without karpenter.sh/nodepool: denied too.
	_, err = c.ec2.CreateFleet(ctx, karpenterFleet(ourLT, subnets, karpenterTags[:4]))
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:CreateFleet", "arn:aws:ec2:"+region+":"+acct+":fleet/*")

	// A launch template not owned by the cluster cannot be launched from.
	_, err = c.ec2.CreateFleet(ctx, karpenterFleet(lt, subnets, karpenterTags))
	if err == nil || !strings.Contains(err.Error(), ":launch-template/lt-") {
		t.Fatalf("launch from a foreign template: %v", err)
	}
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:CreateFleet", c.e.Denials()[len(c.e.Denials())-1].Resource)

	// TerminateInstances of an untagged instance.
	id := untagged.Instances[0].InstanceIds[0]
	_, err = c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:TerminateInstances", "arn:aws:ec2:"+region+":"+acct+":instance/"+id)

	// CreateTags of a key outside Name/karpenter.sh/nodeclaim/eks:eks-cluster-name on an owned instance.
	out, err := c.ec2.CreateFleet(ctx, karpenterFleet(ourLT, subnets, karpenterTags))
	ok(t, err)
	owned := out.Instances[0].InstanceIds[0]
	_, err = c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{owned}, Tags: ec2TagList("Name", "n", "team", "a")})
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:CreateTags", "arn:aws:ec2:"+region+":"+acct+":instance/"+owned)
	// ... and any tag on an instance the cluster does not own.
	_, err = c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2TagList("Name", "n")})
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:CreateTags", "arn:aws:ec2:"+region+":"+acct+":instance/"+id)

	// iam:PassRole of another role through the launch template's instance profile.
	ok(t, c.e.SetPolicy(""))
	c.e.AddRole("OtherRole")
	_, err = c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("other")})
	ok(t, err)
	_, err = c.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("other"), RoleName: aws.String("OtherRole")})
	ok(t, err)
	_, err = c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/other"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1"),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("other")}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2TagList(karpenterTags...)}}})
	ok(t, err)
	enforceShippedPolicy(t, c)
	_, err = c.ec2.CreateFleet(ctx, karpenterFleet("karpenter.k8s.aws/other", subnets, karpenterTags))
	expectDenied(t, c, err, "UnauthorizedOperation", "iam:PassRole", "arn:aws:iam::"+acct+":role/OtherRole")

	// IAM: an instance profile without the cluster's tags; JSON services: a private
	// parameter, another queue, another cluster.
	_, err = c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("untagged")})
	expectDenied(t, c, err, "AccessDenied", "iam:CreateInstanceProfile", "arn:aws:iam::"+acct+":instance-profile/untagged")
	_, err = c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/private/secret")})
	expectDenied(t, c, err, "AccessDeniedException", "ssm:GetParameter", "arn:aws:ssm:"+region+":"+acct+":parameter/private/secret")
	_, err = c.e.CreateQueue("other-queue")
	ok(t, err)
	_, err = c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("other-queue")})
	expectDenied(t, c, err, "AccessDenied", "sqs:GetQueueUrl", "arn:aws:sqs:"+region+":"+acct+":other-queue")
	_, err = c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("other")})
	expectDenied(t, c, err, "AccessDeniedException", "eks:DescribeCluster", "arn:aws:eks:"+region+":"+acct+":cluster/other")
	// Reads outside the region.
	other := c.cfg.Copy()
	other.Region = "eu-west-1"
	_, err = ec2.NewFromConfig(other).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err == nil {
		t.Fatalf("a request signed for eu-west-1 was answered")
	}
}

func TestExplicitDenyAndLiftingThePolicy(t *testing.T) {
	c := start(t)
	ok(t, c.e.SetPolicy(`{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":"ec2:Describe*","Resource":"*"},
		{"Sid":"NoImages","Effect":"Deny","Action":"ec2:DescribeImages","Resource":"*"}]}`))
	_, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	ok(t, err)
	_, err = c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:DescribeImages", "*")
	if !strings.Contains(err.Error(), "with an explicit deny in an identity-based policy") || !strings.Contains(c.e.Denials()[0].Reason, "explicitly denied by statement NoImages") {
		t.Fatalf("explicit deny: %v / %s", err, c.e.Denials()[0])
	}
	_, err = c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-karpenter-demo")})
	expectDenied(t, c, err, "AccessDenied", "iam:GetRole", "arn:aws:iam::123456789012:role/KarpenterNodeRole-karpenter-demo")
	if n := len(c.e.Denials()); n != 2 {
		t.Fatalf("%d denials recorded, want 2", n)
	}
	ok(t, c.e.SetPolicy(""))
	_, err = c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	ok(t, err)
	c.e.ResetDenials()
	if len(c.e.Denials()) != 0 {
		t.Fatalf("ResetDenials kept %v", c.e.Denials())
	}
	if err := c.e.SetPolicy(`{"Statement":[{"Effect":"Allow","Action":"ec2:*","Resource":"arn:aws:ec2:${AWS_REGION}::image/*"}]}`); err == nil || !strings.Contains(err.Error(), "${AWS_REGION}") {
		t.Fatalf("unrendered placeholder accepted: %v", err)
	}
}

// withoutStatement drops a statement (by Sid) from the shipped policy.
func withoutStatement(t *testing.T, doc, sid string) string {
	t.Helper()
	var p map[string]any
	ok(t, json.Unmarshal([]byte(doc), &p))
	var kept []any
	for _, s := range p["Statement"].([]any) {
		if s.(map[string]any)["Sid"] != sid {
			kept = append(kept, s)
		}
	}
	if len(kept) == len(p["Statement"].([]any)) {
		t.Fatalf("no statement %s", sid)
	}
	p["Statement"] = kept
	b, err := json.Marshal(p)
	ok(t, err)
	return string(b)
}

func TestTaggingOnCreateNeedsCreateTags(t *testing.T) {
	c := start(t)
	enforceShippedPolicy(t, c)
	lt, subnets := karpenterWorld(t, c, karpenterTags)
	ok(t, c.e.SetPolicy(withoutStatement(t, shippedPolicy(t, c.e), "AllowScopedResourceCreationTagging")))
	_, err := c.ec2.CreateFleet(ctx, karpenterFleet(lt, subnets, karpenterTags))
	expectDenied(t, c, err, "UnauthorizedOperation", "ec2:CreateTags", "arn:aws:ec2:us-west-2:123456789012:fleet/*")
	if d := c.e.Denials()[0]; d.Action != "CreateFleet" || !strings.Contains(d.Reason, `ec2:createaction=["CreateFleet"]`) {
		t.Fatalf("denial %s", d)
	}
	// Without PassRole, the node role cannot be handed to the instance.
	ok(t, c.e.SetPolicy(withoutStatement(t, shippedPolicy(t, c.e), "AllowPassingInstanceRole")))
	_, err = c.ec2.CreateFleet(ctx, karpenterFleet(lt, subnets, karpenterTags))
	expectDenied(t, c, err, "UnauthorizedOperation", "iam:PassRole", "arn:aws:iam::123456789012:role/KarpenterNodeRole-karpenter-demo")
}

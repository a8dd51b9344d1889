package awsemulator_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

func TestSSMParameters(t *testing.T) {
	c := start(t)
	_, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/karpenter/none")})
	expectError(t, err, "ParameterNotFound", 400)

	c.e.PutParameter("/custom/ami", "ami-0123456789abcdef0")
	first, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/custom/ami")})
	ok(t, err)
	c.e.PutParameter("/custom/ami", "ami-0fedcba9876543210")
	second, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/custom/ami")})
	ok(t, err)
	if *first.Parameter.Value != "ami-0123456789abcdef0" || *second.Parameter.Value != "ami-0fedcba9876543210" ||
		second.Parameter.Version != first.Parameter.Version+1 || second.Parameter.LastModifiedDate == nil {
		t.Fatalf("PutParameter: %+v then %+v", first.Parameter, second.Parameter)
	}

	many, err := c.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/custom/ami", "/missing"}})
	ok(t, err)
	if len(many.Parameters) != 1 || len(many.InvalidParameters) != 1 || many.InvalidParameters[0] != "/missing" {
		t.Fatalf("GetParameters: %+v %v", many.Parameters, many.InvalidParameters)
	}
}

func TestIAMInstanceProfileLifecycle(t *testing.T) {
	c := start(t)
	role := "KarpenterNodeRole-karpenter-demo"
	r, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)})
	ok(t, err)
	if *r.Role.Path != "/" || *r.Role.Arn != "arn:aws:iam::123456789012:role/"+role || *r.Role.RoleId == "" {
		t.Fatalf("role %+v", r.Role)
	}
	_, err = c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("nobody")})
	expectError(t, err, "NoSuchEntity", 404)

	_, err = c.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("p1")})
	expectError(t, err, "NoSuchEntity", 404)

	path := "/karpenter/us-west-2/karpenter-demo/uid/"
	created, err := c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
		InstanceProfileName: aws.String("p1"), Path: aws.String(path),
		Tags: []iamtypes.Tag{{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")}},
	})
	ok(t, err)
	p := created.InstanceProfile
	if *p.Path != path || *p.Arn != "arn:aws:iam::123456789012:instance-profile"+path+"p1" || len(p.Tags) != 1 || len(p.Roles) != 0 || *p.InstanceProfileId == "" {
		t.Fatalf("created %+v", p)
	}
	_, err = c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p1")})
	expectError(t, err, "EntityAlreadyExists", 409)
	_, err = c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p2"), Path: aws.String("no-slashes")})
	expectError(t, err, "ValidationError", 400)

	_, err = c.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p1"), RoleName: aws.String("nobody")})
	expectError(t, err, "NoSuchEntity", 404)
	_, err = c.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p1"), RoleName: aws.String(role)})
	ok(t, err)
	_, err = c.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p1"), RoleName: aws.String(role)})
	expectError(t, err, "LimitExceeded", 409)
	_, err = c.iam.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String("p1"),
		Tags: []iamtypes.Tag{{Key: aws.String("karpenter.sh/managed-by"), Value: aws.String("karpenter-demo")}}})
	ok(t, err)

	got, err := c.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("p1")})
	ok(t, err)
	if len(got.InstanceProfile.Roles) != 1 || *got.InstanceProfile.Roles[0].RoleName != role || len(got.InstanceProfile.Tags) != 2 {
		t.Fatalf("profile after add/tag: %+v", got.InstanceProfile)
	}
	profiles := c.e.InstanceProfiles()
	if len(profiles) != 1 || profiles[0].Roles[0] != role || profiles[0].Tags["karpenter.sh/managed-by"] != "karpenter-demo" {
		t.Fatalf("InstanceProfiles(): %+v", profiles)
	}

	_, err = c.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("p1")})
	expectError(t, err, "DeleteConflict", 409)
	_, err = c.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String("p1"), RoleName: aws.String(role)})
	ok(t, err)
	_, err = c.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String("p1"), RoleName: aws.String(role)})
	expectError(t, err, "NoSuchEntity", 404)
	_, err = c.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("p1")})
	ok(t, err)
	_, err = c.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("p1")})
	expectError(t, err, "NoSuchEntity", 404)

	c.e.AddRole("other")
	if _, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("other")}); err != nil {
		t.Fatal(err)
	}
	c.e.RemoveRole("other")
	_, err = c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("other")})
	expectError(t, err, "NoSuchEntity", 404)
}

func TestIAMListInstanceProfiles(t *testing.T) {
	c := start(t)
	for i := 0; i < 5; i++ {
		_, err := c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("k" + strconv.Itoa(i)), Path: aws.String("/karpenter/us-west-2/")})
		ok(t, err)
	}
	_, err := c.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("elsewhere")})
	ok(t, err)

	var names []string
	p := iam.NewListInstanceProfilesPaginator(c.iam, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/karpenter/"), MaxItems: aws.Int32(2)})
	calls := 0
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		ok(t, err)
		calls++
		for _, ip := range page.InstanceProfiles {
			names = append(names, *ip.InstanceProfileName)
			if len(ip.Tags) != 0 {
				t.Fatal("IAM listings leave tags out")
			}
		}
	}
	if fmtList(names) != "[k0 k1 k2 k3 k4]" || calls != 3 {
		t.Fatalf("listed %v in %d pages", names, calls)
	}
	all, err := c.iam.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{})
	ok(t, err)
	if len(all.InstanceProfiles) != 6 || all.IsTruncated {
		t.Fatalf("all profiles: %d truncated=%v", len(all.InstanceProfiles), all.IsTruncated)
	}
}

func TestEKSDescribeCluster(t *testing.T) {
	c := start(t)
	out, err := c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("karpenter-demo")})
	ok(t, err)
	cl := out.Cluster
	if *cl.Version != "1.34" || cl.Status != "ACTIVE" || *cl.KubernetesNetworkConfig.ServiceIpv4Cidr != "10.100.0.0/16" ||
		cl.KubernetesNetworkConfig.IpFamily != "ipv4" || *cl.Arn != "arn:aws:eks:us-west-2:123456789012:cluster/karpenter-demo" {
		t.Fatalf("cluster %+v", cl)
	}
	if len(*cl.Endpoint) < 40 || (*cl.Endpoint)[:8] != "https://" {
		t.Fatalf("endpoint %s", *cl.Endpoint)
	}
	pemBytes, err := base64.StdEncoding.DecodeString(*cl.CertificateAuthority.Data)
	ok(t, err)
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatal("certificate authority data is not PEM")
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		t.Fatalf("certificate authority: %v", err)
	}
	c.e.SetClusterVersion("1.35")
	out, err = c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("karpenter-demo")})
	ok(t, err)
	if *out.Cluster.Version != "1.35" {
		t.Fatalf("SetClusterVersion: %s", *out.Cluster.Version)
	}
	_, err = c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("other")})
	expectError(t, err, "ResourceNotFoundException", 404)
}

// The filters Karpenter sends for on-demand Linux prices.
func onDemandFilters(region string) []pricingtypes.Filter {
	f := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	return []pricingtypes.Filter{f("tenancy", "Shared"), f("productFamily", "Compute Instance"), f("serviceCode", "AmazonEC2"),
		f("preInstalledSw", "NA"), f("operatingSystem", "Linux"), f("capacitystatus", "Used"), f("marketoption", "OnDemand"), f("regionCode", region)}
}

// withFamily is onDemandFilters for another tenancy and product family.
func withFamily(filters []pricingtypes.Filter, tenancy, family string) []pricingtypes.Filter {
	out := append([]pricingtypes.Filter(nil), filters...)
	out[0].Value, out[1].Value = aws.String(tenancy), aws.String(family)
	return out
}

// productPrices pages through GetProducts: instance type -> USD, and the page count.
func productPrices(t *testing.T, c *clients, filters []pricingtypes.Filter) (map[string]float64, int) {
	t.Helper()
	prices := map[string]float64{}
	pages := 0
	p := pricing.NewGetProductsPaginator(c.pricing, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: filters})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		ok(t, err)
		pages++
		for _, doc := range page.PriceList {
			var item struct {
				Product struct {
					Attributes map[string]string
				}
				Terms struct {
					OnDemand map[string]struct {
						PriceDimensions map[string]struct {
							PricePerUnit map[string]string
						}
					}
				}
			}
			ok(t, json.Unmarshal([]byte(doc), &item))
			for _, term := range item.Terms.OnDemand {
				for _, dim := range term.PriceDimensions {
					v, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64)
					ok(t, err)
					prices[item.Product.Attributes["instanceType"]] = v
				}
			}
		}
	}
	return prices, pages
}

// The price list files shared types under "Compute Instance" (tenancy Shared),
// bare-metal types under "Compute Instance (bare metal)" (tenancy Dedicated),
// and Dedicated Instances of the other types under "Compute Instance" with
// tenancy Dedicated, at the emulator's premium.
func TestPricingGetProducts(t *testing.T) {
	c := start(t)
	facts := loadFacts(t)
	shared, metal := 0, 0
	for name, f := range facts {
		switch {
		case f.OnDemandUSD <= 0:
		case strings.HasPrefix(name[strings.Index(name, ".")+1:], "metal"):
			metal++
		default:
			shared++
		}
	}
	prices, pages := productPrices(t, c, onDemandFilters("us-west-2"))
	if len(prices) != shared || pages != (shared+99)/100 {
		t.Fatalf("%d shared prices in %d pages, want %d", len(prices), pages, shared)
	}
	metalPrices, _ := productPrices(t, c, withFamily(onDemandFilters("us-west-2"), "Dedicated", "Compute Instance (bare metal)"))
	if len(metalPrices) != metal || metal == 0 {
		t.Fatalf("%d bare-metal prices, want %d", len(metalPrices), metal)
	}
	for name, usd := range metalPrices {
		if _, dup := prices[name]; dup {
			t.Fatalf("%s is listed as shared and as bare metal", name)
		}
		prices[name] = usd
	}
	for name, usd := range prices {
		if usd != facts[name].OnDemandUSD {
			t.Fatalf("%s: %v, facts say %v", name, usd, facts[name].OnDemandUSD)
		}
	}
	dedicated, _ := productPrices(t, c, withFamily(onDemandFilters("us-west-2"), "Dedicated", "Compute Instance"))
	if len(dedicated) != shared || dedicated["m5.large"] <= prices["m5.large"] {
		t.Fatalf("%d dedicated prices (m5.large %v, shared %v), want %d above the shared ones", len(dedicated), dedicated["m5.large"], prices["m5.large"], shared)
	}
	other, err := c.pricing.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: onDemandFilters("eu-west-1")})
	ok(t, err)
	if len(other.PriceList) != 0 {
		t.Fatalf("another region has no products here: %d", len(other.PriceList))
	}
	_, err = c.pricing.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: []pricingtypes.Filter{{Type: "FUZZY", Field: aws.String("x"), Value: aws.String("y")}}})
	expectError(t, err, "InvalidParameterException", 400)
}

func TestDryRunAndDeny(t *testing.T) {
	c := start(t)
	dry := []struct {
		action string
		call   func() error
	}{
		{"CreateFleet", func() error {
			_, err := c.ec2.CreateFleet(ctx, &ec2.CreateFleetInput{DryRun: aws.Bool(true), Type: ec2types.FleetTypeInstant,
				LaunchTemplateConfigs:       []ec2types.FleetLaunchTemplateConfigRequest{{LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("lt"), Version: aws.String("$Latest")}}},
				TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand}})
			return err
		}},
		{"CreateLaunchTemplate", func() error {
			_, err := c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{DryRun: aws.Bool(true), LaunchTemplateName: aws.String("lt"),
				LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0123")}})
			return err
		}},
		{"RunInstances", func() error {
			_, err := c.ec2.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ImageId: aws.String("ami-0123")})
			return err
		}},
	}
	for _, d := range dry {
		err := d.call()
		expectError(t, err, "DryRunOperation", 412)
		if msg := err.Error(); !strings.Contains(msg, "Request would have succeeded, but DryRun flag is set.") {
			t.Fatalf("%s: %s", d.action, msg)
		}
		c.e.DenyAction("ec2", d.action)
		expectError(t, d.call(), "UnauthorizedOperation", 403)
		c.e.AllowAction("ec2", d.action)
		expectError(t, d.call(), "DryRunOperation", 412)
	}
	c.e.DenyAction("iam", "GetRole")
	_, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-karpenter-demo")})
	expectError(t, err, "AccessDenied", 403)
	c.e.DenyAction("ssm", "GetParameter")
	_, err = c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/x")})
	expectError(t, err, "AccessDeniedException", 400)
	c.e.DenyAction("eks", "DescribeCluster")
	_, err = c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("karpenter-demo")})
	expectError(t, err, "AccessDeniedException", 403)
}

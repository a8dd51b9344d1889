package awsemulator_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/karpenter-go/karpenter/pkg/awsemulator"
)

func describeImages(t *testing.T, c *clients, in *ec2.DescribeImagesInput) []ec2types.Image {
	t.Helper()
	var out []ec2types.Image
	p := ec2.NewDescribeImagesPaginator(c.ec2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		ok(t, err)
		out = append(out, page.Images...)
	}
	return out
}

func imageNames(imgs []ec2types.Image) string {
	var names []string
	for _, i := range imgs {
		names = append(names, *i.Name)
	}
	return fmtList(names)
}

func TestDescribeImagesByNameAndOwner(t *testing.T) {
	c := start(t)
	imgs := describeImages(t, c, &ec2.DescribeImagesInput{
		Owners:  []string{"self", "amazon"},
		Filters: []ec2types.Filter{filter("name", "amazon-eks-node-al2023-x86_64-standard-1.34-*")},
	})
	if imageNames(imgs) != "[amazon-eks-node-al2023-x86_64-standard-1.34-v20251101 amazon-eks-node-al2023-x86_64-standard-1.34-v20251115]" {
		t.Fatalf("name wildcard: %s", imageNames(imgs))
	}
	for _, i := range imgs {
		if i.Architecture != ec2types.ArchitectureValuesX8664 || *i.OwnerId != "602401143452" || *i.ImageOwnerAlias != "amazon" ||
			i.State != ec2types.ImageStateAvailable || i.CreationDate == nil || i.DeprecationTime != nil {
			t.Fatalf("image %+v", i)
		}
	}
	// The account's own images: the custom AMIs, tagged for selector tests.
	self := describeImages(t, c, &ec2.DescribeImagesInput{Owners: []string{"self"}})
	if imageNames(self) != "[custom-al2023-arm64 custom-al2023-x86_64]" {
		t.Fatalf("self images: %s", imageNames(self))
	}
	tagged := describeImages(t, c, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", "karpenter-demo"), filter("architecture", "arm64")}})
	if imageNames(tagged) != "[custom-al2023-arm64]" {
		t.Fatalf("tagged images: %s", imageNames(tagged))
	}
	byOwnerID := describeImages(t, c, &ec2.DescribeImagesInput{Owners: []string{"801119661308"}, Filters: []ec2types.Filter{filter("name", "Windows_Server-2022-*-1.34-*")}})
	if len(byOwnerID) != 1 || string(byOwnerID[0].Platform) != "windows" { // EC2 sends lower case, unlike the SDK enum
		t.Fatalf("windows by owner id: %s", imageNames(byOwnerID))
	}
	keyed := describeImages(t, c, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("tag-key", "karpenter.sh/discovery"), filter("state", "available")}})
	if len(keyed) != 2 {
		t.Fatalf("tag-key: %s", imageNames(keyed))
	}
	byID := describeImages(t, c, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("image-id", *imgs[0].ImageId)}})
	if len(byID) != 1 || *byID[0].ImageId != *imgs[0].ImageId {
		t.Fatalf("image-id filter: %s", imageNames(byID))
	}
	none := describeImages(t, c, &ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{filter("name", "amazon-eks-*")}})
	if len(none) != 0 {
		t.Fatalf("EKS images are not the account's: %s", imageNames(none))
	}
}

func TestDescribeImagesDeprecation(t *testing.T) {
	c := start(t)
	old := "amazon-eks-node-al2023-x86_64-standard-1.28-v20251101"
	byName := &ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{filter("name", "amazon-eks-node-al2023-x86_64-standard-1.28-*")}}
	if got := imageNames(describeImages(t, c, byName)); got != "[amazon-eks-node-al2023-x86_64-standard-1.28-v20251115]" {
		t.Fatalf("deprecated image must be hidden by default: %s", got)
	}
	byName.IncludeDeprecated = aws.Bool(true)
	all := describeImages(t, c, byName)
	if imageNames(all) != "[amazon-eks-node-al2023-x86_64-standard-1.28-v20251101 amazon-eks-node-al2023-x86_64-standard-1.28-v20251115]" {
		t.Fatalf("IncludeDeprecated: %s", imageNames(all))
	}
	var oldID string
	for _, i := range all {
		if *i.Name == old {
			oldID = *i.ImageId
			if i.DeprecationTime == nil || *i.DeprecationTime != "2025-11-20T00:00:00.000Z" {
				t.Fatalf("deprecation time %v", i.DeprecationTime)
			}
		}
	}
	// Asked for by ID, a deprecated image is returned.
	if got := describeImages(t, c, &ec2.DescribeImagesInput{ImageIds: []string{oldID}}); len(got) != 1 {
		t.Fatalf("by ID: %s", imageNames(got))
	}
	// DeprecateImage hides the latest too; the owner still sees its own deprecated images.
	latest := describeImages(t, c, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{filter("name", "amazon-eks-node-al2023-arm64-standard-1.34-v20251115")}})
	if len(latest) != 1 {
		t.Fatalf("latest: %s", imageNames(latest))
	}
	ok(t, c.e.DeprecateImage(*latest[0].ImageId))
	if got := describeImages(t, c, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{filter("name", "amazon-eks-node-al2023-arm64-standard-1.34-v20251115")}}); len(got) != 0 {
		t.Fatalf("DeprecateImage: still listed %s", imageNames(got))
	}
	custom := c.e.AddImage(awsemulator.Image{Name: "mine", Architecture: "arm64"})
	ok(t, c.e.DeprecateImage(custom.ID))
	if got := describeImages(t, c, &ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{filter("name", "mine")}}); len(got) != 1 {
		t.Fatalf("owner sees its deprecated image: %s", imageNames(got))
	}
	if err := c.e.DeprecateImage("ami-404"); err == nil {
		t.Fatal("DeprecateImage of an unknown image must fail")
	}
}

func TestDescribeImagesErrorsAndPagination(t *testing.T) {
	c := start(t)
	_, err := c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000000"}})
	expectError(t, err, "InvalidAMIID.NotFound", 400)
	_, err = c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"nope"}})
	expectError(t, err, "InvalidAMIID.Malformed", 400)
	_, err = c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("flavor", "x")}})
	expectError(t, err, "InvalidParameterValue", 400)

	all := describeImages(t, c, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	c.e.ResetCalls()
	paged := describeImages(t, c, &ec2.DescribeImagesInput{Owners: []string{"amazon"}, MaxResults: aws.Int32(50)})
	if len(paged) != len(all) || c.e.Calls("ec2", "DescribeImages") != (len(all)+49)/50 {
		t.Fatalf("paginated %d of %d images in %d calls", len(paged), len(all), c.e.Calls("ec2", "DescribeImages"))
	}
}

// Every alias the providers resolve exists in SSM and names an existing image of the
// right architecture; AL2 stops after 1.32 as AWS's publication does.
func TestSSMAliasesResolveToImages(t *testing.T) {
	c := start(t)
	type alias struct{ path, arch, namePrefix string }
	var aliases []alias
	for _, v := range awsemulator.KubernetesVersions {
		eks := "/aws/service/eks/optimized-ami/" + v
		aliases = append(aliases,
			alias{eks + "/amazon-linux-2023/x86_64/standard/recommended/image_id", "x86_64", "amazon-eks-node-al2023-x86_64-standard-" + v + "-v20251115"},
			alias{eks + "/amazon-linux-2023/arm64/standard/recommended/image_id", "arm64", "amazon-eks-node-al2023-arm64-standard-" + v},
			alias{eks + "/amazon-linux-2023/x86_64/nvidia/recommended/image_id", "x86_64", "amazon-eks-node-al2023-x86_64-nvidia-" + v},
			alias{eks + "/amazon-linux-2023/x86_64/neuron/recommended/image_id", "x86_64", "amazon-eks-node-al2023-x86_64-neuron-" + v},
			alias{eks + "/amazon-linux-2023/arm64/nvidia/recommended/image_id", "arm64", "amazon-eks-node-al2023-arm64-nvidia-" + v},
			alias{eks + "/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-" + v + "-v20251101/image_id", "x86_64", "amazon-eks-node-al2023-x86_64-standard-" + v + "-v20251101"},
			alias{"/aws/service/bottlerocket/aws-k8s-" + v + "/x86_64/latest/image_id", "x86_64", "bottlerocket-aws-k8s-" + v + "-x86_64-v1.50.0"},
			alias{"/aws/service/bottlerocket/aws-k8s-" + v + "/arm64/1.49.0/image_id", "arm64", "bottlerocket-aws-k8s-" + v + "-aarch64-v1.49.0"},
			alias{"/aws/service/bottlerocket/aws-k8s-" + v + "-nvidia/x86_64/1.50.0/image_id", "x86_64", "bottlerocket-aws-k8s-" + v + "-nvidia-x86_64-v1.50.0"},
			alias{"/aws/service/bottlerocket/aws-k8s-" + v + "-nvidia/arm64/latest/image_id", "arm64", "bottlerocket-aws-k8s-" + v + "-nvidia-aarch64-v1.50.0"},
			alias{"/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-" + v + "/image_id", "x86_64", "Windows_Server-2019-English-Core-EKS_Optimized-" + v},
			alias{"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-" + v + "/image_id", "x86_64", "Windows_Server-2022-English-Core-EKS_Optimized-" + v},
			alias{"/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-" + v + "/image_id", "x86_64", "Windows_Server-2025-English-Core-EKS_Optimized-" + v},
		)
		if v <= "1.32" {
			aliases = append(aliases,
				alias{eks + "/amazon-linux-2/recommended/image_id", "x86_64", "amazon-eks-node-" + v + "-v20251115"},
				alias{eks + "/amazon-linux-2-arm64/recommended/image_id", "arm64", "amazon-eks-arm64-node-" + v + "-v20251115"},
				alias{eks + "/amazon-linux-2-gpu/recommended/image_id", "x86_64", "amazon-eks-gpu-node-" + v + "-v20251115"},
				alias{eks + "/amazon-linux-2/amazon-eks-node-" + v + "-v20251101/image_id", "x86_64", "amazon-eks-node-" + v + "-v20251101"},
			)
		}
	}
	ids := map[string]alias{}
	for _, a := range aliases {
		out, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(a.path)})
		if err != nil {
			t.Fatalf("%s: %v", a.path, err)
		}
		ids[*out.Parameter.Value] = a
	}
	var idList []string
	for id := range ids {
		idList = append(idList, id)
	}
	for start := 0; start < len(idList); start += 100 {
		batch := idList[start:min(len(idList), start+100)]
		imgs := describeImages(t, c, &ec2.DescribeImagesInput{ImageIds: batch})
		if len(imgs) != len(batch) {
			t.Fatalf("asked %d images by ID, got %d", len(batch), len(imgs))
		}
		for _, img := range imgs {
			a := ids[*img.ImageId]
			if string(img.Architecture) != a.arch || len(*img.Name) < len(a.namePrefix) || (*img.Name)[:len(a.namePrefix)] != a.namePrefix {
				t.Fatalf("%s -> %s (%s), want %s %s", a.path, *img.Name, img.Architecture, a.namePrefix, a.arch)
			}
		}
	}
	_, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.33/amazon-linux-2/recommended/image_id")})
	expectError(t, err, "ParameterNotFound", 400)
}

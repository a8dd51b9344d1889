package amifamily_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/awsemulator"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
)

const cluster = "karpenter-demo"

type env struct {
	e   *awsemulator.Emulator
	p   *amifamily.Provider
	clk *clocktesting.FakeClock
	ssm *ssm.Client
}

func setup(t *testing.T, opts ...amifamily.Option) *env {
	t.Helper()
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	cfg := awstest.Config(e)
	// The emulator judges deprecation by the wall clock; so does this clock.
	clk := clocktesting.NewFakeClock(time.Now())
	versions := amifamily.NewVersionProvider(eks.NewFromConfig(cfg), cluster, nil, clk)
	ssmapi := ssm.NewFromConfig(cfg)
	p := amifamily.NewProvider(ec2.NewFromConfig(cfg), amifamily.NewSSMProvider(ssmapi, clk, 0), versions, clk, time.Minute, opts...)
	return &env{e: e, p: p, clk: clk, ssm: ssmapi}
}

func class(terms ...v1.AMISelectorTerm) *v1.EC2NodeClass {
	return &v1.EC2NodeClass{Spec: v1.EC2NodeClassSpec{AMISelectorTerms: terms}}
}

// reqs renders an AMI's requirements compactly: arch + the other keys.
func reqs(a amifamily.AMI) string {
	var parts []string
	for _, r := range a.Requirements {
		k := r.Key[strings.LastIndex(r.Key, "/")+1:]
		parts = append(parts, fmt.Sprintf("%s %s %s", k, r.Operator, strings.Join(r.Values, ",")))
	}
	return strings.Join(parts, "; ")
}

func (v *env) param(t *testing.T, name string) string {
	t.Helper()
	out, err := v.ssm.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return aws.ToString(out.Parameter.Value)
}

func TestAliasAL2023Latest(t *testing.T) {
	v := setup(t)
	res, err := v.p.List(context.Background(), class(v1.AMISelectorTerm{Alias: "al2023@latest"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.KubernetesVersion != "1.34" {
		t.Errorf("Kubernetes version %q, want the EKS cluster's 1.34", res.KubernetesVersion)
	}
	got := map[string]string{}
	for _, a := range res.AMIs {
		got[a.ID] = reqs(a)
		if a.Deprecated || !strings.Contains(a.Name, "1.34-v20251115") {
			t.Errorf("%s %s deprecated=%v, want the latest 1.34 release", a.ID, a.Name, a.Deprecated)
		}
	}
	base := "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/"
	want := map[string]string{
		v.param(t, base+"x86_64/standard/recommended/image_id"): "arch In amd64; instance-gpu-count DoesNotExist ; instance-accelerator-count DoesNotExist ",
		v.param(t, base+"arm64/standard/recommended/image_id"):  "arch In arm64; instance-gpu-count DoesNotExist ; instance-accelerator-count DoesNotExist ",
		v.param(t, base+"x86_64/nvidia/recommended/image_id"):   "arch In amd64; instance-gpu-count Exists ",
		v.param(t, base+"arm64/nvidia/recommended/image_id"):    "arch In arm64; instance-gpu-count Exists ",
		v.param(t, base+"x86_64/neuron/recommended/image_id"):   "arch In amd64; instance-accelerator-count Exists ",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// Status order: newest first, then by id; requirement keys shortest first.
	for i := 1; i < len(res.AMIs); i++ {
		if res.AMIs[i-1].ID > res.AMIs[i].ID {
			t.Errorf("equal creation dates must sort by id")
		}
	}
	if res.AMIs[0].Requirements[0].Key != corev1.LabelArchStable {
		t.Errorf("arch (shortest key) first: %v", res.AMIs[0].Requirements)
	}
}

func TestAliasPinnedVersionsAndFamilies(t *testing.T) {
	v := setup(t)
	ctx := context.Background()
	count := func(alias string) (int, []amifamily.AMI) {
		t.Helper()
		res, err := v.p.List(ctx, class(v1.AMISelectorTerm{Alias: alias}))
		if err != nil {
			t.Fatalf("%s: %v", alias, err)
		}
		if len(res.Unmatched) > 0 {
			t.Fatalf("%s: %s", alias, res.UnmatchedMessage())
		}
		return len(res.AMIs), res.AMIs
	}
	if n, amis := count("al2023@v20251101"); n != 5 || !strings.HasSuffix(amis[0].Name, "-1.34-v20251101") {
		t.Errorf("pinned al2023: %d AMIs, %s", n, amis[0].Name)
	}
	// Bottlerocket: x86_64 standard serves standard and neuron; v-prefixed versions accepted.
	if n, amis := count("bottlerocket@v1.50.0"); n != 5 {
		t.Errorf("bottlerocket: %d entries, want 5 (x86 standard, x86 neuron, arm standard, 2 nvidia): %v", n, amis)
	}
	if n, _ := count("bottlerocket@1.49.0"); n != 5 {
		t.Errorf("bottlerocket without v: %d", n)
	}
	if n, amis := count("windows2022@latest"); n != 1 || reqs(amis[0]) != "os In windows; arch In amd64; windows-build In 10.0.20348" {
		t.Errorf("windows2022: %d %v", n, reqs(amis[0]))
	}
	// AL2 on 1.34 is refused before any AWS call; on 1.32 its GPU AMI serves NVIDIA and Neuron.
	_, err := v.p.List(ctx, class(v1.AMISelectorTerm{Alias: "al2@latest"}))
	var input *amifamily.InputError
	if !errors.As(err, &input) || input.Field != "amiSelectorTerms[0].alias" || !strings.Contains(err.Error(), "AL2 AMIs are not published for Kubernetes 1.33 and later (the cluster runs 1.34)") {
		t.Errorf("al2 on 1.34: %v", err)
	}
	_, err = v.p.List(ctx, class(v1.AMISelectorTerm{Alias: "windows2025@latest"}))
	if !errors.As(err, &input) || !strings.Contains(err.Error(), "only published for Kubernetes 1.35 and later") {
		t.Errorf("windows2025 on 1.34: %v", err)
	}
}

func TestAliasFollowsTheClusterVersion(t *testing.T) {
	v := setup(t)
	ctx := context.Background()
	v.e.SetClusterVersion("1.32")
	res, err := v.p.List(ctx, class(v1.AMISelectorTerm{Alias: "al2@latest"}))
	if err != nil {
		t.Fatal(err)
	}
	gpu := v.param(t, "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id")
	var gpuReqs []string
	for _, a := range res.AMIs {
		if a.ID == gpu {
			gpuReqs = append(gpuReqs, reqs(a))
		}
	}
	if len(res.AMIs) != 4 || len(gpuReqs) != 2 {
		t.Errorf("al2 on 1.32: %d AMIs, GPU AMI with %v; want 4 entries, the GPU AMI for NVIDIA and Neuron", len(res.AMIs), gpuReqs)
	}
	// The version is cached for 15 minutes, then read again.
	v.e.SetClusterVersion("1.35")
	if _, err := v.p.List(ctx, class(v1.AMISelectorTerm{Alias: "windows2025@latest"})); err == nil {
		t.Error("within 15 minutes the cached 1.32 still applies")
	}
	v.clk.Step(amifamily.KubernetesVersionTTL)
	res, err = v.p.List(ctx, class(v1.AMISelectorTerm{Alias: "windows2025@latest"}))
	if err != nil || len(res.AMIs) != 1 || res.KubernetesVersion != "1.35" {
		t.Errorf("windows2025 on 1.35: %v %+v", err, res)
	}
}

func TestUnknownAliasVersionNamesTheTerm(t *testing.T) {
	v := setup(t)
	res, err := v.p.List(context.Background(), class(v1.AMISelectorTerm{Alias: "al2023@v19990101"}))
	if err != nil {
		t.Fatal(err)
	}
	msg := res.UnmatchedMessage()
	if len(res.AMIs) != 0 || !strings.HasPrefix(msg, `amiSelectorTerms[0] matched no AMI: alias "al2023@v19990101" (no SSM parameter of version "v19990101" exists for Kubernetes 1.34, e.g. /aws/service/eks/optimized-ami/1.34/amazon-linux-2023/`) {
		t.Errorf("%d AMIs, message %q", len(res.AMIs), msg)
	}
	if v.e.Calls("ec2", "DescribeImages") != 0 {
		t.Error("nothing to describe when SSM names no image")
	}
}

func TestSelectorTerms(t *testing.T) {
	v := setup(t)
	ctx := context.Background()
	// Tags: the account's custom images, one per architecture.
	res, err := v.p.List(ctx, class(v1.AMISelectorTerm{Tags: map[string]string{"karpenter.sh/discovery": cluster}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AMIs) != 2 || reqs(res.AMIs[0]) == reqs(res.AMIs[1]) {
		t.Fatalf("tags: %+v", res.AMIs)
	}
	for _, a := range res.AMIs {
		if len(a.Requirements) != 1 || a.Requirements[0].Key != corev1.LabelArchStable {
			t.Errorf("a plain image is constrained by its architecture only: %v", a.Requirements)
		}
	}
	// Name with a wildcard, newest per architecture wins.
	res, err = v.p.List(ctx, class(v1.AMISelectorTerm{Name: "amazon-eks-node-al2023-*-standard-1.34-*"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AMIs) != 2 || !strings.HasSuffix(res.AMIs[0].Name, "v20251115") || !strings.HasSuffix(res.AMIs[1].Name, "v20251115") {
		t.Errorf("name: %v", res.AMIs)
	}
	// Ids stand alone; an SSM parameter term names an id; terms are ORed.
	std := v.param(t, "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id")
	old := v.param(t, "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.33-v20251101/image_id")
	res, err = v.p.List(ctx, class(
		v1.AMISelectorTerm{ID: old},
		v1.AMISelectorTerm{SSMParameter: "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"},
		v1.AMISelectorTerm{ID: "ami-00000000000000000"},
		v1.AMISelectorTerm{SSMParameter: "/my/pipeline/missing"},
	))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AMIs) != 2 || res.AMIs[0].ID != std || res.AMIs[1].ID != old {
		t.Errorf("ids: %v", res.AMIs)
	}
	want := `amiSelectorTerms[2] matched no AMI: id "ami-00000000000000000"; amiSelectorTerms[3] matched no AMI: ssmParameter "/my/pipeline/missing" (the SSM parameter does not exist)`
	if res.UnmatchedMessage() != want {
		t.Errorf("unmatched:\n got %s\nwant %s", res.UnmatchedMessage(), want)
	}
	// A name alone only sees the account's and Amazon's images; an owner widens it.
	shared := v.e.AddImage(awsemulator.Image{Name: "shared-golden", OwnerID: "999999999999", Public: true, CreationDate: time.Now().Add(-time.Hour)})
	res, err = v.p.List(ctx, class(v1.AMISelectorTerm{Name: "shared-golden"}))
	if err != nil || len(res.AMIs) != 0 {
		t.Errorf("name without owner found a third-party image: %v %v", err, res.AMIs)
	}
	res, err = v.p.List(ctx, class(v1.AMISelectorTerm{Name: "shared-golden", Owner: "999999999999"}))
	if err != nil || len(res.AMIs) != 1 || res.AMIs[0].ID != shared.ID {
		t.Errorf("name + owner: %v %v", err, res.AMIs)
	}
}

func TestDeprecatedOnlyWhenNothingElse(t *testing.T) {
	v := setup(t)
	ctx := context.Background()
	// 1.28's old release is deprecated: the name matches it alone.
	res, err := v.p.List(ctx, class(v1.AMISelectorTerm{Name: "amazon-eks-node-al2023-x86_64-standard-1.28-v20251101"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AMIs) != 1 || !res.AMIs[0].Deprecated {
		t.Fatalf("a deprecated image is used when nothing else matches: %+v", res.AMIs)
	}
	// Both 1.34 releases match; deprecate the newer: the older, non-deprecated, wins.
	latest := v.param(t, "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
	if err := v.e.DeprecateImage(latest); err != nil {
		t.Fatal(err)
	}
	res, err = v.p.List(ctx, class(v1.AMISelectorTerm{Name: "amazon-eks-node-al2023-x86_64-standard-1.34-*"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AMIs) != 1 || res.AMIs[0].ID == latest || res.AMIs[0].Deprecated || !strings.HasSuffix(res.AMIs[0].Name, "v20251101") {
		t.Errorf("newest non-deprecated must win: %+v", res.AMIs)
	}
}

func TestPaginationRetriesAndCaches(t *testing.T) {
	v := setup(t, amifamily.WithPageSize(6))
	ctx := context.Background()
	for i := 0; i < 11; i++ {
		arch := "x86_64"
		if i%2 == 1 {
			arch = "arm64"
		}
		v.e.AddImage(awsemulator.Image{Name: fmt.Sprintf("paged-%02d", i), Architecture: arch, CreationDate: time.Date(2025, 1, 1+i, 0, 0, 0, 0, time.UTC), Tags: map[string]string{"team": "paged"}})
	}
	v.e.InjectFault(awsemulator.Fault{Service: "ec2", Action: "DescribeImages", Code: "RequestLimitExceeded", Count: 1})
	v.e.InjectFault(awsemulator.Fault{Service: "ssm", Action: "GetParameter", Code: "ThrottlingException", Count: 2})
	nc := class(v1.AMISelectorTerm{Tags: map[string]string{"team": "paged"}})
	res, err := v.p.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AMIs) != 2 || res.AMIs[0].Name != "paged-10" || res.AMIs[1].Name != "paged-09" {
		t.Errorf("newest per architecture over 2 pages: %+v", res.AMIs)
	}
	if n := v.e.Calls("ec2", "DescribeImages"); n != 3 {
		t.Errorf("%d DescribeImages calls, want 2 pages + 1 throttled", n)
	}
	// SSM throttling is retried too, and SSM answers are cached for a day.
	alias := class(v1.AMISelectorTerm{Alias: "al2023@latest"})
	if _, err := v.p.List(ctx, alias); err != nil {
		t.Fatal(err)
	}
	calls := v.e.Calls("ssm", "GetParameter")
	if calls != 7 {
		t.Errorf("%d GetParameter calls, want 5 parameters + 2 throttled", calls)
	}
	v.clk.Step(time.Hour)
	if _, err := v.p.List(ctx, alias); err != nil || v.e.Calls("ssm", "GetParameter") != calls {
		t.Errorf("SSM must be cached for 24h: %v, %d calls", err, v.e.Calls("ssm", "GetParameter"))
	}
	v.clk.Step(amifamily.SSMCacheTTL)
	if _, err := v.p.List(ctx, alias); err != nil || v.e.Calls("ssm", "GetParameter") != calls+5 {
		t.Errorf("after 24h SSM is read again: %v, %d calls", err, v.e.Calls("ssm", "GetParameter"))
	}
}

func TestVersionNeedsEKSOrTheAPIServer(t *testing.T) {
	e := awsemulator.StartForTest(t, awsemulator.Options{})
	p := amifamily.NewVersionProvider(eks.NewFromConfig(awstest.Config(e)), "no-such-cluster", nil, clocktesting.NewFakeClock(time.Now()))
	_, err := p.Get(context.Background())
	if err == nil || !strings.Contains(err.Error(), `EKS cluster "no-such-cluster" does not exist`) || !strings.Contains(err.Error(), "API server") {
		t.Errorf("err = %v", err)
	}
}

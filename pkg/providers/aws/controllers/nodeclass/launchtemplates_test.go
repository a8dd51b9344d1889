package nodeclass_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	awsprovider "github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/amifamily"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/controllers/nodeclass"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/httpclient"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/awstest"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/launchtemplate"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

// withLaunchTemplates rebuilds the fixture's controller with a launch
// template provider, as provider.go wires it.
func (f *fixture) withLaunchTemplates(t *testing.T) *ec2.Client {
	t.Helper()
	cfg := awstest.Config(f.aws)
	httpclient.Configure(&cfg)
	providers := awsprovider.NewProviders(cfg, f.opts, e.KubeClient.Discovery(), f.clk)
	providers.LaunchTemplates = launchtemplate.NewProvider(providers.EC2, amifamily.NewResolver(), f.clk, launchtemplate.Options{ClusterName: cluster})
	f.c = nodeclass.NewController(e.Client, f.clk, nil, f.opts, providers)
	return providers.EC2
}

// createLaunchTemplate makes a launch template tagged as the launch path
// tags them (cluster, class); empty cluster/class leave the tag out.
func createLaunchTemplate(t *testing.T, f *fixture, api *ec2.Client, name, clusterName, className string) {
	t.Helper()
	tags := []ec2types.Tag{}
	if clusterName != "" {
		tags = append(tags,
			ec2types.Tag{Key: aws.String(v1.TagClusterPrefix + clusterName), Value: aws.String("owned")},
			ec2types.Tag{Key: aws.String(v1.TagEKSClusterName), Value: aws.String(clusterName)})
	}
	if className != "" {
		tags = append(tags, ec2types.Tag{Key: aws.String(v1.TagEC2NodeClass), Value: aws.String(className)})
	}
	in := &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0123456789abcdef0")},
	}
	if len(tags) > 0 {
		in.TagSpecifications = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}}
	}
	if _, err := api.CreateLaunchTemplate(f.ctx, in); err != nil {
		t.Fatalf("creating launch template %s: %v", name, err)
	}
}

func launchTemplateNames(f *fixture) string {
	var names []string
	for _, lt := range f.aws.LaunchTemplates() {
		names = append(names, lt.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// Deleting an EC2NodeClass deletes its launch templates, after its
// NodeClaims are gone and before the finalizer goes; templates of other
// classes, other clusters and users' own stay.
func TestDeletedClassTakesItsLaunchTemplates(t *testing.T) {
	f := setup(t)
	api := f.withLaunchTemplates(t)
	nc := newNodeClass("doomed")
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	createLaunchTemplate(t, f, api, "karpenter.k8s.aws/1111", cluster, "doomed")
	createLaunchTemplate(t, f, api, "karpenter.k8s.aws/2222", cluster, "doomed")
	createLaunchTemplate(t, f, api, "karpenter.k8s.aws/3333", cluster, "survivor")
	createLaunchTemplate(t, f, api, "karpenter.k8s.aws/4444", "other-cluster", "doomed")
	createLaunchTemplate(t, f, api, "users-own", "", "")
	all := "karpenter.k8s.aws/1111,karpenter.k8s.aws/2222,karpenter.k8s.aws/3333,karpenter.k8s.aws/4444,users-own"
	claim := nodeClaim("still-running", nc.Name)
	ExpectApplied(f.ctx, t, e.Client, claim)

	ExpectDeleted(f.ctx, t, e.Client, nc)
	ExpectReconciled(f.ctx, t, f.c, nc)
	if got := launchTemplateNames(f); got != all {
		t.Fatalf("launch templates must stay while a NodeClaim uses the class: %s", got)
	}
	ExpectDeleted(f.ctx, t, e.Client, claim)
	ExpectReconciled(f.ctx, t, f.c, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc)
	if got, want := launchTemplateNames(f), "karpenter.k8s.aws/3333,karpenter.k8s.aws/4444,users-own"; got != want {
		t.Errorf("launch templates left %s, want %s", got, want)
	}
}

// When EC2 refuses to delete them, the finalizer stays and the error names
// the class; once allowed, the next reconcile finishes.
func TestLaunchTemplateDeletionFailureKeepsFinalizer(t *testing.T) {
	f := setup(t)
	api := f.withLaunchTemplates(t)
	nc := newNodeClass("stuck")
	ExpectApplied(f.ctx, t, e.Client, nc)
	nc = f.reconcile(t, nc)
	createLaunchTemplate(t, f, api, "karpenter.k8s.aws/5555", cluster, "stuck")
	f.aws.DenyAction("ec2", "DeleteLaunchTemplate")
	ExpectDeleted(f.ctx, t, e.Client, nc)
	err := ExpectReconcileFailed(f.ctx, t, f.c, nc)
	if !strings.Contains(err.Error(), "launch templates of EC2NodeClass stuck") {
		t.Errorf("error %q must name the class", err)
	}
	if cur := ExpectExists(f.ctx, t, e.Client, nc); !controllerutil.ContainsFinalizer(cur, v1.TerminationFinalizer) {
		t.Fatal("the finalizer must stay while the launch templates cannot be deleted")
	}
	f.aws.AllowAction("ec2", "DeleteLaunchTemplate")
	ExpectReconciled(f.ctx, t, f.c, nc)
	ExpectNotFound(f.ctx, t, e.Client, nc)
	if got := launchTemplateNames(f); got != "" {
		t.Errorf("launch templates left: %s", got)
	}
}

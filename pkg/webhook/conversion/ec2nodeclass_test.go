package conversion_test

import (
	"context"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
)

// TestV1beta1EC2NodeClassThroughWebhook: the seed's v1beta1 EC2NodeClass
// (amiFamily without amiSelectorTerms) applied through the webhook reads back
// as v1 with an alias term, and as the original in v1beta1.
func TestV1beta1EC2NodeClassThroughWebhook(t *testing.T) {
	c := startWebhook(t)
	ctx := context.Background()
	b, err := os.ReadFile("../../apis/aws/testdata/seeds/003-before-v1beta1-ec2nodeclass.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &in.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, in.DeepCopy()); err != nil {
		t.Fatalf("create v1beta1: %v", err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.Get(ctx, client.ObjectKey{Name: in.GetName()}, nc); err != nil {
		t.Fatal(err)
	}
	if len(nc.Spec.AMISelectorTerms) != 1 || nc.Spec.AMISelectorTerms[0].Alias != "al2023@latest" {
		t.Errorf("v1 amiSelectorTerms = %+v, want [{alias: al2023@latest}]", nc.Spec.AMISelectorTerms)
	}
	if nc.Spec.Role != "eu-dev-node" {
		t.Errorf("v1 role = %q", nc.Spec.Role)
	}
	back := &unstructured.Unstructured{}
	back.SetAPIVersion("karpenter.k8s.aws/v1beta1")
	back.SetKind("EC2NodeClass")
	if err := c.Get(ctx, client.ObjectKey{Name: in.GetName()}, back); err != nil {
		t.Fatal(err)
	}
	if got := lookup(back.Object, "spec.amiFamily"); got != "AL2023" {
		t.Errorf("v1beta1 amiFamily read back as %v", got)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(back.Object, "spec", "amiSelectorTerms"); found {
		t.Errorf("v1beta1 read back gained amiSelectorTerms: %v", lookup(back.Object, "spec.amiSelectorTerms"))
	}
}

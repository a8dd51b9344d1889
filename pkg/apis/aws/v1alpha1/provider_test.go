package v1alpha1_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/karpenter-go/karpenter/pkg/apis/aws/v1alpha1"
)

// TestDeserializeProvider parses inline provider blocks the way old
// Provisioners wrote them, including the apiVersion/kind header of the
// oldest releases.
func TestDeserializeProvider(t *testing.T) {
	provisionerYAML := `
apiVersion: extensions.karpenter.sh/v1alpha1
kind: AWS
amiFamily: Bottlerocket
instanceProfile: KarpenterNodeInstanceProfile-demo
subnetSelector:
  karpenter.sh/discovery: demo
securityGroupSelector:
  aws-ids: sg-123,sg-456
tags:
  team: a
metadataOptions:
  httpTokens: required
  httpPutResponseHopLimit: 2
blockDeviceMappings:
  - deviceName: /dev/xvda
    ebs:
      volumeSize: 100Gi
      volumeType: gp3
launchTemplate: my-template
context: ctx
`
	raw, err := yaml.YAMLToJSON([]byte(provisionerYAML))
	if err != nil {
		t.Fatal(err)
	}
	a, err := v1alpha1.DeserializeProvider(raw)
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(a.AMIFamily, "") != "Bottlerocket" || ptr.Deref(a.InstanceProfile, "") != "KarpenterNodeInstanceProfile-demo" ||
		a.SubnetSelector["karpenter.sh/discovery"] != "demo" || a.SecurityGroupSelector["aws-ids"] != "sg-123,sg-456" ||
		a.Tags["team"] != "a" || ptr.Deref(a.LaunchTemplateName, "") != "my-template" || ptr.Deref(a.Context, "") != "ctx" ||
		ptr.Deref(a.MetadataOptions.HTTPPutResponseHopLimit, 0) != 2 || ptr.Deref(a.MetadataOptions.HTTPTokens, "") != "required" {
		t.Errorf("provider parsed wrong: %+v", a)
	}
	if len(a.BlockDeviceMappings) != 1 || a.BlockDeviceMappings[0].EBS.VolumeSize.Cmp(resource.MustParse("100Gi")) != 0 {
		t.Errorf("blockDeviceMappings parsed wrong: %+v", a.BlockDeviceMappings)
	}
	if empty, err := v1alpha1.DeserializeProvider(nil); err != nil || empty == nil {
		t.Errorf("an absent provider block must parse as empty, got %v, %v", empty, err)
	}
	if _, err := v1alpha1.DeserializeProvider([]byte(`{"subnetSelector": "not-a-map"}`)); err == nil || !strings.Contains(err.Error(), "spec.provider") {
		t.Errorf("a malformed provider must fail naming spec.provider, got %v", err)
	}
}

func validTemplate() *v1alpha1.AWSNodeTemplate {
	return &v1alpha1.AWSNodeTemplate{Spec: v1alpha1.AWSNodeTemplateSpec{AWS: v1alpha1.AWS{
		SubnetSelector:        map[string]string{"karpenter.sh/discovery": "demo"},
		SecurityGroupSelector: map[string]string{"karpenter.sh/discovery": "demo"},
	}}}
}

// TestValidate covers the rules of the alpha admission webhook; each case
// names the field the error must point at.
func TestValidate(t *testing.T) {
	if errs := validTemplate().Validate(); len(errs) != 0 {
		t.Fatalf("valid template rejected: %v", errs)
	}
	cases := []struct {
		name   string
		mutate func(*v1alpha1.AWSNodeTemplate)
		field  string
	}{
		{"subnetSelector required", func(n *v1alpha1.AWSNodeTemplate) { n.Spec.SubnetSelector = nil }, "spec.subnetSelector"},
		{"securityGroupSelector required", func(n *v1alpha1.AWSNodeTemplate) { n.Spec.SecurityGroupSelector = nil }, "spec.securityGroupSelector"},
		{"ids key must be alone", func(n *v1alpha1.AWSNodeTemplate) {
			n.Spec.SubnetSelector = map[string]string{"aws-ids": "subnet-1", "team": "a"}
		}, "spec.subnetSelector[aws-ids]"},
		{"ids must be valid", func(n *v1alpha1.AWSNodeTemplate) {
			n.Spec.SecurityGroupSelector = map[string]string{"aws::ids": "sg-1, subnet-2"}
		}, "spec.securityGroupSelector[aws::ids]"},
		{"ami ids must be valid", func(n *v1alpha1.AWSNodeTemplate) { n.Spec.AMISelector = map[string]string{"aws::ids": "i-123"} }, "spec.amiSelector[aws::ids]"},
		{"aws::name only in amiSelector", func(n *v1alpha1.AWSNodeTemplate) { n.Spec.SubnetSelector["aws::name"] = "x" }, "spec.subnetSelector[aws::name]"},
		{"empty selector value", func(n *v1alpha1.AWSNodeTemplate) { n.Spec.SubnetSelector["team"] = "" }, "spec.subnetSelector[team]"},
		{"launchTemplate with securityGroupSelector", func(n *v1alpha1.AWSNodeTemplate) { n.Spec.LaunchTemplateName = ptr.To("lt") }, "spec.securityGroupSelector"},
		{"launchTemplate with userData", func(n *v1alpha1.AWSNodeTemplate) {
			n.Spec.SecurityGroupSelector = nil
			n.Spec.LaunchTemplateName = ptr.To("lt")
			n.Spec.UserData = ptr.To("#!/bin/bash")
		}, "spec.userData"},
		{"launchTemplate with amiFamily", func(n *v1alpha1.AWSNodeTemplate) {
			n.Spec.SecurityGroupSelector = nil
			n.Spec.LaunchTemplateName = ptr.To("lt")
			n.Spec.AMIFamily = ptr.To("AL2")
		}, "spec.amiFamily"},
		{"Custom needs amiSelector", func(n *v1alpha1.AWSNodeTemplate) { n.Spec.AMIFamily = ptr.To("Custom") }, "spec.amiSelector"},
		{"restricted cluster tag", func(n *v1alpha1.AWSNodeTemplate) {
			n.Spec.Tags = map[string]string{"kubernetes.io/cluster/demo": "owned"}
		}, "spec.tags[kubernetes.io/cluster/demo]"},
		{"restricted provisioner tag", func(n *v1alpha1.AWSNodeTemplate) {
			n.Spec.Tags = map[string]string{"karpenter.sh/provisioner-name": "default"}
		}, "spec.tags[karpenter.sh/provisioner-name]"},
		{"volume too large", func(n *v1alpha1.AWSNodeTemplate) {
			n.Spec.BlockDeviceMappings = []*v1alpha1.BlockDeviceMapping{{EBS: &v1alpha1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("65Ti"))}}}
		}, "spec.blockDeviceMappings[0].ebs.volumeSize"},
		{"volume too small", func(n *v1alpha1.AWSNodeTemplate) {
			n.Spec.BlockDeviceMappings = []*v1alpha1.BlockDeviceMapping{{EBS: &v1alpha1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("100Mi"))}}}
		}, "spec.blockDeviceMappings[0].ebs.volumeSize"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := validTemplate()
			c.mutate(n)
			errs := n.Validate()
			for _, e := range errs {
				if e.Field == c.field {
					return
				}
			}
			t.Errorf("no error on %s; got %v", c.field, errs)
		})
	}
}

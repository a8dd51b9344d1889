package instance_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instance"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Tenancy picks default whenever it is allowed, else dedicated, and refuses
// requirements that allow neither, naming them.
func TestTenancyChoosesDefaultThenDedicated(t *testing.T) {
	req := func(op corev1.NodeSelectorOperator, values ...string) scheduling.Requirements {
		return scheduling.NewRequirements(scheduling.NewRequirement(awsv1.LabelInstanceTenancy, op, values...))
	}
	for _, c := range []struct {
		name string
		reqs scheduling.Requirements
		want string
		err  string
	}{
		{"no requirement", scheduling.NewRequirements(), "default", ""},
		{"both", req(corev1.NodeSelectorOpIn, "dedicated", "default"), "default", ""},
		{"dedicated only", req(corev1.NodeSelectorOpIn, "dedicated"), "dedicated", ""},
		{"dedicated and unknown", req(corev1.NodeSelectorOpIn, "host", "dedicated"), "dedicated", ""},
		{"not default", req(corev1.NodeSelectorOpNotIn, "default"), "dedicated", ""},
		{"exists", req(corev1.NodeSelectorOpExists), "default", ""},
		{"host", req(corev1.NodeSelectorOpIn, "host"), "", "karpenter.k8s.aws/instance-tenancy In [host]"},
		{"neither", req(corev1.NodeSelectorOpNotIn, "default", "dedicated"), "", "NotIn [dedicated default]"},
		{"does not exist", req(corev1.NodeSelectorOpDoesNotExist), "", "karpenter.k8s.aws/instance-tenancy DoesNotExist"},
	} {
		got, err := instance.Tenancy(c.reqs)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %q, %v; want an error naming %q", c.name, got, err, c.err)
		}
	}
}

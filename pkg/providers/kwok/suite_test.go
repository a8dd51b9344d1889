package kwok_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

// setup empties the cluster and returns a provider on a fake clock with the
// embedded catalog.
func setup(t *testing.T) (context.Context, *kwok.CloudProvider, *clocktesting.FakeClock) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ExpectCleanedUp(ctx, t, e.Client, &corev1.NodeList{}, &v1.NodeClaimList{}, &kwokv1alpha1.KWOKNodeClassList{})
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	return ctx, kwok.New(ctx, e.Client, clk, catalog), clk
}

var nodeClass = fixtures.KWOKNodeClass

func nodeClaim(name, nodeClassName string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	if len(reqs) == 0 {
		// The API requires at least one requirement.
		reqs = append(reqs, req(corev1.LabelOSStable, corev1.NodeSelectorOpExists))
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{v1.NodePoolLabelKey: "default", "team": "a"},
			Annotations: map[string]string{"example.com/owner": "me"},
		},
		Spec: v1.NodeClaimSpec{
			Requirements:  reqs,
			Taints:        []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []corev1.Taint{{Key: "example.com/booting", Effect: corev1.TaintEffectNoSchedule}},
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"),
			}},
			NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: nodeClassName},
		},
	}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func clientKey(name string) types.NamespacedName { return types.NamespacedName{Name: name} }

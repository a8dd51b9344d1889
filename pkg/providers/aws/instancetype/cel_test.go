package instancetype_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// celProvider is a provider of the fixture's emulator with the NodeClassCEL
// gate set to enabled.
func (f *fixture) celProvider(enabled bool) *instancetype.Provider {
	cfg := f.em.AWSConfig()
	return instancetype.NewProvider(ec2.NewFromConfig(cfg), f.prices, f.unavailable, f.clock,
		instancetype.Options{Region: cfg.Region, VMMemoryOverheadPercent: 0.075, NodeClassCEL: enabled})
}

func kubeletOf(t *testing.T, raw string) *awsv1.KubeletConfiguration {
	t.Helper()
	k := &awsv1.KubeletConfiguration{}
	if err := k.UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	return k
}

func listTypes(t *testing.T, p *instancetype.Provider, nc *awsv1.EC2NodeClass) map[string]*scheduling.InstanceType {
	t.Helper()
	its, err := p.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	return byName(its)
}

func expectQuantity(t *testing.T, what string, l corev1.ResourceList, name corev1.ResourceName, want string) {
	t.Helper()
	q := l[name]
	if q.Cmp(resource.MustParse(want)) != 0 {
		t.Errorf("%s %s = %s, want %s", what, name, q.String(), want)
	}
}

// With NodeClassCEL on, maxPods and the reserved expressions are evaluated
// for each instance type: m5.large (2 vCPUs, 8 GiB, 3 ENIs of 10 IPs) and
// m5.4xlarge (16 vCPUs, 64 GiB, 8 ENIs of 30 IPs) get their own pod count,
// kube-reserved and system-reserved, so their capacity and allocatable
// differ as the expressions say. kubeReserved.memory sees the resolved
// maxPods.
func TestKubeletExpressionsPerInstanceType(t *testing.T) {
	f := newFixture(t)
	nc := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.Kubelet = kubeletOf(t, `{"maxPods":"min(110, default_enis * (ips_per_eni - 1))",
			"kubeReserved":{"cpu":"max(60, vcpus * 30)","memory":"max_pods * 11","ephemeral-storage":"2Gi"},
			"systemReserved":{"memory":"memory_mib / 100","cpu":"100m"}}`)
	})
	types := listTypes(t, f.celProvider(true), nc)
	for name, want := range map[string]struct{ pods, cpu, memory string }{
		// min(110, 3*9) = 27 pods; cpu 60m + 100m; memory 27*11=297 -> 304Mi,
		// 8192/100=81 -> 96Mi, + the 100Mi eviction threshold.
		"m5.large": {"27", "160m", "500Mi"},
		// min(110, 8*29) = 110 pods; cpu 480m + 100m; memory 1210 -> 1216Mi,
		// 655 -> 656Mi, + 100Mi.
		"m5.4xlarge": {"110", "580m", "1972Mi"},
	} {
		it := types[name]
		if it == nil {
			t.Fatalf("%s not listed", name)
		}
		expectQuantity(t, name+" capacity", it.Capacity, corev1.ResourcePods, want.pods)
		expectQuantity(t, name+" overhead", it.Overhead, corev1.ResourceCPU, want.cpu)
		expectQuantity(t, name+" overhead", it.Overhead, corev1.ResourceMemory, want.memory)
		// The static entry is honoured as written: 2Gi + 10% of the volume.
		storage := it.Capacity[corev1.ResourceEphemeralStorage]
		wantStorage := resource.MustParse("2Gi")
		wantStorage.Add(*resource.NewQuantity(int64(float64(storage.Value())/10+0.999999), resource.BinarySI))
		if got := it.Overhead[corev1.ResourceEphemeralStorage]; got.Cmp(wantStorage) != 0 {
			t.Errorf("%s ephemeral-storage overhead %s, want %s", name, got.String(), wantStorage.String())
		}
	}
}

// With the gate off (its default) the expressions are not honoured: every
// instance type is what it is for the class without them (the ENI-limited
// pod count, the computed kube-reserved), the static entries kept.
func TestKubeletExpressionsIgnoredWithTheGateOff(t *testing.T) {
	f := newFixture(t)
	withExpressions := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.Kubelet = kubeletOf(t, `{"maxPods":"min(110, vcpus * 2)","kubeReserved":{"cpu":"vcpus * 100","memory":"300Mi"},"systemReserved":{"memory":"memory_mib / 10"}}`)
	})
	staticOnly := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.Kubelet = kubeletOf(t, `{"kubeReserved":{"memory":"300Mi"}}`)
	})
	off := f.celProvider(false)
	got, want := listTypes(t, off, withExpressions), listTypes(t, off, staticOnly)
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%d types with expressions, %d without", len(got), len(want))
	}
	for name, it := range got {
		w := want[name]
		for _, r := range []corev1.ResourceName{corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory} {
			if a, b := it.Capacity[r], w.Capacity[r]; a.Cmp(b) != 0 {
				t.Errorf("%s capacity %s %s, want %s", name, r, a.String(), b.String())
			}
			if a, b := it.Overhead[r], w.Overhead[r]; a.Cmp(b) != 0 {
				t.Errorf("%s overhead %s %s, want %s", name, r, a.String(), b.String())
			}
		}
	}
	// m5.large keeps its ENI limit, 3*(10-1)+2, not min(110, 2*2).
	expectQuantity(t, "m5.large capacity", got["m5.large"].Capacity, corev1.ResourcePods, "29")
	expectQuantity(t, "m5.large overhead", got["m5.large"].Overhead, corev1.ResourceMemory, "400Mi")
	// The same class with the gate on is a different list.
	on := listTypes(t, f.celProvider(true), withExpressions)
	expectQuantity(t, "m5.large capacity (gate on)", on["m5.large"].Capacity, corev1.ResourcePods, "4")
}

// A maxPods expression without a usable result for an instance type fails
// the list, naming the field and the type; a reserved expression without
// one is left out, so the computed default applies to that resource.
func TestKubeletExpressionFailures(t *testing.T) {
	f := newFixture(t)
	p := f.celProvider(true)
	for _, expr := range []string{"100 / (vcpus - vcpus)", "vcpus - 1000", "3000000000 + vcpus", "", "vcpus > 2"} {
		nc := f.nodeClass(func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = kubeletOf(t, `{"maxPods":"`+expr+`"}`)
		})
		if _, err := p.List(context.Background(), nc); err == nil || !strings.Contains(err.Error(), "spec.kubelet.maxPods") || !strings.Contains(err.Error(), "instance type ") {
			t.Errorf("maxPods %q: error %v, want one naming spec.kubelet.maxPods and the instance type", expr, err)
		}
	}
	broken := listTypes(t, p, f.nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.Kubelet = kubeletOf(t, `{"kubeReserved":{"cpu":"vcpus - 1000","memory":"100 / (vcpus - vcpus)"}}`)
	}))
	plain := listTypes(t, p, f.nodeClass())
	for _, name := range []string{"m5.large", "c5.9xlarge"} {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if a, b := broken[name].Overhead[r], plain[name].Overhead[r]; a.Cmp(b) != 0 {
				t.Errorf("%s overhead %s %s, want the default %s", name, r, a.String(), b.String())
			}
		}
	}
}

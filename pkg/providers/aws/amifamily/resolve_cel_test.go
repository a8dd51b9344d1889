package amifamily

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// sized is an instance type with the vCPU and memory labels kubelet
// expressions read.
func sized(name string, vcpus, memoryMiB string, pods int64) *scheduling.InstanceType {
	it := instanceType(itSpec{name: name, arch: "amd64", pods: pods})
	it.Requirements = it.Requirements.
		With(scheduling.NewRequirement(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpIn, vcpus)).
		With(scheduling.NewRequirement(awsv1.LabelInstanceMemory, corev1.NodeSelectorOpIn, memoryMiB))
	return it
}

func celClass(t *testing.T, kubelet string) *awsv1.EC2NodeClass {
	t.Helper()
	nc := nodeClass(awsv1.AMIFamilyAL2023, ami("ami-x86", "amd64", VariantStandard, Get(awsv1.AMIFamilyAL2023)))
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{}
	if err := nc.Spec.Kubelet.UnmarshalJSON([]byte(kubelet)); err != nil {
		t.Fatal(err)
	}
	return nc
}

// Types with the same pod count but different reserved results get
// different launch templates with NodeClassCEL; types whose results round
// to the same values share one. default_enis and ips_per_eni come from the
// ENI lookup.
func TestResolveSplitsByEvaluatedReservations(t *testing.T) {
	nc := celClass(t, `{"kubeReserved":{"cpu":"max(60, vcpus * 30)","memory":"default_enis * ips_per_eni + 1"},"systemReserved":{"cpu":"70 + vcpus"}}`)
	its := []*scheduling.InstanceType{
		sized("m5.large", "2", "8192", 29),
		sized("c5.large", "2", "4096", 29),
		sized("m5.xlarge", "4", "16384", 29),
	}
	enis := func(name string) (int64, int64, bool) {
		if name == "m5.xlarge" {
			return 4, 15, true
		}
		return 3, 10, true
	}
	lts, err := NewResolver(WithNodeClassCEL(true, enis)).Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "launch templates", summary(lts), []string{"ami-x86 efa=0 [m5.large,c5.large]", "ami-x86 efa=0 [m5.xlarge]"})
	for i, want := range [][]string{
		// cpu 60m; memory 3*10+1=31 -> 32Mi; system cpu 72 -> 80m.
		{"cpu: 60m", "memory: 32Mi", "cpu: 80m"},
		// cpu 120m; memory 4*15+1=61 -> 64Mi; system cpu 74 -> 80m.
		{"cpu: 120m", "memory: 64Mi", "cpu: 80m"},
	} {
		for _, w := range want {
			if !strings.Contains(lts[i].UserData, w) {
				t.Errorf("template %d has no %q:\n%s", i, w, lts[i].UserData)
			}
		}
	}

	// Gate off: one template, no reservation from the expressions.
	lts, err = NewResolver().Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "launch templates (gate off)", summary(lts), []string{"ami-x86 efa=0 [m5.large,c5.large,m5.xlarge]"})
	if ud := lts[0].UserData; strings.Contains(ud, "vcpus") || strings.Contains(ud, "kubeReserved") || strings.Contains(ud, "systemReserved") {
		t.Errorf("expressions reached the user data with the gate off:\n%s", ud)
	}
}

// A maxPods expression is replaced by the pods capacity of the template's
// types (what scheduling evaluated it to), whatever the gate; an instance
// type without the labels the expressions need is an error.
func TestResolveWritesTheEvaluatedMaxPods(t *testing.T) {
	nc := celClass(t, `{"maxPods":"min(110, vcpus * 8)"}`)
	its := []*scheduling.InstanceType{sized("m5.large", "2", "8192", 16), sized("m5.4xlarge", "16", "65536", 110)}
	for _, r := range []*Resolver{NewResolver(), NewResolver(WithNodeClassCEL(true, nil))} {
		lts, err := r.Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
		if err != nil {
			t.Fatal(err)
		}
		if len(lts) != 2 || !strings.Contains(lts[0].UserData, "maxPods: 16") || !strings.Contains(lts[1].UserData, "maxPods: 110") {
			t.Fatalf("templates %v, want maxPods 16 and 110", summary(lts))
		}
		for _, lt := range lts {
			if strings.Contains(lt.UserData, "vcpus") {
				t.Errorf("the maxPods expression reached the user data:\n%s", lt.UserData)
			}
		}
	}
	reserved := celClass(t, `{"kubeReserved":{"cpu":"vcpus * 10"}}`)
	if _, err := NewResolver(WithNodeClassCEL(true, nil)).Resolve(reserved, nodeClaim(), []*scheduling.InstanceType{instanceType(itSpec{name: "m5.large", arch: "amd64", pods: 29})}, v1.CapacityTypeOnDemand, launchOptions()); err == nil || !strings.Contains(err.Error(), awsv1.LabelInstanceCPU) {
		t.Errorf("error %v, want one naming %s", err, awsv1.LabelInstanceCPU)
	}
}

// AL2's bootstrap flags carry the evaluated values too.
func TestResolveKubeletExpressionsOnAL2(t *testing.T) {
	nc := nodeClass(awsv1.AMIFamilyAL2, ami("ami-al2", "amd64", VariantStandard, Get(awsv1.AMIFamilyAL2)))
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{}
	if err := nc.Spec.Kubelet.UnmarshalJSON([]byte(`{"maxPods":"min(110, vcpus * 8)","kubeReserved":{"cpu":"max(60, vcpus * 30)"},"systemReserved":{"memory":"max_pods * 11"}}`)); err != nil {
		t.Fatal(err)
	}
	its := []*scheduling.InstanceType{sized("m5.large", "2", "8192", 16), sized("m5.4xlarge", "16", "65536", 110)}
	lts, err := NewResolver(WithNodeClassCEL(true, nil)).Resolve(nc, nodeClaim(), its, v1.CapacityTypeOnDemand, launchOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(lts) != 2 {
		t.Fatalf("templates %v, want one per type", summary(lts))
	}
	for i, want := range [][]string{{"--max-pods=16", "cpu=60m", "memory=176Mi"}, {"--max-pods=110", "cpu=480m", "memory=1216Mi"}} {
		for _, w := range want {
			if !strings.Contains(lts[i].UserData, w) {
				t.Errorf("template %d has no %q:\n%s", i, w, lts[i].UserData)
			}
		}
	}
}

package launchtemplate_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/instancetype"
	"github.com/karpenter-go/karpenter/pkg/providers/aws/internal/launchtest"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// celUserData launches m5.large and m5.4xlarge of an AL2023 class whose
// kubelet holds expressions, with the NodeClassCEL gate set to enabled, and
// returns the decoded user data of each launch template by its types.
func celUserData(t *testing.T, enabled bool, family string) map[string]string {
	t.Helper()
	env := launchtest.New(t, func(o *instancetype.Options) { o.NodeClassCEL = enabled })
	nc := env.NodeClass(t, "cel")
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: family + "@latest"}}
	env.Resolve(t, nc)
	kubelet := &awsv1.KubeletConfiguration{}
	if err := kubelet.UnmarshalJSON([]byte(`{"maxPods":"min(110, vcpus * 8)","kubeReserved":{"cpu":"max(60, vcpus * 30)","memory":"max_pods * 11"},"systemReserved":{"memory":"300Mi"}}`)); err != nil {
		t.Fatal(err)
	}
	nc.Spec.Kubelet = kubelet
	claim := launchtest.NodeClaim("claim", nc, []string{scheduling.CapacityTypeOnDemand}, "m5.large", "m5.4xlarge")
	claim.Spec.NodeClassRef.Name = nc.Name
	launches, err := env.LaunchTemplates.EnsureAll(context.Background(), nc, claim, env.InstanceTypesFor(t, nc, claim), "on-demand", "", env.Tags(nc, claim))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]string{}
	for _, lt := range env.Emulator.LaunchTemplates() {
		data, err := base64.StdEncoding.DecodeString(lt.UserData())
		if err != nil {
			t.Fatal(err)
		}
		byID[lt.ID] = string(data)
	}
	out := map[string]string{}
	for _, l := range launches {
		var names []string
		for _, it := range l.InstanceTypes {
			names = append(names, it.Name)
		}
		out[strings.Join(names, ",")] = byID[l.ID]
	}
	return out
}

// With NodeClassCEL on, m5.large and m5.4xlarge evaluate the class's
// expressions to different values (maxPods 16 and 110, kube-reserved cpu
// 60m and 480m, memory 176Mi and 1216Mi), so each gets a launch template of
// its own whose user data carries its values and no expression.
func TestKubeletExpressionsGiveEachTypeItsUserData(t *testing.T) {
	for _, c := range []struct {
		family string
		small  []string
		large  []string
	}{
		{"al2023", []string{"maxPods: 16", "cpu: 60m", "memory: 176Mi", "memory: 300Mi"}, []string{"maxPods: 110", "cpu: 480m", "memory: 1216Mi"}},
		{"bottlerocket", []string{"max-pods = 16", `cpu = "60m"`, `memory = "176Mi"`, `memory = "300Mi"`}, []string{"max-pods = 110", `cpu = "480m"`, `memory = "1216Mi"`}},
	} {
		t.Run(c.family, func(t *testing.T) {
			byTypes := celUserData(t, true, c.family)
			small, large := byTypes["m5.large"], byTypes["m5.4xlarge"]
			if len(byTypes) != 2 || small == "" || large == "" || small == large {
				t.Fatalf("launch templates by instance types %v, want one for each type with different user data", keys(byTypes))
			}
			for ud, want := range map[string][]string{small: c.small, large: c.large} {
				for _, w := range want {
					if !strings.Contains(ud, w) {
						t.Errorf("user data has no %q:\n%s", w, ud)
					}
				}
				if strings.Contains(ud, "vcpus") || strings.Contains(ud, "max_pods") {
					t.Errorf("an expression reached the user data:\n%s", ud)
				}
			}
		})
	}
}

// With the gate off (the default) the expressions are not honoured: both
// types get the family's defaults (their ENI-limited max pods, no
// kube-reserved from the class) and the static systemReserved, and no
// expression reaches the user data.
func TestKubeletExpressionsStayOutOfUserDataWithTheGateOff(t *testing.T) {
	byTypes := celUserData(t, false, "al2023")
	small, large := byTypes["m5.large"], byTypes["m5.4xlarge"]
	if small == "" || large == "" {
		t.Fatalf("launch templates by instance types %v", keys(byTypes))
	}
	for ud, pods := range map[string]string{small: "maxPods: 29", large: "maxPods: 234"} {
		if !strings.Contains(ud, pods) || !strings.Contains(ud, "memory: 300Mi") {
			t.Errorf("user data has no %q or no static systemReserved:\n%s", pods, ud)
		}
		if strings.Contains(ud, "vcpus") || strings.Contains(ud, "max_pods") || strings.Contains(ud, "kubeReserved") {
			t.Errorf("an expression reached the user data:\n%s", ud)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

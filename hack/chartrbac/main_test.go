package main

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/providers"
)

// TestTheChartHoldsTheRegistrysRules: the committed ClusterRole is what the
// registry's providers declare (make generate writes it).
func TestTheChartHoldsTheRegistrysRules(t *testing.T) {
	committed, err := os.ReadFile("../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != string(Render(providers.All())) {
		t.Fatalf("%s is stale: run make generate", path)
	}
}

type ruled struct {
	cloudprovider.Provider
	name  string
	rules []cloudprovider.ClusterRule
}

func (r ruled) Name() string                              { return r.name }
func (r ruled) ClusterRules() []cloudprovider.ClusterRule { return r.rules }
func (r ruled) AddFlags(*flag.FlagSet, cloudprovider.Env) {}
func (r ruled) New(context.Context, cloudprovider.Deps) (*cloudprovider.Bundle, error) {
	return nil, nil
}

func rule(group, resource string, why string) cloudprovider.ClusterRule {
	return cloudprovider.ClusterRule{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{"get"}}, Why: why}
}

// TestEachProviderGetsABranchAndTheDefaultIsTheFallback: a third provider's
// rules are rendered under its own name, the first provider's under else.
func TestEachProviderGetsABranchAndTheDefaultIsTheFallback(t *testing.T) {
	out := string(Render([]cloudprovider.Provider{
		ruled{name: "first", rules: []cloudprovider.ClusterRule{rule("first.example", "firstclasses", "Why the first needs it.")}},
		ruled{name: "second", rules: []cloudprovider.ClusterRule{rule("second.example", "secondclasses", "")}},
		ruled{name: "third", rules: []cloudprovider.ClusterRule{rule("third.example", "thirdclasses", "")}},
	}))
	want := []string{
		`{{- if eq .Values.cloudProvider "second" }}`,
		`  - apiGroups: ["second.example"]` + "\n" + `    resources: ["secondclasses"]` + "\n" + `    verbs: ["get"]`,
		`{{- else if eq .Values.cloudProvider "third" }}`,
		`resources: ["thirdclasses"]`,
		`{{- else }}`,
		`  # Why the first needs it.` + "\n" + `  - apiGroups: ["first.example"]`,
		`{{- end }}`,
		`kind: ClusterRoleBinding`,
	}
	at := 0
	for _, w := range want {
		i := strings.Index(out[at:], w)
		if i < 0 {
			t.Fatalf("missing, or out of order, %q in:\n%s", w, out)
		}
		at += i + len(w)
	}
}

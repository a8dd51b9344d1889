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

// TestTheChartHoldsTheRegistrysRules: the committed ClusterRoles are what
// the registry's providers declare (make generate writes them).
func TestTheChartHoldsTheRegistrysRules(t *testing.T) {
	for p, want := range map[string][]byte{path: Render(providers.All()), adminPath: RenderAdmin(providers.All())} {
		committed, err := os.ReadFile("../../" + p)
		if err != nil {
			t.Fatal(err)
		}
		if string(committed) != string(want) {
			t.Errorf("%s is stale: run make generate", p)
		}
	}
}

type ruled struct {
	cloudprovider.Provider
	name  string
	rules []cloudprovider.ClusterRule
	admin []cloudprovider.ClusterRule
}

func (r ruled) Name() string                              { return r.name }
func (r ruled) ClusterRules() []cloudprovider.ClusterRule { return r.rules }
func (r ruled) AdminRules() []cloudprovider.ClusterRule   { return r.admin }
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

// TestTheAdminRoleIsAggregatedAndBranchesByProvider: the admin ClusterRole
// carries the aggregation label, the core's rules for every provider, and
// each provider's own rules in its branch.
func TestTheAdminRoleIsAggregatedAndBranchesByProvider(t *testing.T) {
	out := string(RenderAdmin([]cloudprovider.Provider{
		ruled{name: "first", admin: []cloudprovider.ClusterRule{rule("first.example", "firstclasses", "")}},
		ruled{name: "second", admin: []cloudprovider.ClusterRule{rule("second.example", "secondclasses", "")}},
	}))
	want := []string{
		`kind: ClusterRole`,
		`name: {{ include "karpenter.fullname" . }}-admin`,
		`    rbac.authorization.k8s.io/aggregate-to-admin: "true"` + "\n" + `    {{- include "karpenter.labels" . | nindent 4 }}`,
		`rules:`,
		`  - apiGroups: ["karpenter.sh"]` + "\n" + `    resources: ["nodepools", "nodepools/status", "nodeclaims", "nodeclaims/status"]` + "\n" +
			`    verbs: ["get", "list", "watch", "create", "delete", "patch"]`,
		`{{- if eq .Values.cloudProvider "second" }}`,
		`resources: ["secondclasses"]`,
		`{{- else }}`,
		`resources: ["firstclasses"]`,
		`{{- end }}`,
	}
	at := 0
	for _, w := range want {
		i := strings.Index(out[at:], w)
		if i < 0 {
			t.Fatalf("missing, or out of order, %q in:\n%s", w, out)
		}
		at += i + len(w)
	}
	if strings.Contains(out, "ClusterRoleBinding") {
		t.Errorf("the aggregated role is bound to no one, but a binding is rendered:\n%s", out)
	}
}

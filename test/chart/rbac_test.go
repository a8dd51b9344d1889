package chart_test

import (
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"

	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/test/helm"
)

// rules are an RBAC object's rules as decoded from YAML.
func rules(t *testing.T, o *unstructured.Unstructured) []any {
	t.Helper()
	return nested(t, o, "rules").([]any)
}

func rule(groups, resources, verbs []any, names ...any) map[string]any {
	r := map[string]any{"apiGroups": groups, "resources": resources, "verbs": verbs}
	if len(names) > 0 {
		r["resourceNames"] = names
	}
	return r
}

var adminVerbs = []any{"get", "list", "watch", "create", "delete", "patch"}

// TestTheAdminRoleIsAggregatedToAdmin: the chart renders upstream's
// ClusterRole <fullname>-admin, labelled for aggregation into the cluster's
// admin role, so that users bound to admin manage NodePools, NodeClaims and
// the chosen provider's NodeClasses; nothing binds it directly.
func TestTheAdminRoleIsAggregatedToAdmin(t *testing.T) {
	t.Parallel()
	core := rule([]any{"karpenter.sh"}, []any{"nodepools", "nodepools/status", "nodeclaims", "nodeclaims/status"}, adminVerbs)
	for name, tc := range map[string]struct {
		args      []string
		role      string
		nodeClass map[string]any
	}{
		"aws": {args: []string{"--set", "settings.clusterName=dev"}, role: "karpenter-admin",
			nodeClass: rule([]any{"karpenter.k8s.aws"}, []any{"ec2nodeclasses"}, adminVerbs)},
		"kwok": {args: []string{"--set", "cloudProvider=kwok"}, role: "karpenter-admin",
			nodeClass: rule([]any{"karpenter.kwok.sh"}, []any{"kwoknodeclasses"}, adminVerbs)},
		"every value": {args: []string{"-f", "testdata/every-value.yaml"}, role: "kp-full-admin",
			nodeClass: rule([]any{"karpenter.k8s.aws"}, []any{"ec2nodeclasses"}, adminVerbs)},
	} {
		t.Run(name, func(t *testing.T) {
			objs := render(t, "karpenter", tc.args...)
			admin := find(t, objs, "ClusterRole", tc.role)
			if got := admin.GetLabels()["rbac.authorization.k8s.io/aggregate-to-admin"]; got != "true" {
				t.Errorf("aggregate-to-admin label %q, want \"true\" (labels %v)", got, admin.GetLabels())
			}
			if admin.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
				t.Errorf("the chart's labels missing: %v", admin.GetLabels())
			}
			if got, want := rules(t, admin), []any{core, tc.nodeClass}; !reflect.DeepEqual(got, want) {
				t.Errorf("rules\n%v\nwant upstream's\n%v", got, want)
			}
			for _, o := range objs {
				if ref, ok, _ := unstructured.NestedString(o.Object, "roleRef", "name"); ok && ref == tc.role {
					t.Errorf("%s/%s binds the aggregated role; only aggregation should use it", o.GetKind(), o.GetName())
				}
			}
		})
	}
}

// TestTheKubeDNSRole: with the AWS provider the chart renders upstream's Role
// and RoleBinding <fullname>-dns in kube-system, allowing only a get of the
// kube-dns Service to the chart's ServiceAccount; the KWOK provider, which
// reads no DNS address, gets neither.
func TestTheKubeDNSRole(t *testing.T) {
	t.Parallel()
	objs := render(t, "karpenter", "-f", "testdata/every-value.yaml")
	role := find(t, objs, "Role", "kp-full-dns")
	binding := find(t, objs, "RoleBinding", "kp-full-dns")
	for _, o := range []*unstructured.Unstructured{role, binding} {
		if o.GetNamespace() != "kube-system" {
			t.Errorf("%s %s in namespace %q, want kube-system", o.GetKind(), o.GetName(), o.GetNamespace())
		}
		if o.GetLabels()["app.kubernetes.io/name"] != "kp" || o.GetAnnotations()["owner"] != "platform@example.com" {
			t.Errorf("%s %s: the chart's labels and annotations missing: %v %v", o.GetKind(), o.GetName(), o.GetLabels(), o.GetAnnotations())
		}
	}
	if got, want := rules(t, role), []any{rule([]any{""}, []any{"services"}, []any{"get"}, "kube-dns")}; !reflect.DeepEqual(got, want) {
		t.Errorf("rules %v, want %v", got, want)
	}
	if got := nested(t, binding, "roleRef"); !reflect.DeepEqual(got, map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kp-full-dns"}) {
		t.Errorf("roleRef %v", got)
	}
	if got := nested(t, binding, "subjects"); !reflect.DeepEqual(got, []any{map[string]any{"kind": "ServiceAccount", "name": "kp-sa", "namespace": "karpenter"}}) {
		t.Errorf("subjects %v, want the chart's ServiceAccount", got)
	}
	for _, o := range render(t, "karpenter", "--set", "cloudProvider=kwok") {
		if o.GetNamespace() == "kube-system" {
			t.Errorf("%s %s/%s rendered for the KWOK provider", o.GetKind(), o.GetNamespace(), o.GetName())
		}
	}
}

// TestTheKubeDNSRoleGrantsTheProvidersRead applies the chart's ServiceAccount
// and its kube-system Role and RoleBinding to the API server, and has the AWS
// provider's own look-up (aws.KubeDNSIP) read the kube-dns Service with a
// token of that account: refused before the Role exists, the ClusterIP once it
// does; any other Service of kube-system, or a list, stays refused.
func TestTheKubeDNSRoleGrantsTheProvidersRead(t *testing.T) {
	ctx := context.Background()
	const ns = "dnsrbac"
	objs, err := helm.Template("karpenter", ns, ns, "--set", "settings.clusterName=dev")
	if err != nil {
		t.Fatal(err)
	}
	if err := client.IgnoreAlreadyExists(e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
		t.Fatal(err)
	}
	dns := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}},
	}
	other := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "metrics-server"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}
	const fullname = ns + "-karpenter" // release dnsrbac
	role, binding := find(t, objs, "Role", fullname+"-dns"), find(t, objs, "RoleBinding", fullname+"-dns")
	for _, o := range []client.Object{dns, other} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{dns, other, role, binding} {
			if err := client.IgnoreNotFound(e.Client.Delete(ctx, o)); err != nil {
				t.Error(err)
			}
		}
	})
	applyAll(ctx, t, []*unstructured.Unstructured{find(t, objs, "ServiceAccount", fullname)}, true)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := e.Client.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fullname}}, tr); err != nil {
		t.Fatal(err)
	}
	saConfig := rest.AnonymousClientConfig(e.Config)
	saConfig.BearerToken = tr.Status.Token
	sa, err := client.New(saConfig, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aws.KubeDNSIP(ctx, sa); !apierrors.IsForbidden(err) {
		t.Fatalf("reading kube-dns without the Role: %v, want forbidden (else the check below proves nothing)", err)
	}

	applyAll(ctx, t, []*unstructured.Unstructured{role, binding}, true)
	Eventually(t, 30*time.Second, func() error {
		ip, err := aws.KubeDNSIP(ctx, sa)
		if err != nil {
			return err
		}
		if ip.String() != dns.Spec.ClusterIP {
			return fmt.Errorf("read %s, want the Service's ClusterIP %s", ip, dns.Spec.ClusterIP)
		}
		return nil
	})
	if err := sa.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Service{}); !apierrors.IsForbidden(err) {
		t.Errorf("get of another kube-system Service: %v, want forbidden", err)
	}
	if err := sa.List(ctx, &corev1.ServiceList{}, client.InNamespace("kube-system")); !apierrors.IsForbidden(err) {
		t.Errorf("list of kube-system Services: %v, want forbidden", err)
	}
}

// grants are the (apiGroup, resource, verb) triples of a ClusterRole's rules
// on the given resources.
func grants(t *testing.T, role *unstructured.Unstructured, resources map[string]bool) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, r := range rules(t, role) {
		m := r.(map[string]any)
		if _, named := m["resourceNames"]; named {
			continue
		}
		for _, g := range m["apiGroups"].([]any) {
			for _, res := range m["resources"].([]any) {
				if !resources[res.(string)] {
					continue
				}
				for _, v := range m["verbs"].([]any) {
					out[fmt.Sprintf("%s %s %s", g, res, v)] = true
				}
			}
		}
	}
	return out
}

// TestCoreRoleGrantsUpstreamsRulesForOverlaysAndBuffers: on NodeOverlays,
// CapacityBuffers and the PodTemplates buffers name, the core ClusterRole
// grants exactly what upstream v1.15.2's does, and the aggregated admin role
// exactly what upstream's does (nothing).
func TestCoreRoleGrantsUpstreamsRulesForOverlaysAndBuffers(t *testing.T) {
	upDir := upstreamChart(t)
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("settings:\n  clusterName: dev\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resources := map[string]bool{
		"nodeoverlays": true, "nodeoverlays/status": true,
		"capacitybuffers": true, "capacitybuffers/status": true,
		"podtemplates": true,
	}
	ours, err := renderDir(chartDir("karpenter"), values)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := renderDir(upDir, values)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"karpenter-core", "karpenter-admin"} {
		got, want := grants(t, find(t, ours, "ClusterRole", role), resources), grants(t, find(t, theirs, "ClusterRole", role), resources)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s grants %v, want upstream's %v", role, keys(got), keys(want))
		}
		if role == "karpenter-core" && len(want) < 10 {
			t.Errorf("upstream's %s grants only %v on these resources", role, keys(want))
		}
	}
}

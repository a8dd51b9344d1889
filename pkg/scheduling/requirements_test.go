package scheduling_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func req(key string, op corev1.NodeSelectorOperator, vals ...string) scheduling.Requirement {
	return scheduling.NewRequirement(key, op, vals...)
}

const (
	in     = corev1.NodeSelectorOpIn
	notIn  = corev1.NodeSelectorOpNotIn
	exists = corev1.NodeSelectorOpExists
	dne    = corev1.NodeSelectorOpDoesNotExist
	gt     = corev1.NodeSelectorOpGt
	lt     = corev1.NodeSelectorOpLt
)

func TestRequirementIntersect(t *testing.T) {
	cases := []struct {
		name string
		a, b scheduling.Requirement
		want string
	}{
		{"in/in overlap", req("k", in, "a", "b"), req("k", in, "b", "c"), "In [b]"},
		{"in/in disjoint", req("k", in, "a"), req("k", in, "c"), "DoesNotExist"},
		{"in/in same", req("k", in, "b", "a"), req("k", in, "a", "b"), "In [a b]"},
		{"in/notin", req("k", in, "a", "b"), req("k", notIn, "a"), "In [b]"},
		{"notin/in", req("k", notIn, "a"), req("k", in, "a", "c"), "In [c]"},
		{"notin/notin", req("k", notIn, "a"), req("k", notIn, "b"), "NotIn [a b]"},
		{"exists/in", req("k", exists), req("k", in, "x"), "In [x]"},
		{"exists/exists", req("k", exists), req("k", exists), "Exists"},
		{"exists/notin", req("k", exists), req("k", notIn, "x"), "NotIn [x]"},
		{"dne/in", req("k", dne), req("k", in, "x"), "DoesNotExist"},
		{"dne/notin", req("k", dne), req("k", notIn, "x"), "DoesNotExist"},
		{"dne/exists", req("k", dne), req("k", exists), "DoesNotExist"},
		{"gt/in filters", req("k", gt, "2"), req("k", in, "1", "3", "x"), "In [3]"},
		{"lt/in filters", req("k", lt, "3"), req("k", in, "1", "3", "5"), "In [1]"},
		{"gt/lt range", req("k", gt, "2"), req("k", lt, "8"), "Gt 2 Lt 8"},
		{"gt/lt empty range", req("k", gt, "5"), req("k", lt, "6"), "DoesNotExist"},
		{"gt/gt keeps larger", req("k", gt, "2"), req("k", gt, "5"), "Gt 5"},
		{"lt/lt keeps smaller", req("k", lt, "2"), req("k", lt, "5"), "Lt 2"},
		{"gte is gt minus one", req("k", scheduling.OpGte, "4"), req("k", in, "3", "4", "5"), "In [4 5]"},
		{"lte is lt plus one", req("k", scheduling.OpLte, "4"), req("k", in, "3", "4", "5"), "In [3 4]"},
		{"gt/notin", req("k", gt, "1"), req("k", notIn, "4"), "Gt 1 NotIn [4]"},
		{"gt malformed is empty", req("k", gt, "x"), req("k", in, "1"), "DoesNotExist"},
		{"in empty values", req("k", in), req("k", exists), "DoesNotExist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.a.Intersect(c.b).String(); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if got := c.b.Intersect(c.a).String(); got != c.want {
				t.Fatalf("not commutative: got %q, want %q", got, c.want)
			}
		})
	}
}

func TestRequirementHas(t *testing.T) {
	cases := []struct {
		name  string
		r     scheduling.Requirement
		value string
		want  bool
	}{
		{"in has member", req("k", in, "a", "b"), "b", true},
		{"in lacks other", req("k", in, "a", "b"), "c", false},
		{"notin excludes", req("k", notIn, "a"), "a", false},
		{"notin allows other", req("k", notIn, "a"), "z", true},
		{"exists allows all", req("k", exists), "q", true},
		{"dne allows none", req("k", dne), "q", false},
		{"gt above", req("k", gt, "4"), "5", true},
		{"gt equal", req("k", gt, "4"), "4", false},
		{"gt non-integer", req("k", gt, "4"), "five", false},
		{"lt below", req("k", lt, "4"), "3", true},
		{"many values binary search", req("k", in, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"), "m", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.Has(c.value); got != c.want {
				t.Fatalf("Has(%q) = %v, want %v", c.value, got, c.want)
			}
		})
	}
}

func TestRequirementsCompatible(t *testing.T) {
	wellKnown := func(k string) bool { return k == scheduling.LabelZone }
	rs := scheduling.NewRequirements
	cases := []struct {
		name      string
		node, pod scheduling.Requirements
		undefined func(string) bool
		wantErr   string // "" means compatible
	}{
		{"same value", rs(req("zone", in, "a")), rs(req("zone", in, "a")), nil, ""},
		{"conflict names key and both sides", rs(req("zone", in, "a", "b")), rs(req("zone", in, "z")), nil, `requires zone In [z], but zone allows In [a b]`},
		{"pod notin vs node in", rs(req("zone", in, "a")), rs(req("zone", notIn, "a")), nil, "requires zone NotIn [a]"},
		{"both negative never conflict", rs(req("zone", notIn, "a")), rs(req("zone", dne)), nil, ""},
		{"node dne vs pod notin", rs(req("k", dne)), rs(req("k", notIn, "x")), nil, ""},
		{"node dne vs pod in", rs(req("k", dne)), rs(req("k", in, "x")), nil, "requires k In [x]"},
		{"undefined custom key", rs(), rs(req("team", in, "red")), nil, `label "team" does not have known values`},
		{"undefined custom key negative ok", rs(), rs(req("team", notIn, "red")), nil, ""},
		{"undefined dne ok", rs(), rs(req("team", dne)), nil, ""},
		{"undefined exists fails", rs(), rs(req("team", exists)), nil, `label "team" does not have known values`},
		{"undefined well-known ok", rs(), rs(req(scheduling.LabelZone, in, "a")), wellKnown, ""},
		{"gt against node value", rs(req("cpu", in, "8")), rs(req("cpu", gt, "4")), nil, ""},
		{"gt against small node value", rs(req("cpu", in, "2")), rs(req("cpu", gt, "4")), nil, "requires cpu Gt 4"},
		{"lt against gt disjoint", rs(req("cpu", gt, "8")), rs(req("cpu", lt, "4")), nil, "requires cpu Lt 4"},
		{"exists vs in", rs(req("k", exists)), rs(req("k", in, "v")), nil, ""},
		{"several keys second conflicts", rs(req("a", in, "1"), req("b", in, "2")), rs(req("a", in, "1"), req("b", in, "3")), nil, "requires b In [3]"},
		{"extra node keys ignored", rs(req("a", in, "1"), req("z", in, "2")), rs(req("a", in, "1")), nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.node.Compatible(c.pod, c.undefined)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want containing %q", err, c.wantErr)
			}
		})
	}
}

func TestRequirementsConversions(t *testing.T) {
	r := scheduling.FromNodeSelectorRequirements(
		corev1.NodeSelectorRequirement{Key: "b", Operator: in, Values: []string{"2", "1"}},
		corev1.NodeSelectorRequirement{Key: "a", Operator: exists},
		corev1.NodeSelectorRequirement{Key: "b", Operator: notIn, Values: []string{"2"}},
	)
	if got := r.String(); got != "a Exists, b In [1]" {
		t.Fatalf("merged repeated keys: %q", got)
	}
	if got := scheduling.FromLabels(map[string]string{"y": "2", "x": "1"}).String(); got != "x In [1], y In [2]" {
		t.Fatalf("FromLabels: %q", got)
	}
	if got := r.Labels(); got["b"] != "1" || len(got) != 1 {
		t.Fatalf("Labels: %v", got)
	}
	back := scheduling.FromNodeSelectorRequirements(r.NodeSelectorRequirements()...)
	if back.String() != r.String() {
		t.Fatalf("round trip %q != %q", back, r)
	}
	rng := scheduling.NewRequirements(req("c", gt, "1"), req("c", lt, "9"))
	if back := scheduling.FromNodeSelectorRequirements(rng.NodeSelectorRequirements()...); back.String() != "c Gt 1 Lt 9" {
		t.Fatalf("range round trip %q", back)
	}
	if got := r.Without("a").String(); got != "b In [1]" {
		t.Fatalf("Without: %q", got)
	}
}

func TestTolerations(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name string
		tol  corev1.Toleration
		want bool
	}{
		{"equal match", corev1.Toleration{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, true},
		{"default operator is equal", corev1.Toleration{Key: "dedicated", Value: "gpu"}, true},
		{"wrong value", corev1.Toleration{Key: "dedicated", Value: "cpu"}, false},
		{"exists on key", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}, true},
		{"exists wildcard", corev1.Toleration{Operator: corev1.TolerationOpExists}, true},
		{"wrong effect", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, false},
		{"other key", corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}, false},
		{"empty key equal is invalid", corev1.Toleration{Value: "gpu"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := scheduling.Tolerates(c.tol, taint); got != c.want {
				t.Fatalf("got %v want %v", got, c.want)
			}
		})
	}
	pns := corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}
	if err := scheduling.ToleratesTaints(nil, []corev1.Taint{pns}, false); err != nil {
		t.Fatalf("PreferNoSchedule should be ignored when soft: %v", err)
	}
	if err := scheduling.ToleratesTaints(nil, []corev1.Taint{pns}, true); err == nil || !strings.Contains(err.Error(), "soft") {
		t.Fatalf("PreferNoSchedule should be hard before relaxation, got %v", err)
	}
	if !scheduling.IsEphemeralTaint(corev1.Taint{Key: "readiness.k8s.io/network"}) || scheduling.IsEphemeralTaint(taint) {
		t.Fatal("ephemeral taint detection")
	}
}

func TestPodRequests(t *testing.T) {
	q := resource.MustParse
	always := corev1.ContainerRestartPolicyAlways
	c := func(cpu string) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q(cpu)}}}
	}
	cases := []struct {
		name string
		spec corev1.PodSpec
		want string
	}{
		{"sum of containers", corev1.PodSpec{Containers: []corev1.Container{c("1"), c("500m")}}, "1500m"},
		{"init larger wins", corev1.PodSpec{Containers: []corev1.Container{c("1")}, InitContainers: []corev1.Container{c("3")}}, "3"},
		{"init smaller ignored", corev1.PodSpec{Containers: []corev1.Container{c("2")}, InitContainers: []corev1.Container{c("1")}}, "2"},
		{"sidecar adds", corev1.PodSpec{Containers: []corev1.Container{c("1")}, InitContainers: []corev1.Container{func() corev1.Container { x := c("1"); x.RestartPolicy = &always; return x }()}}, "2"},
		{"overhead adds", corev1.PodSpec{Containers: []corev1.Container{c("1")}, Overhead: corev1.ResourceList{corev1.ResourceCPU: q("250m")}}, "1250m"},
		{"limit without request", corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("2")}}}}}, "2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := scheduling.PodRequests(&corev1.Pod{Spec: tc.spec})[corev1.ResourceCPU]
			if got.Cmp(q(tc.want)) != 0 {
				t.Fatalf("cpu %s, want %s", got.String(), tc.want)
			}
		})
	}
}

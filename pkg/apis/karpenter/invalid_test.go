package karpenter_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodepool"
	"github.com/karpenter-go/karpenter/pkg/test/expectations"
)

const baseNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: invalid
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
`

const baseNodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: invalid
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
    - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
`

type invalidCase struct {
	name string
	base string
	// patch is YAML merged over base; a key whose value is null is removed.
	patch string
	// field must be named by the rejection: the cause's field path or the message.
	field string
	// message is a substring of the rejection message.
	message string
}

var invalidCases = []invalidCase{
	// Restricted label domains and keys in requirements.
	{"requirement on kubernetes.io/hostname", baseNodePool, `spec: {template: {spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]}}}`,
		"spec.template.spec.requirements[0].key", `label "kubernetes.io/hostname" is restricted`},
	{"requirement in karpenter.sh domain", baseNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.sh/initialized, operator: Exists}]}}}`,
		"spec.template.spec.requirements[0].key", `label domain "karpenter.sh" is restricted`},
	{"requirement on karpenter.sh/nodepool in a NodePool", baseNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [x]}]}}}`,
		"spec.template.spec.requirements", `label "karpenter.sh/nodepool" is restricted`},
	{"requirement on unknown karpenter.k8s.aws label", baseNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/unknown, operator: Exists}]}}}`,
		"spec.template.spec.requirements[0].key", `label domain "karpenter.k8s.aws" is restricted`},
	{"requirement key not a qualified name", baseNodePool, `spec: {template: {spec: {requirements: [{key: "bad key!", operator: Exists}]}}}`,
		"spec.template.spec.requirements[0].key", "should match"},
	{"requirement with unknown operator", baseNodePool, `spec: {template: {spec: {requirements: [{key: example.com/x, operator: Gtx, values: ["1"]}]}}}`,
		"spec.template.spec.requirements[0].operator", "Unsupported value"},
	// Operator/value rules.
	{"In without values", baseNodePool, `spec: {template: {spec: {requirements: [{key: example.com/x, operator: In}]}}}`,
		"spec.template.spec.requirements", "requirements: operator 'In' needs at least one value"},
	{"Gt with two values", baseNodePool, `spec: {template: {spec: {requirements: [{key: example.com/x, operator: Gt, values: ["1", "2"]}]}}}`,
		"spec.template.spec.requirements", "requirements: operators 'Gt', 'Lt', 'Gte' and 'Lte' need exactly one value, a non-negative integer"},
	{"Lt with a non-integer", baseNodePool, `spec: {template: {spec: {requirements: [{key: example.com/x, operator: Lt, values: ["abc"]}]}}}`,
		"spec.template.spec.requirements", "requirements: operators 'Gt', 'Lt', 'Gte' and 'Lte'"},
	{"minValues above number of values", baseNodePool, `spec: {template: {spec: {requirements: [{key: example.com/x, operator: In, values: [a, b], minValues: 3}]}}}`,
		"spec.template.spec.requirements", "requirements: 'minValues' cannot exceed the number of values listed"},
	{"minValues above 50", baseNodePool, `spec: {template: {spec: {requirements: [{key: example.com/x, operator: Exists, minValues: 51}]}}}`,
		"spec.template.spec.requirements[0].minValues", "less than or equal to 50"},
	// Labels.
	{"label kubernetes.io/hostname", baseNodePool, `spec: {template: {metadata: {labels: {kubernetes.io/hostname: a}}}}`,
		"spec.template.metadata.labels", `label "kubernetes.io/hostname" is restricted`},
	{"label karpenter.sh/nodepool", baseNodePool, `spec: {template: {metadata: {labels: {karpenter.sh/nodepool: a}}}}`,
		"spec.template.metadata.labels", `label "karpenter.sh/nodepool" is restricted`},
	{"label in karpenter.sh domain", baseNodePool, `spec: {template: {metadata: {labels: {karpenter.sh/registered: "true"}}}}`,
		"spec.template.metadata.labels", `label domain "karpenter.sh" is restricted`},
	{"label value invalid", baseNodePool, `spec: {template: {metadata: {labels: {team: "-bad-"}}}}`,
		"spec.template.metadata.labels.team", "should match"},
	// Taints.
	{"taint with bad effect", baseNodePool, `spec: {template: {spec: {taints: [{key: a, effect: NoWay}]}}}`,
		"spec.template.spec.taints[0].effect", "Unsupported value"},
	{"startup taint with bad effect", baseNodePool, `spec: {template: {spec: {startupTaints: [{key: a, effect: Sometimes}]}}}`,
		"spec.template.spec.startupTaints[0].effect", "Unsupported value"},
	{"taint without key", baseNodePool, `spec: {template: {spec: {taints: [{key: "", effect: NoSchedule}]}}}`,
		"spec.template.spec.taints[0].key", "at least 1 chars long"},
	// Disruption.
	{"budget nodes not a count or percent", baseNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "ten"}]}}`,
		"spec.disruption.budgets[0].nodes", "should match"},
	{"budget nodes above 100%", baseNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "101%"}]}}`,
		"spec.disruption.budgets[0].nodes", "should match"},
	{"budget schedule without duration", baseNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", schedule: "@daily"}]}}`,
		"spec.disruption.budgets", "budgets: 'schedule' must be set with 'duration'"},
	{"budget duration without schedule", baseNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", duration: 1h}]}}`,
		"spec.disruption.budgets", "budgets: 'schedule' must be set with 'duration'"},
	{"budget schedule not cron", baseNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", schedule: "every day", duration: 1h}]}}`,
		"spec.disruption.budgets[0].schedule", "should match"},
	{"budget schedule with four fields", baseNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", schedule: "0 9 * *", duration: 1h}]}}`,
		"spec.disruption.budgets[0].schedule", "should match"},
	{"budget duration in seconds", baseNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", schedule: "@daily", duration: 30s}]}}`,
		"spec.disruption.budgets[0].duration", "should match"},
	{"budget with unknown reason", baseNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", reasons: [Expired]}]}}`,
		"spec.disruption.budgets[0].reasons[0]", "Unsupported value"},
	{"unknown consolidation policy", baseNodePool, `spec: {disruption: {consolidateAfter: 0s, consolidationPolicy: WhenUnderutilized}}`,
		"spec.disruption.consolidationPolicy", "Unsupported value"},
	{"consolidateAfter not a duration", baseNodePool, `spec: {disruption: {consolidateAfter: 10d}}`,
		"spec.disruption.consolidateAfter", "should match"},
	{"expireAfter not a duration", baseNodePool, `spec: {template: {spec: {expireAfter: forever}}}`,
		"spec.template.spec.expireAfter", "should match"},
	{"terminationGracePeriod Never", baseNodePool, `spec: {template: {spec: {terminationGracePeriod: Never}}}`,
		"spec.template.spec.terminationGracePeriod", "should match"},
	// Weight.
	{"weight 0", baseNodePool, `spec: {weight: 0}`, "spec.weight", "greater than or equal to 1"},
	{"weight 101", baseNodePool, `spec: {weight: 101}`, "spec.weight", "less than or equal to 100"},
	// NodeClassRef.
	{"nodeClassRef without group", baseNodePool, `spec: {template: {spec: {nodeClassRef: {group: null}}}}`,
		"spec.template.spec.nodeClassRef.group", "Required value"},
	{"nodeClassRef empty kind", baseNodePool, `spec: {template: {spec: {nodeClassRef: {kind: ""}}}}`,
		"spec.template.spec.nodeClassRef.kind", "nodeClassRef.kind may not be empty"},
	{"nodeClassRef group with version", baseNodePool, `spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws/v1}}}}`,
		"spec.template.spec.nodeClassRef.group", "should match"},
	{"requirements missing", baseNodePool, `spec: {template: {spec: {requirements: null}}}`,
		"spec.template.spec.requirements", "Required value"},
	// NodeClaim.
	{"NodeClaim requirement on hostname", baseNodeClaim, `spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]}`,
		"spec.requirements[0].key", `label "kubernetes.io/hostname" is restricted`},
	{"NodeClaim In without values", baseNodeClaim, `spec: {requirements: [{key: example.com/a, operator: In, values: []}]}`,
		"spec.requirements", "requirements: operator 'In' needs at least one value"},
	{"NodeClaim taint bad effect", baseNodeClaim, `spec: {taints: [{key: a, effect: Never}]}`,
		"spec.taints[0].effect", "Unsupported value"},
	{"NodeClaim without nodeClassRef", baseNodeClaim, `spec: {nodeClassRef: null}`,
		"spec.nodeClassRef", "Required value"},
	{"NodeClaim bad terminationGracePeriod", baseNodeClaim, `spec: {terminationGracePeriod: 1d}`,
		"spec.terminationGracePeriod", "should match"},
}

// TestInvalidManifestsRejected creates each invalid manifest against the real
// apiserver and asserts it is rejected naming the offending field.
func TestInvalidManifestsRejected(t *testing.T) {
	e := environment(t)
	if len(invalidCases) < 25 {
		t.Fatalf("only %d invalid cases", len(invalidCases))
	}
	ctx := context.Background()
	for i, tc := range invalidCases {
		t.Run(tc.name, func(t *testing.T) {
			obj := expectations.Manifest(t, tc.base, tc.patch)
			obj.SetName(fmt.Sprintf("invalid-%d", i))
			err := e.Client.Create(ctx, obj)
			if err == nil {
				_ = e.Client.Delete(ctx, obj)
				t.Fatalf("accepted, want rejection naming %s", tc.field)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !expectations.NamesField(err, tc.field, tc.message) {
				t.Fatalf("rejection does not name %q with %q:\n%v", tc.field, tc.message, err)
			}
		})
	}
}

// The budget fields' patterns are upstream's; these are accepted by the real
// apiserver. (A few of them, such as a backwards range, are caught by the
// NodePool validation controller with the disruption controller's own parser.)
func TestBudgetRulesAcceptWhatThePatternsAccepted(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	schedules := []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
		"* * * * *", "0 9 * * mon-fri", "*/30 * * * *", "0,30 9-17 * * *", "5-10/5 0 1 jan-mar ?", "0 0 ? * SUN",
		"0 0 1,15 * *", "59 23 31 12 6", "00 09 01 01 0", "10-40/10 */2 1-7 */3 mon,wed,fri", "5-1 * * * *", "0 0 31 2 *"}
	durations := []string{"1h", "30m", "1h30m", "10h0m0s", "90m"}
	nodes := []string{"0", "5", "100", "0%", "10%", "100%", "1000"}
	n := 0
	try := func(what, patch string) {
		t.Helper()
		obj := expectations.Manifest(t, baseNodePool, patch)
		n++
		obj.SetName(fmt.Sprintf("valid-%d", n))
		if err := e.Client.Create(ctx, obj, client.DryRunAll); err != nil {
			t.Errorf("%s rejected: %v", what, err)
		}
	}
	for _, s := range schedules {
		try("schedule "+s, fmt.Sprintf(`spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", schedule: %q, duration: 1h}]}}`, s))
	}
	for _, d := range durations {
		try("duration "+d, fmt.Sprintf(`spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", schedule: "@daily", duration: %q}]}}`, d))
	}
	for _, v := range nodes {
		try("nodes "+v, fmt.Sprintf(`spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: %q}]}}`, v))
	}
	for _, d := range []string{"0s", "30s", "1h30m", "Never"} {
		try("consolidateAfter "+d, fmt.Sprintf(`spec: {disruption: {consolidateAfter: %q}, template: {spec: {expireAfter: %q}}}`, d, d))
	}
}

// reportedCases are NodePools upstream's CRD admits (so ours must too: a
// manifest that applies there applies here) but that no node can be launched
// from. The NodePool validation controller reports each as
// ValidationSucceeded=False, naming the field, as upstream's does.
var reportedCases = []invalidCase{
	{"requirement in kubernetes.io domain", baseNodePool, `spec: {template: {spec: {requirements: [{key: kubernetes.io/custom, operator: Exists}]}}}`,
		"spec.template.spec.requirements[0]", `label domain "kubernetes.io" is restricted`},
	{"requirement in k8s.io domain", baseNodePool, `spec: {template: {spec: {requirements: [{key: foo.k8s.io/x, operator: Exists}]}}}`,
		"spec.template.spec.requirements[0]", `label domain "k8s.io" is restricted`},
	{"requirement value with a space", baseNodePool, `spec: {template: {spec: {requirements: [{key: example.com/x, operator: In, values: ["a b"]}]}}}`,
		"spec.template.spec.requirements[0]", `invalid value "a b"`},
	{"requirement value too long", baseNodePool, `spec: {template: {spec: {requirements: [{key: example.com/x, operator: In, values: ["` + strings.Repeat("a", 64) + `"]}]}}}`,
		"spec.template.spec.requirements[0]", "must be no more than 63"},
	{"label in kubernetes.io domain", baseNodePool, `spec: {template: {metadata: {labels: {kubernetes.io/role: x}}}}`,
		"spec.template.metadata.labels[kubernetes.io/role]", `label domain "kubernetes.io" is restricted`},
	{"label key not a qualified name", baseNodePool, `spec: {template: {metadata: {labels: {"a/b/c": x}}}}`,
		"spec.template.metadata.labels[a/b/c]", "invalid key"},
	{"budget schedule minute out of range", baseNodePool, `spec: {disruption: {budgets: [{nodes: "1", schedule: "99 * * * *", duration: 1h}]}}`,
		"spec.disruption.budgets[0]", "99"},
	{"budget schedule unknown weekday", baseNodePool, `spec: {disruption: {budgets: [{nodes: "1", schedule: "0 9 * * funday", duration: 1h}]}}`,
		"spec.disruption.budgets[0]", "funday"},
	{"budget schedule with step zero", baseNodePool, `spec: {disruption: {budgets: [{nodes: "1", schedule: "*/0 * * * *", duration: 1h}]}}`,
		"spec.disruption.budgets[0]", "spec.disruption.budgets[0]"},
}

// TestUpstreamAdmittedManifestsAreReported: each reported case is admitted by
// the real apiserver and RuntimeValidate, what the NodePool validation
// controller sets ValidationSucceeded from, names the field.
func TestUpstreamAdmittedManifestsAreReported(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	for i, tc := range reportedCases {
		t.Run(tc.name, func(t *testing.T) {
			obj := expectations.Manifest(t, tc.base, tc.patch)
			obj.SetName(fmt.Sprintf("reported-%d", i))
			if err := e.Client.Create(ctx, obj, client.DryRunAll); err != nil {
				t.Fatalf("rejected at admission, upstream's CRD admits it: %v", err)
			}
			np := &v1.NodePool{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, np); err != nil {
				t.Fatal(err)
			}
			err := nodepool.RuntimeValidate(np)
			if err == nil {
				t.Fatalf("RuntimeValidate accepts it, want a report naming %s", tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("report does not name %q with %q:\n%v", tc.field, tc.message, err)
			}
		})
	}
}

// TestUpstreamOnlyFieldsAdmitted: fields and values upstream v1.15 added are
// admitted: Balanced, Gte/Lte, the Unhealthy budget reason, replicas, Exists
// with values, and a disruption block without consolidateAfter, defaulted to 0s.
func TestUpstreamOnlyFieldsAdmitted(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	patches := []string{
		`spec: {disruption: {consolidationPolicy: Balanced}}`,
		`spec: {template: {spec: {requirements: [{key: example.com/x, operator: Gte, values: ["2"]}, {key: example.com/y, operator: Lte, values: ["8"]}]}}}`,
		`spec: {disruption: {budgets: [{nodes: "1", reasons: [Unhealthy, Drifted, Empty, Underutilized]}]}}`,
		`spec: {replicas: 3, limits: {nodes: "5"}}`,
		`spec: {template: {spec: {requirements: [{key: example.com/x, operator: Exists, values: [a]}]}}}`,
	}
	for i, p := range patches {
		obj := expectations.Manifest(t, baseNodePool, p)
		obj.SetName(fmt.Sprintf("upstream-only-%d", i))
		if err := e.Client.Create(ctx, obj, client.DryRunAll); err != nil {
			t.Errorf("%s: rejected: %v", p, err)
		}
	}
	obj := expectations.Manifest(t, baseNodePool, `spec: {disruption: {consolidationPolicy: WhenEmpty}}`)
	obj.SetName("defaulted-consolidate-after")
	if err := e.Client.Create(ctx, obj, client.DryRunAll); err != nil {
		t.Fatalf("disruption without consolidateAfter rejected: %v", err)
	}
	if got, _, _ := unstructured.NestedString(obj.Object, "spec", "disruption", "consolidateAfter"); got != "0s" {
		t.Errorf("consolidateAfter defaulted to %q, want 0s", got)
	}
}

// TestStaticNodePoolTransitionsRejected: a NodePool cannot switch between
// static and dynamic, and a static one takes no weight and no limit but nodes.
func TestStaticNodePoolTransitionsRejected(t *testing.T) {
	e := environment(t)
	ctx := context.Background()
	for _, tc := range []invalidCase{
		{"static with weight", baseNodePool, `spec: {replicas: 1, weight: 10}`, "spec", "weight: a static NodePool"},
		{"static with a cpu limit", baseNodePool, `spec: {replicas: 1, limits: {cpu: "10"}}`, "spec", "limits: a static NodePool"},
		{"negative replicas", baseNodePool, `spec: {replicas: -1}`, "spec.replicas", "greater than or equal to 0"},
	} {
		obj := expectations.Manifest(t, tc.base, tc.patch)
		obj.SetName("static-invalid")
		err := e.Client.Create(ctx, obj, client.DryRunAll)
		if err == nil || !expectations.NamesField(err, tc.field, tc.message) {
			t.Errorf("%s: want a rejection naming %s with %q, got %v", tc.name, tc.field, tc.message, err)
		}
	}
	dynamic := expectations.Manifest(t, baseNodePool, `{}`)
	dynamic.SetName("becomes-static")
	if err := e.Client.Create(ctx, dynamic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, dynamic) })
	if err := unstructured.SetNestedField(dynamic.Object, int64(2), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	err := e.Client.Update(ctx, dynamic, client.DryRunAll)
	if err == nil || !expectations.NamesField(err, "spec", "replicas cannot be added to or removed from") {
		t.Fatalf("dynamic -> static: want a rejection, got %v", err)
	}
}

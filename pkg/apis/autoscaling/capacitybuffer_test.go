// Package autoscaling_test tests the autoscaling.x-k8s.io CRDs on a real
// apiserver.
package autoscaling_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	"github.com/karpenter-go/karpenter/pkg/test/expectations"
)

var testEnv *env.Environment

func TestMain(m *testing.M) { env.Main(m, &testEnv) }

// TestCapacityBufferRoundTrips stores CapacityBuffers with every spec field
// set through the typed client and reads them back unchanged (the default
// provisioning strategy filled in), then writes every status field through
// the status subresource and reads it back.
func TestCapacityBufferRoundTrips(t *testing.T) {
	e := testEnv
	ctx := context.Background()
	scalable := &v1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "scalable"},
		Spec: v1beta1.CapacityBufferSpec{
			ProvisioningStrategy: ptr.To("example.com/custom"),
			ScalableRef:          &v1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "web"},
			Replicas:             ptr.To[int32](3),
			Percentage:           ptr.To[int32](20),
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("8Gi"),
				"nvidia.com/gpu":      resource.MustParse("1"),
			},
		},
	}
	templated := &v1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "templated"},
		Spec: v1beta1.CapacityBufferSpec{
			PodTemplateRef: &v1beta1.LocalObjectRef{Name: "buffer-pod"},
			Replicas:       ptr.To[int32](0),
		},
	}
	for _, cb := range []*v1beta1.CapacityBuffer{scalable, templated} {
		want := cb.Spec.DeepCopy()
		if want.ProvisioningStrategy == nil {
			want.ProvisioningStrategy = ptr.To(v1beta1.ActiveProvisioningStrategy)
		}
		if err := e.Client.Create(ctx, cb); err != nil {
			t.Fatalf("%s: %v", cb.Name, err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(ctx, cb) })
		got := &v1beta1.CapacityBuffer{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cb), got); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(&got.Spec, want) {
			t.Errorf("%s: spec read back\n%+v\nwant\n%+v", cb.Name, got.Spec, *want)
		}
	}

	got := &v1beta1.CapacityBuffer{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(templated), got); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(metav1.Now().Rfc3339Copy().Time)
	wantStatus := v1beta1.CapacityBufferStatus{
		PodTemplateRef:        &v1beta1.LocalObjectRef{Name: "buffer-pod"},
		Replicas:              ptr.To[int32](2),
		PodTemplateGeneration: ptr.To[int64](7),
		ProvisioningStrategy:  ptr.To(v1beta1.ActiveProvisioningStrategy),
		Conditions: []metav1.Condition{
			{Type: v1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionTrue, ObservedGeneration: got.Generation, LastTransitionTime: now, Reason: "AttributesSet", Message: "chunk shape resolved"},
			{Type: v1beta1.ConditionProvisioning, Status: metav1.ConditionFalse, ObservedGeneration: got.Generation, LastTransitionTime: now, Reason: "NotBuilt", Message: ""},
		},
	}
	got.Status = *wantStatus.DeepCopy()
	got.Spec.Replicas = ptr.To[int32](9) // ignored by the status subresource
	if err := e.Client.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	back := &v1beta1.CapacityBuffer{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(templated), back); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(back.Status, wantStatus) {
		t.Errorf("status read back\n%+v\nwant\n%+v", back.Status, wantStatus)
	}
	if *back.Spec.Replicas != 0 {
		t.Errorf("the status write changed spec.replicas to %d", *back.Spec.Replicas)
	}
	list := &v1beta1.CapacityBufferList{}
	if err := e.Client.List(ctx, list, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Errorf("listed %d CapacityBuffers, want 2", len(list.Items))
	}
}

const baseBuffer = `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata:
  namespace: default
  name: buffer
spec:
  podTemplateRef: {name: buffer-pod}
  replicas: 1
`

// bufferCase is an object built from baseBuffer and a merge patch; field
// empty means upstream's CRD accepts it, else the rejection must name field
// with message.
type bufferCase struct {
	name, patch, field, message string
}

var bufferCases = []bufferCase{
	{"podTemplateRef without replicas or limits", `spec: {replicas: null}`, "spec", "a buffer with podTemplateRef also needs replicas or limits"},
	{"podTemplateRef and scalableRef", `spec: {scalableRef: {kind: Deployment, name: web}}`, "spec", "podTemplateRef and scalableRef are mutually exclusive"},
	{"negative replicas", `spec: {replicas: -1}`, "spec.replicas", "greater than or equal to 0"},
	{"negative percentage", `spec: {podTemplateRef: null, scalableRef: {kind: Deployment, name: web}, percentage: -5}`, "spec.percentage", "greater than or equal to 0"},
	{"empty podTemplateRef name", `spec: {podTemplateRef: {name: ""}}`, "spec.podTemplateRef.name", "at least 1 chars long"},
	{"podTemplateRef without name", `spec: {podTemplateRef: {name: null}}`, "spec.podTemplateRef.name", "Required value"},
	{"scalableRef without kind", `spec: {podTemplateRef: null, scalableRef: {name: web}}`, "spec.scalableRef.kind", "Required value"},
	{"scalableRef with empty name", `spec: {podTemplateRef: null, scalableRef: {kind: Deployment, name: ""}}`, "spec.scalableRef.name", "at least 1 chars long"},
	{"limits that are not quantities", `spec: {limits: {cpu: lots}}`, "spec.limits.cpu", "should match"},
	{"no spec", `spec: null`, "spec", "Required value"},

	{"podTemplateRef with limits only", `spec: {replicas: null, limits: {cpu: "2"}}`, "", ""},
	{"scalableRef alone", `spec: {podTemplateRef: null, replicas: null, scalableRef: {kind: Deployment, name: web}}`, "", ""},
	{"scalableRef with percentage and limits", `spec: {podTemplateRef: null, scalableRef: {apiGroup: apps, kind: StatefulSet, name: db}, percentage: 150, limits: {memory: 1Gi}}`, "", ""},
	{"empty spec", `spec: {podTemplateRef: null, replicas: null}`, "", ""},
	{"limits alone", `spec: {podTemplateRef: null, replicas: null, limits: {cpu: 500m}}`, "", ""},
	{"zero replicas", `spec: {replicas: 0}`, "", ""},
	{"another provisioning strategy", `spec: {provisioningStrategy: example.com/other}`, "", ""},
}

// TestCapacityBufferValidation: each object upstream's CRD rejects is
// rejected by ours naming the field; each one it accepts is accepted.
func TestCapacityBufferValidation(t *testing.T) {
	ctx := context.Background()
	for i, tc := range bufferCases {
		t.Run(tc.name, func(t *testing.T) {
			obj := expectations.Manifest(t, baseBuffer, tc.patch)
			obj.SetName(fmt.Sprintf("buffer-%d", i))
			err := testEnv.Client.Create(ctx, obj)
			if err == nil {
				_ = testEnv.Client.Delete(ctx, obj)
			}
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("rejected, want accepted: %v", err)
			case tc.field == "":
			case err == nil:
				t.Fatalf("accepted, want rejection naming %s", tc.field)
			case !apierrors.IsInvalid(err):
				t.Fatalf("want an Invalid error, got %v", err)
			case !expectations.NamesField(err, tc.field, tc.message):
				t.Fatalf("rejection does not name %q with %q:\n%v", tc.field, tc.message, err)
			}
		})
	}
}

// TestCapacityBufferVerdictsEqualUpstreams creates every case on an apiserver
// serving upstream v1.15.2's CapacityBuffer CRD: it accepts and rejects
// exactly what ours does.
func TestCapacityBufferVerdictsEqualUpstreams(t *testing.T) {
	up := env.StartT(t, env.WithCRDDirectory(env.UpstreamCRDs(t, "autoscaling.x-k8s.io_capacitybuffers.yaml")))
	ctx := context.Background()
	for i, tc := range bufferCases {
		obj := expectations.Manifest(t, baseBuffer, tc.patch)
		obj.SetName(fmt.Sprintf("buffer-%d", i))
		err := up.Client.Create(ctx, obj)
		if err == nil {
			_ = up.Client.Delete(ctx, obj)
		}
		if accepted := err == nil; accepted != (tc.field == "") {
			t.Errorf("%s: upstream's CRD accepted=%t (%v), ours accepted=%t", tc.name, accepted, err, tc.field == "")
		}
	}
}

// TestCapacityBufferKubectl: `kubectl get cb` (upstream's short name) shows
// upstream's columns, and the autoscaling category includes CapacityBuffers.
func TestCapacityBufferKubectl(t *testing.T) {
	ctx := context.Background()
	obj := expectations.Manifest(t, baseBuffer, "")
	obj.SetName("columns")
	if err := testEnv.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, obj) })
	out := testEnv.KubectlEventually(t, "get", "cb", "-n", "default", "columns")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got, want := strings.Join(strings.Fields(lines[0]), " "), "NAME STRATEGY PODTEMPLATE REPLICAS CONDITIONSTYPE CONDITIONSSTATUS CONDITIONSREASON AGE"; got != want {
		t.Errorf("kubectl get cb columns = %s, want %s", got, want)
	}
	if f := strings.Fields(lines[len(lines)-1]); len(f) < 2 || f[1] != v1beta1.ActiveProvisioningStrategy {
		t.Errorf("kubectl get cb row = %v, want the default strategy", f)
	}
	if out := testEnv.KubectlEventually(t, "get", "autoscaling", "-n", "default"); !strings.Contains(out, "columns") || !strings.Contains(out, "STRATEGY") {
		t.Errorf("kubectl get autoscaling lacks the CapacityBuffer:\n%s", out)
	}
}

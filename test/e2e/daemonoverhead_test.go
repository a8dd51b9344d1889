package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// A DaemonSet whose template requests no cpu, in a namespace whose LimitRange
// defaults cpu to 2, runs pods of 2 cpu; they are system-node-critical, so
// kube-scheduler preempts an application pod to make room for them. One app
// pod of 2.5 cpu needs a node holding 4.5 cpu. Sized with the DaemonSet's
// template, its NodeClaim would get a 4-cpu instance, the DaemonSet's pod
// would take it, and every decision would launch another NodeClaim for the
// pending (or replaced) app pod. Sized with the DaemonSet's pod as admitted,
// one NodeClaim holds both, and stays the only one for 5 minutes while the
// app pod runs.
func TestDaemonSetAdmittedRequestsSizeTheOnlyNodeClaim(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	e := startProvisioning(t)

	// The DaemonSet's namespace and its LimitRange.
	e.apply(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agents"}},
		&corev1.LimitRange{
			ObjectMeta: metav1.ObjectMeta{Name: "cpu-defaults", Namespace: "agents"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type:           corev1.LimitTypeContainer,
				Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			}}},
		})
	// A node Karpenter does not manage, tainted for system pods: the
	// DaemonSet's first pod runs there before any NodeClaim exists.
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	e.apply(t, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "system-0", Annotations: map[string]string{localcluster.FakeNodeAnnotation: "fake"},
			Labels: map[string]string{corev1.LabelHostname: "system-0"}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "example.com/system", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	})
	labels := map[string]string{"app": "agent"}
	e.apply(t, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "agents"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					PriorityClassName: "system-node-critical",
					Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers:        []corev1.Container{{Name: "agent", Image: "registry.invalid/agent:1"}},
				},
			},
		},
	})
	if err := poll(ctx, 2*time.Minute, func() (bool, error) {
		pods := &corev1.PodList{}
		if err := e.Client.List(ctx, pods, client.InNamespace("agents")); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "system-0" && p.Status.Phase == corev1.PodRunning {
				if cpu := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("2")) != 0 {
					return false, fmt.Errorf("the DaemonSet's pod was admitted with %s cpu, want the LimitRange's 2", cpu.String())
				}
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the DaemonSet's pod never ran on the system node: %v", err)
	}

	app := kit.Deployment("default", "app", 1, "2500m", "512Mi", false)
	app.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2500m")}
	e.apply(t, kit.DefaultNodeClass(0), kit.DefaultNodePool("default", "default", 8), app)

	nodeClaims := func() ([]v1.NodeClaim, error) {
		l := &v1.NodeClaimList{}
		err := e.Client.List(ctx, l)
		return l.Items, err
	}
	var last *kit.Counts
	if err := poll(ctx, 3*time.Minute, func() (bool, error) {
		ncs, err := nodeClaims()
		if err != nil {
			return false, err
		}
		if len(ncs) > 1 {
			return false, fmt.Errorf("%d nodeclaims launched for one app pod", len(ncs))
		}
		c, err := kit.Count(ctx, e.Client, "default")
		last = c
		return err == nil && c.Pods == 1 && c.Running == 1 && len(ncs) == 1 && kit.NodeClaimState(&ncs[0]) == "Ready", err
	}); err != nil {
		t.Fatalf("the app pod did not run on one NodeClaim: %v (last: %+v); karpenter log: %s", err, last, e.current().LogPath)
	}
	ncs, err := nodeClaims()
	if err != nil {
		t.Fatal(err)
	}
	requests := ncs[0].Spec.Resources.Requests[corev1.ResourceCPU]
	t.Logf("nodeclaim %s requests %s cpu, runs on %s", ncs[0].Name, requests.String(), ncs[0].Labels[corev1.LabelInstanceTypeStable])
	if requests.Cmp(resource.MustParse("4500m")) < 0 {
		t.Errorf("nodeclaim requests %s cpu, want the app's 2.5 and the DaemonSet pod's 2", requests.String())
	}

	// Five minutes: the NodeClaim stays the only one and the app pod keeps running.
	err = poll(ctx, 5*time.Minute, func() (bool, error) {
		ncs, err := nodeClaims()
		if err != nil {
			return false, err
		}
		if len(ncs) != 1 {
			return false, fmt.Errorf("%d nodeclaims, want 1", len(ncs))
		}
		c, err := kit.Count(ctx, e.Client, "default")
		if err != nil {
			return false, err
		}
		if c.Pods != 1 || c.Running != 1 {
			return false, fmt.Errorf("app pods: %d, running %d, want 1 running", c.Pods, c.Running)
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatalf("%v; karpenter log: %s", err, e.current().LogPath)
	}
	if ctx.Err() != nil {
		t.Fatal("the test's own deadline cut the 5-minute window short")
	}
}

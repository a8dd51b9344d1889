package e2e_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karpenter-go/karpenter/pkg/test/localcluster"
)

// A Node carrying KWOK's annotation becomes Ready, and a 3-replica Deployment's
// pods are bound to it by the real kube-scheduler and reported Running.
func TestKWOKNodeRunsDeployment(t *testing.T) {
	t.Parallel()
	c := localcluster.Start(t)
	ctx := context.Background()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "kwok-node-0",
			Annotations: map[string]string{localcluster.FakeNodeAnnotation: "fake"},
			Labels:      map[string]string{corev1.LabelHostname: "kwok-node-0"},
		},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
		},
	}
	if err := c.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := poll(ctx, 60*time.Second, func() (bool, error) {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("node never became Ready: %v", err)
	}
	t.Logf("node Ready after %s", time.Since(start).Round(time.Millisecond))

	labels := map[string]string{"app": "demo"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.invalid/demo:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
				}}},
			},
		},
	}
	if err := c.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	var last string
	if err := poll(ctx, 60*time.Second, func() (bool, error) {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == node.Name && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		last = fmt.Sprintf("%d pods, %d running on %s", len(pods.Items), running, node.Name)
		return running == 3 && len(pods.Items) == 3, nil
	}); err != nil {
		t.Fatalf("deployment pods not Running on the KWOK node within 60s (%s): %v", last, err)
	}
	t.Logf("3 pods Running after %s", time.Since(start).Round(time.Millisecond))
}

// Stopping the cluster tool with SIGTERM stops every control-plane child, and
// killing it outright (SIGKILL, no chance to clean up) takes them down too.
func TestClusterLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			c := localcluster.Start(t)
			pids, err := c.ChildPIDs()
			if err != nil {
				t.Fatal(err)
			}
			if len(pids) != 5 {
				t.Fatalf("expected 5 children (etcd, apiserver, controller-manager, scheduler, kwok), got %v", pids)
			}
			for name, pid := range pids {
				if !localcluster.Alive(pid) {
					t.Fatalf("%s (pid %d) not running while the cluster is up", name, pid)
				}
			}
			if sig == syscall.SIGTERM {
				if err := c.Stop(); err != nil {
					t.Fatal(err)
				}
			} else if err := c.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := poll(context.Background(), 30*time.Second, func() (bool, error) {
				for _, pid := range pids {
					if localcluster.Alive(pid) {
						return false, nil
					}
				}
				return true, nil
			}); err != nil {
				for name, pid := range pids {
					if localcluster.Alive(pid) {
						t.Errorf("%s (pid %d) still running after %s of the cluster tool", name, pid, sig)
					}
				}
			}
		})
	}
}

func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond()
	})
}

// Upstream's end-to-end clusters let a test make a node or a pod unhealthy by
// labelling it kwok.x-k8s.io/stage=unhealthy (its node repair specs write a
// node's Ready condition that way): KWOK leaves a labelled node's conditions
// as written while its unlabelled sibling becomes Ready, and reports a
// labelled pod running but not Ready while its unlabelled sibling is Ready.
func TestKWOKLeavesUnhealthyLabelledNodesAndPodsAlone(t *testing.T) {
	t.Parallel()
	c := localcluster.Start(t)
	ctx := context.Background()
	const unhealthy = "kwok.x-k8s.io/stage"
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	newNode := func(name string, labels map[string]string) *corev1.Node {
		labels[corev1.LabelHostname] = name
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{localcluster.FakeNodeAnnotation: "fake"}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity, Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "written by the test",
			}}},
		}
	}
	sick, well := newNode("kwok-sick", map[string]string{unhealthy: "unhealthy"}), newNode("kwok-well", map[string]string{})
	for _, n := range []*corev1.Node{sick, well} {
		if err := c.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(conds []corev1.NodeCondition) corev1.ConditionStatus {
		for _, cond := range conds {
			if cond.Type == corev1.NodeReady {
				return cond.Status
			}
		}
		return ""
	}
	if err := poll(ctx, 60*time.Second, func() (bool, error) {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(well), n); err != nil {
			return false, err
		}
		return ready(n.Status.Conditions) == corev1.ConditionTrue, nil
	}); err != nil {
		t.Fatalf("the unlabelled node never became Ready: %v", err)
	}
	n := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(sick), n); err != nil {
		t.Fatal(err)
	}
	if got := ready(n.Status.Conditions); got == corev1.ConditionTrue {
		t.Errorf("KWOK made the node labelled %s=unhealthy Ready: %+v", unhealthy, n.Status.Conditions)
	}

	newPod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
			Spec:       corev1.PodSpec{NodeName: well.Name, Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/demo:1"}}},
		}
	}
	sickPod, wellPod := newPod("sick", map[string]string{unhealthy: "unhealthy"}), newPod("well", nil)
	for _, p := range []*corev1.Pod{sickPod, wellPod} {
		if err := c.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	podReady := func(p *corev1.Pod) corev1.ConditionStatus {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady {
				return cond.Status
			}
		}
		return ""
	}
	var last string
	if err := poll(ctx, 60*time.Second, func() (bool, error) {
		s, w := &corev1.Pod{}, &corev1.Pod{}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(sickPod), s); err != nil {
			return false, err
		}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(wellPod), w); err != nil {
			return false, err
		}
		last = fmt.Sprintf("labelled: phase %q Ready %q IP %q; unlabelled: phase %q Ready %q", s.Status.Phase, podReady(s), s.Status.PodIP, w.Status.Phase, podReady(w))
		return s.Status.PodIP != "" && podReady(w) == corev1.ConditionTrue, nil
	}); err != nil {
		t.Fatalf("pods not reported (%s): %v", last, err)
	}
	s := &corev1.Pod{}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(sickPod), s); err != nil {
		t.Fatal(err)
	}
	if podReady(s) != corev1.ConditionFalse || len(s.Status.ContainerStatuses) != 1 || s.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("the pod labelled %s=unhealthy: %s, want its container running and the pod not Ready", unhealthy, last)
	}
}

package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// wantList fails unless got names exactly want's resources in equal quantities.
func wantList(t *testing.T, what string, got, want corev1.ResourceList) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s %s, want %s", what, scheduling.FormatResources(got), scheduling.FormatResources(want))
	}
	for name, q := range want {
		if g, ok := got[name]; !ok || g.Cmp(q) != 0 {
			t.Fatalf("%s %s, want %s", what, scheduling.FormatResources(got), scheduling.FormatResources(want))
		}
	}
}

func container(name string, requests corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests}}
}

func sidecar(name string, requests corev1.ResourceList) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c := container(name, requests)
	c.RestartPolicy = &always
	return c
}

// Pod-level requests replace the containers' aggregate for each resource they set; the others
// still come from the containers.
func TestPodRequestsPodLevelOverridesContainers(t *testing.T) {
	p := fixtures.Pod("p", fixtures.WithRequests("cpu", "1", "memory", "1Gi"), fixtures.WithPodRequests("cpu", "8"))
	wantList(t, "requests", scheduling.PodRequests(p), rl("cpu", "8", "memory", "1Gi"))
	wantList(t, "view", scheduling.PodRequestsView(p), rl("cpu", "8", "memory", "1Gi"))

	// Lower than the containers' sum, the pod-level value still wins.
	p = fixtures.Pod("p", fixtures.WithRequests("cpu", "4"), fixtures.WithPodRequests("cpu", "2"))
	wantList(t, "requests", scheduling.PodRequests(p), rl("cpu", "2"))

	// Only a pod with pod-level requests: nothing from containers.
	p = fixtures.Pod("p", fixtures.WithPodRequests("cpu", "8", "memory", "2Gi"))
	wantList(t, "requests", scheduling.PodRequests(p), rl("cpu", "8", "memory", "2Gi"))

	// spec.resources takes cpu, memory and hugepages only: anything else is the containers'.
	p = fixtures.Pod("p", fixtures.WithRequests("ephemeral-storage", "1Gi"), fixtures.WithPodRequests("ephemeral-storage", "5Gi", "hugepages-2Mi", "4Mi"))
	wantList(t, "requests", scheduling.PodRequests(p), rl("ephemeral-storage", "1Gi", "hugepages-2Mi", "4Mi"))
}

// Pod-level limits without a pod-level request default it as the API does: to the containers'
// aggregate when they request the resource, to the limit otherwise.
func TestPodRequestsPodLevelLimitsDefaultRequests(t *testing.T) {
	p := fixtures.Pod("p", fixtures.WithRequests("cpu", "1"))
	p.Spec.Resources = &corev1.ResourceRequirements{Limits: rl("cpu", "4", "memory", "2Gi")}
	wantList(t, "requests", scheduling.PodRequests(p), rl("cpu", "1", "memory", "2Gi"))
}

// Sidecars add up with app containers; an init container runs with the sidecars started
// before it, and the largest of those and the sum wins, per resource.
func TestPodRequestsSidecarInitContainers(t *testing.T) {
	p := fixtures.Pod("p")
	p.Spec.Containers = []corev1.Container{container("app", rl("cpu", "1", "memory", "1Gi"))}
	p.Spec.InitContainers = []corev1.Container{
		sidecar("proxy", rl("cpu", "500m", "memory", "256Mi")),
		container("migrate", rl("cpu", "2", "memory", "128Mi")),
		sidecar("log", rl("cpu", "250m")),
	}
	// cpu: app 1 + sidecars 750m = 1750m < migrate 2 + proxy 500m = 2500m.
	// memory: app 1Gi + proxy 256Mi = 1280Mi > migrate 128Mi + proxy 256Mi.
	wantList(t, "requests", scheduling.PodRequests(p), rl("cpu", "2500m", "memory", "1280Mi"))

	// Pod-level cpu replaces that aggregate; memory stays the containers'.
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "3")}
	wantList(t, "requests", scheduling.PodRequests(p), rl("cpu", "3", "memory", "1280Mi"))
}

// The overhead adds to the pod-level requests as to the containers'.
func TestPodRequestsOverhead(t *testing.T) {
	p := fixtures.Pod("p", fixtures.WithRequests("cpu", "1", "memory", "1Gi"))
	p.Spec.Overhead = rl("cpu", "250m", "memory", "64Mi")
	wantList(t, "requests", scheduling.PodRequests(p), rl("cpu", "1250m", "memory", "1088Mi"))

	p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "8")}
	wantList(t, "requests", scheduling.PodRequests(p), rl("cpu", "8250m", "memory", "1088Mi"))
}

// resized is a running pod whose single container "c" requests spec and whose status reports
// allocated and applied requests.
func resized(spec, allocated, actuated corev1.ResourceList, conds ...corev1.PodCondition) *corev1.Pod {
	p := fixtures.Pod("p", fixtures.WithPodConditions(conds...))
	p.Spec.Containers[0].Resources.Requests = spec
	cs := corev1.ContainerStatus{Name: p.Spec.Containers[0].Name, AllocatedResources: allocated}
	if actuated != nil {
		cs.Resources = &corev1.ResourceRequirements{Requests: actuated}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return p
}

// An in-place resize counts the larger of the spec and what the status reports allocated or
// applied, until it is done; an infeasible resize counts only the status.
func TestPodRequestsInPlaceResize(t *testing.T) {
	pending := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred}
	inProgress := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}
	infeasible := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{"status as the spec", resized(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi")), rl("cpu", "1", "memory", "1Gi")},
		{"shrink pending keeps the allocation", resized(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "4", "memory", "1Gi"), rl("cpu", "4", "memory", "1Gi"), pending), rl("cpu", "4", "memory", "1Gi")},
		{"grow pending counts the spec", resized(rl("cpu", "4", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"), pending), rl("cpu", "4", "memory", "1Gi")},
		{"in progress counts what is still applied", resized(rl("cpu", "1"), rl("cpu", "1"), rl("cpu", "3"), inProgress), rl("cpu", "3")},
		{"allocation alone when nothing is applied yet", resized(rl("cpu", "1"), rl("cpu", "2"), nil), rl("cpu", "2")},
		{"infeasible counts the status, not the spec", resized(rl("cpu", "16"), rl("cpu", "2"), rl("cpu", "2"), infeasible), rl("cpu", "2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantList(t, "requests", scheduling.PodRequests(tc.pod), tc.want)
			wantList(t, "view", scheduling.PodRequestsView(tc.pod), tc.want)
		})
	}

	// A status naming no container of the spec leaves the spec.
	p := resized(rl("cpu", "1"), rl("cpu", "4"), nil)
	p.Status.ContainerStatuses[0].Name = "other"
	wantList(t, "requests", scheduling.PodRequests(p), rl("cpu", "1"))

	// Pod-level requests still replace the (resized) containers' aggregate.
	p = resized(rl("cpu", "1", "memory", "1Gi"), rl("cpu", "4", "memory", "2Gi"), nil, pending)
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "8")}
	wantList(t, "requests", scheduling.PodRequests(p), rl("cpu", "8", "memory", "2Gi"))
}

func TestResizeChangesRequests(t *testing.T) {
	if scheduling.ResizeChangesRequests(fixtures.Pod("p", fixtures.WithRequests("cpu", "1"))) {
		t.Fatal("a pod without status depends on it")
	}
	if scheduling.ResizeChangesRequests(resized(rl("cpu", "1"), rl("cpu", "1"), rl("cpu", "1"))) {
		t.Fatal("a status as the spec changes the requests")
	}
	if !scheduling.ResizeChangesRequests(resized(rl("cpu", "1"), rl("cpu", "2"), rl("cpu", "2"))) {
		t.Fatal("a larger allocation leaves the requests as they were")
	}
}

// Limits: containers and sidecars add up, init containers peak with the sidecars before them,
// pod-level limits replace the aggregate per resource, the overhead adds to non-zero limits.
func TestPodLimits(t *testing.T) {
	lim := func(c corev1.Container, l corev1.ResourceList) corev1.Container {
		c.Resources.Limits = l
		return c
	}
	p := fixtures.Pod("p")
	p.Spec.Containers = []corev1.Container{lim(container("app", nil), rl("cpu", "1", "memory", "1Gi", "ephemeral-storage", "0"))}
	p.Spec.InitContainers = []corev1.Container{lim(sidecar("proxy", nil), rl("cpu", "500m")), lim(container("init", nil), rl("cpu", "2"))}
	p.Spec.Overhead = rl("cpu", "100m", "ephemeral-storage", "1Gi", "memory", "10Mi")
	wantList(t, "limits", scheduling.PodLimits(p), rl("cpu", "2600m", "memory", "1034Mi", "ephemeral-storage", "0"))

	p.Spec.Resources = &corev1.ResourceRequirements{Limits: rl("memory", "4Gi")}
	wantList(t, "limits", scheduling.PodLimits(p), rl("cpu", "2600m", "memory", "4106Mi", "ephemeral-storage", "0"))
}

// The solver sizes a new node for a pod's pod-level requests, containers requesting nothing.
func TestSolverSizesForPodLevelRequests(t *testing.T) {
	podLevel := func(name string, opts ...podOpt) *corev1.Pod {
		return fixtures.Pod(name, append([]podOpt{fixtures.WithUID(name)}, opts...)...)
	}
	runAll(t, []scenario{
		{name: "pod-level cpu 8 needs the 16-cpu type", pods: []*corev1.Pod{podLevel("p-0", fixtures.WithPodRequests("cpu", "8"))},
			expect: []expectation{claims(1), types("p-0", "large")}},
		{name: "pod-level cpu under container cpu", pods: []*corev1.Pod{podLevel("p-0", fixtures.WithRequests("cpu", "8", "memory", "1Gi"), fixtures.WithPodRequests("cpu", "1"))},
			expect: []expectation{claims(1), types("p-0", "small", "arm-medium", "medium", "large")}},
		{name: "two pod-level pods do not share a 16-cpu type", pods: []*corev1.Pod{podLevel("a-0", fixtures.WithPodRequests("cpu", "9")), podLevel("b-0", fixtures.WithPodRequests("cpu", "9"))},
			expect: []expectation{claims(2), types("a-0", "large"), types("b-0", "large")}},
	})
}

package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// A DaemonSet weighs on the instance types whose nodes would run it: its requests shrink only
// those types, and its host ports keep out of those types only the pods that bind them.
func TestDaemonSetsPerInstanceType(t *testing.T) {
	onArch := func(arch string) podOpt { return withSelector(scheduling.LabelArch, arch) }
	port := func(p int32) podOpt { return fixtures.WithHostPort(p, "", "") }
	overhead := func(pod string, kv ...string) expectation {
		return func(t *testing.T, r *result) {
			t.Helper()
			c := r.claim[pod]
			if c == nil {
				t.Fatalf("pod %s not on a new claim: %s", pod, r.summary())
			}
			want := rl(kv...)
			for name, q := range c.DaemonSetOverhead {
				w := want[name]
				if q.Cmp(w) != 0 {
					t.Fatalf("pod %s: claim's daemonset overhead %v, want %v", pod, c.DaemonSetOverhead, want)
				}
			}
			for name, w := range want {
				if q := c.DaemonSetOverhead[name]; q.Cmp(w) != 0 {
					t.Fatalf("pod %s: claim's daemonset overhead %v, want %v", pod, c.DaemonSetOverhead, want)
				}
			}
		}
	}
	runAll(t, []scenario{
		{name: "daemonsets of two architectures bind the ports the other architecture's pods need",
			ds: []*corev1.Pod{
				mkPod("ds-amd64", "100m", "100Mi", onArch("amd64"), port(8000)),
				mkPod("ds-arm64", "100m", "100Mi", onArch("arm64"), port(9000))},
			pods: append(pods(1, "on-arm", "100m", "100Mi", onArch("arm64"), port(8000)),
				pods(1, "on-amd", "100m", "100Mi", onArch("amd64"), port(9000))...),
			expect: []expectation{allScheduled(), claims(2), types("on-arm-0", "arm-medium"), types("on-amd-0", "small", "medium", "large")}},
		{name: "a pod binding a daemonset's port gets the types that daemonset does not run on",
			ds:     []*corev1.Pod{mkPod("ds-amd64", "100m", "100Mi", onArch("amd64"), port(8000))},
			pods:   pods(1, "p", "100m", "100Mi", port(8000)),
			expect: []expectation{types("p-0", "arm-medium")}},
		{name: "a pod binding a daemonset's port narrows the claim it joins",
			ds:     []*corev1.Pod{mkPod("ds-amd64", "100m", "100Mi", onArch("amd64"), port(8000))},
			pods:   append(pods(1, "first", "1", "1Gi"), pods(1, "p", "100m", "100Mi", port(8000))...),
			expect: []expectation{claims(1), together("first-0", "p-0"), types("first-0", "arm-medium")}},
		{name: "a pod binding a port that the daemons of every type bind stays pending",
			ds: []*corev1.Pod{
				mkPod("ds-amd64", "100m", "100Mi", onArch("amd64"), port(8080)),
				mkPod("ds-arm64", "100m", "100Mi", onArch("arm64"), port(8080))},
			pods:   pods(1, "p", "100m", "100Mi", port(8080)),
			expect: []expectation{podErr("p-0", "host port TCP/0.0.0.0:8080 conflicts with a daemonset")}},
		{name: "pods binding another port keep every type beside both architectures' daemonsets",
			ds: []*corev1.Pod{
				mkPod("ds-amd64", "100m", "100Mi", onArch("amd64"), port(8080)),
				mkPod("ds-arm64", "100m", "100Mi", onArch("arm64"), port(8080))},
			pods:   pods(2, "p", "100m", "100Mi", port(8081)),
			expect: []expectation{claims(2), apart("p-0", "p-1"), types("p-0", "small", "arm-medium", "medium", "large")}},
		{name: "a large arm64 daemonset leaves the amd64 types whole",
			ds:     []*corev1.Pod{mkPod("ds-arm64", "3500m", "100Mi", onArch("arm64"))},
			pods:   pods(1, "p", "1500m", "1Gi"),
			expect: []expectation{types("p-0", "small", "medium", "large"), overhead("p-0")}},
		{name: "a claim requests the least daemonset overhead of its types",
			ds: []*corev1.Pod{
				mkPod("ds-amd64", "100m", "3Gi", onArch("amd64")),
				mkPod("ds-arm64", "200m", "1Gi", onArch("arm64"))},
			pods: pods(1, "p", "100m", "100Mi"),
			expect: []expectation{types("p-0", "small", "arm-medium", "medium", "large"),
				overhead("p-0", "cpu", "100m", "memory", "1Gi", "pods", "1")}},
		{name: "a claim of arm64 types requests the arm64 daemonset's overhead",
			ds: []*corev1.Pod{
				mkPod("ds-amd64", "100m", "3Gi", onArch("amd64")),
				mkPod("ds-arm64", "200m", "1Gi", onArch("arm64"))},
			pods:   pods(1, "p", "100m", "100Mi", onArch("arm64")),
			expect: []expectation{types("p-0", "arm-medium"), overhead("p-0", "cpu", "200m", "memory", "1Gi", "pods", "1")}},
	})
}

package scheduling

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The queue's specialised sort (sortQueueKeys, integer UID keys) must give podOrder's order,
// including on ties of requests and creation time and on UIDs that share long prefixes.
func TestSortedQueueMatchesPodOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 2, 5, 13, 100, 3000} {
		var pods []*corev1.Pod
		for i := 0; i < n; i++ {
			cpu := []string{"100m", "1", "2"}[r.Intn(3)]
			mem := []string{"1Gi", "2Gi"}[r.Intn(2)]
			uid := []string{
				fmt.Sprintf("default/pod-%d", r.Intn(n)),                      // shared prefix, duplicates
				fmt.Sprintf("%08x-aaaa-bbbb", r.Intn(1<<30)),                  // random
				fmt.Sprintf("same-long-prefix-xxxxxxxxxxxxxxx%d", r.Intn(20)), // differ past 8 bytes
				"", // empty UID
			}[r.Intn(4)]
			created := time.Unix(1000+int64(r.Intn(3)), int64(r.Intn(2)))
			pods = append(pods, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: []string{"a", "b"}[r.Intn(2)], Name: fmt.Sprintf("p%d", r.Intn(n+1)),
					UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
			})
		}
		s := newBareSolver(&Input{Pods: pods})
		s.readPods(pods)
		got := sortedQueue(s, pods)
		want := make([]*podInfo, len(s.podInfos))
		for i := range want {
			want[i] = &s.podInfos[i]
		}
		slices.SortStableFunc(want, func(a, b *podInfo) int {
			switch {
			case podOrder(a, b):
				return -1
			case podOrder(b, a):
				return 1
			}
			return 0
		})
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("n=%d: position %d is %s/%s (%s), podOrder puts %s/%s (%s) there", n, i,
					got[i].pod.Namespace, got[i].pod.Name, got[i].pod.UID, want[i].pod.Namespace, want[i].pod.Name, want[i].pod.UID)
			}
		}
	}
}

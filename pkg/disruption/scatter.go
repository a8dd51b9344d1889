package disruption

import (
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// A move's simulation puts every evicted pod in one place, first-fit, and
// packs its replacements full. kube-scheduler does not follow it: its default
// scoring (NodeResourcesFit's LeastAllocated, the default topology spread)
// sends each evicted pod to the emptiest node that fits it, and a new
// replacement is the emptiest node there is. The replacement then fills with
// whichever pods arrive first, and a pod the move counted on squeezing into
// the room left on an existing node may find that room taken by a smaller one:
// it stays pending, the provisioner launches a node for it, and the next pass
// sees the same "saving" again. On a small fleet that is a loop: a move evicts
// a full node's pods to save one small node, and buys that node back.
//
// scatterFailure replays the move as kube-scheduler would place it: the
// candidates' pods, in eviction order, each onto the node left emptiest
// (mean free share of cpu and memory) among the nodes the move placed a pod of
// the same owner on, replacements at their cheapest instance type. It names
// the first pod that finds no room, "" when all land. Pods whose placement
// follows topology (spread, pod affinity or anti-affinity) keep the place the
// solver gave them: kube-scheduler must honour those constraints as the solver
// did.
func scatterFailure(sim *simulation) string {
	type room struct {
		name  string
		pool  string
		free  [3]float64 // cpu, memory, pods
		alloc [3]float64
	}
	read := func(l corev1.ResourceList) [3]float64 {
		cpu, mem := l[corev1.ResourceCPU], l[corev1.ResourceMemory]
		out := [3]float64{cpu.AsApproximateFloat64(), mem.AsApproximateFloat64()}
		if pods, ok := l[corev1.ResourcePods]; ok {
			out[2] = pods.AsApproximateFloat64()
		}
		return out
	}
	take := func(r *room, pod *corev1.Pod) {
		q := read(requestsView(pod))
		for i := 0; i < 2; i++ {
			r.free[i] -= q[i]
		}
		r.free[2]--
	}
	// newRoom is a node with nothing on it yet; one that sets no pod limit
	// takes any number of pods.
	newRoom := func(name, pool string, alloc corev1.ResourceList) *room {
		r := &room{name: name, pool: pool, alloc: read(alloc)}
		if _, ok := alloc[corev1.ResourcePods]; !ok {
			r.alloc[2] = math.Inf(1)
		}
		r.free = r.alloc
		return r
	}
	moving := make(map[*corev1.Pod]bool, len(sim.moving))
	for _, pod := range sim.moving {
		moving[pod] = true
	}
	var rooms []*room
	where := map[*corev1.Pod]*room{}
	place := func(r *room, pods []*corev1.Pod) {
		for _, pod := range pods {
			if moving[pod] {
				where[pod] = r
			} else {
				take(r, pod)
			}
		}
	}
	for _, pl := range sim.placed {
		placesMoving := false
		for _, pod := range pl.Pods {
			placesMoving = placesMoving || moving[pod]
		}
		if !placesMoving {
			continue
		}
		r := newRoom(pl.Node.Name, pl.Node.NodePool, pl.Node.Allocatable)
		for _, pod := range pl.Node.Pods {
			if active(pod) {
				take(r, pod)
			}
		}
		place(r, pl.Pods)
		rooms = append(rooms, r)
	}
	for _, c := range sim.replacements {
		if len(c.InstanceTypes) == 0 {
			continue
		}
		r := newRoom(c.Hostname, c.NodePool.Name, c.InstanceTypes[0].Allocatable())
		o := read(c.DaemonSetOverhead)
		for i := 0; i < 2; i++ {
			r.free[i] -= o[i]
		}
		place(r, c.Pods)
		rooms = append(rooms, r)
	}
	// The nodes a pod may scatter over: those of its planned node's NodePool
	// where the move puts a pod that may scatter too.
	over := map[string][]*room{}
	pinned := map[*corev1.Pod]bool{}
	for _, pod := range sim.moving {
		r := where[pod]
		if r == nil {
			continue
		}
		if followsTopology(pod) {
			pinned[pod] = true
			take(r, pod)
			continue
		}
		if !slices.Contains(over[r.pool], r) {
			over[r.pool] = append(over[r.pool], r)
		}
	}
	for _, pod := range sim.moving {
		if where[pod] == nil || pinned[pod] {
			continue
		}
		q := read(requestsView(pod))
		var best *room
		bestScore := -1.0
		for _, r := range over[where[pod].pool] {
			if r.free[0] < q[0] || r.free[1] < q[1] || r.free[2] < 1 {
				continue
			}
			score := 0.0
			for i := 0; i < 2; i++ {
				if r.alloc[i] > 0 {
					score += (r.free[i] - q[i]) / r.alloc[i] / 2
				}
			}
			if score > bestScore {
				best, bestScore = r, score
			}
		}
		if best == nil {
			return fmt.Sprintf("pod %s/%s could find no room if kube-scheduler put the evicted pods on the emptiest nodes first", pod.Namespace, pod.Name)
		}
		take(best, pod)
	}
	return ""
}

// followsTopology: the pod's place depends on other pods (spread, pod
// affinity or anti-affinity).
func followsTopology(pod *corev1.Pod) bool {
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return true
	}
	a := pod.Spec.Affinity
	return a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

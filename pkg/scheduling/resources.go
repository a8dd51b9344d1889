package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodRequests returns the resources the kube-scheduler accounts for a pod: the larger of the sum
// of app containers (plus restartable init "sidecar" containers) and each init container's
// requests (plus the sidecars started before it), plus the pod overhead. A container that sets
// a limit but no request for a resource requests its limit, as API defaulting would.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	addList(out, podRequests(pod))
	return out
}

// podRequests is PodRequests without copying in the common case of a single container that
// only sets requests; the result must not be modified.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	if len(pod.Spec.Containers) == 1 && len(pod.Spec.InitContainers) == 0 && len(pod.Spec.Overhead) == 0 && len(pod.Spec.Containers[0].Resources.Limits) == 0 {
		return pod.Spec.Containers[0].Resources.Requests
	}
	out := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addList(out, containerRequests(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addList(out, req)
			addList(sidecars, req)
			continue
		}
		peak := corev1.ResourceList{}
		addList(peak, req)
		addList(peak, sidecars)
		for name, q := range peak {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	addList(out, pod.Spec.Overhead)
	return out
}

func containerRequests(c *corev1.Container) corev1.ResourceList {
	if len(c.Resources.Limits) == 0 {
		return c.Resources.Requests
	}
	out := corev1.ResourceList{}
	for k, v := range c.Resources.Limits {
		out[k] = v
	}
	for k, v := range c.Resources.Requests {
		out[k] = v
	}
	return out
}

func addList(dst, src corev1.ResourceList) {
	for name, q := range src {
		cur := dst[name]
		cur.Add(q)
		dst[name] = cur
	}
}

// resourceIndex interns resource names into dense vector positions. cpu is kept in millicores,
// everything else in whole units, so that 10,000,000Gi of memory still fits in an int64.
type resourceIndex struct {
	names []corev1.ResourceName
	pos   map[corev1.ResourceName]int
}

const (
	resCPU = iota
	resMemory
	resPods
	resEphemeral
	numBuiltinResources
)

func newResourceIndex() *resourceIndex {
	ri := &resourceIndex{pos: map[corev1.ResourceName]int{}}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		ri.add(n)
	}
	return ri
}

func (ri *resourceIndex) add(n corev1.ResourceName) int {
	if p, ok := ri.pos[n]; ok {
		return p
	}
	ri.pos[n] = len(ri.names)
	ri.names = append(ri.names, n)
	return len(ri.names) - 1
}

func (ri *resourceIndex) register(l corev1.ResourceList) {
	if builtinOnly(l) {
		return // every name already has a position: no map iteration
	}
	for n := range l {
		ri.add(n)
	}
}

// builtinRequests is a resource list's builtin resources; extra marks a list naming others.
type builtinRequests struct {
	v     [numBuiltinResources]int64
	extra bool
}

// readBuiltin reads l's builtin resources by lookup and registers any other name it has.
func (ri *resourceIndex) readBuiltin(l corev1.ResourceList) builtinRequests {
	var b builtinRequests
	found := 0
	for i, n := range builtinNames {
		if found == len(l) {
			return b
		}
		if q, ok := l[n]; ok {
			b.v[i] = quantityValue(n, q)
			found++
		}
	}
	if found < len(l) {
		b.extra = true
		for n := range l {
			ri.add(n)
		}
	}
	return b
}

// builtinNames are the names every resourceIndex starts with, in position order.
var builtinNames = [numBuiltinResources]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage}

// builtinOnly reports whether l names only builtin resources. Lookups in a small map are much
// cheaper than iterating it, and nearly every pod and instance type names only these.
func builtinOnly(l corev1.ResourceList) bool {
	if len(l) > numBuiltinResources {
		return false
	}
	found := 0
	for _, n := range builtinNames {
		if found == len(l) {
			break
		}
		if _, ok := l[n]; ok {
			found++
		}
	}
	return found == len(l)
}

// resVec is a dense resource vector indexed by a resourceIndex.
type resVec []int64

func (ri *resourceIndex) vec(l corev1.ResourceList) resVec {
	v := make(resVec, len(ri.names))
	ri.fill(v, l)
	return v
}

// fillBuiltin is fill for a list that names builtin resources only (ok), by lookup; has has
// bit r set for each builtin resource r the list names. When the list names others, ok is
// false and v holds only its builtin resources.
func (ri *resourceIndex) fillBuiltin(v resVec, l corev1.ResourceList) (has uint, ok bool) {
	found := 0
	for i, n := range builtinNames {
		if found == len(l) {
			break
		}
		if q, ok := l[n]; ok {
			v[i] = quantityValue(n, q)
			has |= 1 << i
			found++
		}
	}
	return has, found == len(l)
}

// fill writes l into v (zeroed, len(ri.names)), by lookups of the builtin names when those are
// all l has (the common case), otherwise by iterating l.
func (ri *resourceIndex) fill(v resVec, l corev1.ResourceList) {
	if len(l) <= numBuiltinResources {
		if _, ok := ri.fillBuiltin(v, l); ok {
			return
		}
	}
	for n, q := range l {
		p, ok := ri.pos[n]
		if !ok {
			continue
		}
		v[p] = quantityValue(n, q)
	}
}

func quantityValue(n corev1.ResourceName, q resource.Quantity) int64 {
	if n == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func (ri *resourceIndex) list(v resVec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, x := range v {
		if x == 0 {
			continue
		}
		if ri.names[i] == corev1.ResourceCPU {
			out[ri.names[i]] = *resource.NewMilliQuantity(x, resource.DecimalSI)
		} else if ri.names[i] == corev1.ResourceMemory || ri.names[i] == corev1.ResourceEphemeralStorage {
			out[ri.names[i]] = *resource.NewQuantity(x, resource.BinarySI)
		} else {
			out[ri.names[i]] = *resource.NewQuantity(x, resource.DecimalSI)
		}
	}
	return out
}

func (v resVec) clone() resVec { return append(resVec(nil), v...) }

func (v resVec) add(o resVec) {
	for i := range o {
		v[i] += o[i]
	}
}

func (v resVec) sub(o resVec) {
	for i := range o {
		v[i] -= o[i]
	}
}

// fitsIn reports whether v ≤ capacity in every dimension.
func (v resVec) fitsIn(capacity resVec) bool {
	for i, x := range v {
		if x > capacity[i] {
			return false
		}
	}
	return true
}

// sumFitsIn reports whether a+b ≤ capacity without allocating.
func sumFitsIn(a, b, capacity resVec) bool {
	for i := range a {
		if a[i]+b[i] > capacity[i] {
			return false
		}
	}
	return true
}

// FormatResources renders a resource list deterministically: `cpu: 100, memory: 10Gi`.
func FormatResources(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		q := l[corev1.ResourceName(n)]
		parts = append(parts, fmt.Sprintf("%s: %s", n, q.String()))
	}
	return strings.Join(parts, ", ")
}

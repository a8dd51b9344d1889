package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodRequests returns the resources the kube-scheduler accounts for a pod:
//
//   - the containers' aggregate: the larger of the sum of app containers (plus restartable
//     init "sidecar" containers) and each init container's requests (plus the sidecars started
//     before it);
//   - for a pod resized in place, per resource the largest of that aggregate over the
//     containers' specs, over what their statuses report allocated (allocatedResources) and over
//     what they report applied (resources), a container without status counting its spec. A
//     resize the kubelet found infeasible (the PodResizePending condition with reason
//     Infeasible) leaves the specs out: only what the statuses report counts;
//   - the pod-level requests (spec.resources, for cpu, memory and hugepages) in place of that
//     aggregate for each resource they set; the others still come from the containers;
//   - plus the pod overhead.
//
// A container that sets a limit but no request for a resource requests its limit, and pod-level
// limits default pod-level requests the same way, as API defaulting would.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	addList(out, podRequests(pod))
	return out
}

// PodRequestsView is PodRequests without copying in the common case of a single container that
// only sets requests: the result must not be modified.
func PodRequestsView(pod *corev1.Pod) corev1.ResourceList { return podRequests(pod) }

// podRequests is PodRequestsView.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	matches := statusMatchesSpec(pod)
	if matches && len(pod.Spec.Containers) == 1 && len(pod.Spec.InitContainers) == 0 && len(pod.Spec.Overhead) == 0 &&
		len(pod.Spec.Containers[0].Resources.Limits) == 0 && pod.Spec.Resources == nil {
		return pod.Spec.Containers[0].Resources.Requests
	}
	var out corev1.ResourceList
	if matches {
		out = aggregate(pod, specRequests)
	} else {
		infeasible := resizeInfeasible(pod)
		allocated := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return allocatedRequests(pod, c, infeasible) })
		actuated := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return actuatedRequests(pod, c, infeasible) })
		if infeasible {
			out = actuated
		} else {
			out = aggregate(pod, specRequests)
			maxList(out, actuated)
		}
		maxList(out, allocated)
	}
	if pod.Spec.Resources != nil {
		applyPodLevel(out, podLevelRequests(pod, out))
	}
	addList(out, pod.Spec.Overhead)
	return out
}

// PodLimits returns a pod's effective limits as Kubernetes computes them: app containers and
// sidecars add up, each ordinary init container counts with the sidecars started before it
// and the larger wins; pod-level limits (spec.resources, for cpu, memory and hugepages) replace
// that aggregate for each resource they set; the overhead is added only to resources with a
// non-zero limit (an unlimited resource stays unlimited). Limits are read from the spec only.
func PodLimits(pod *corev1.Pod) corev1.ResourceList {
	out := aggregate(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	if podLevelSet(pod) {
		applyPodLevel(out, pod.Spec.Resources.Limits)
	}
	for name, q := range pod.Spec.Overhead {
		if cur, ok := out[name]; ok && !cur.IsZero() {
			cur.Add(q)
			out[name] = cur
		}
	}
	return out
}

// ResizeChangesRequests reports whether a pod's requests depend on its status, that is
// whether an in-place resize has left some container's allocated or applied resources
// different from its spec. When it is false the container statuses and the resize
// conditions can be dropped without changing PodRequests.
func ResizeChangesRequests(pod *corev1.Pod) bool { return !statusMatchesSpec(pod) }

// aggregate folds per-container resource lists the way Kubernetes does: app containers and
// restartable init (sidecar) containers add up; an ordinary init container runs with the
// sidecars started before it, and the largest of those peaks and the sum wins.
func aggregate(pod *corev1.Pod, of func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addList(out, of(&pod.Spec.Containers[i]))
	}
	if len(pod.Spec.InitContainers) == 0 {
		return out
	}
	// The peaks are compared with the whole sum, sidecars declared after an init container
	// included, once every container is counted.
	sidecars, peak, peaks := corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req := of(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addList(out, req)
			addList(sidecars, req)
			maxList(peaks, sidecars)
			continue
		}
		clear(peak)
		addList(peak, req)
		addList(peak, sidecars)
		maxList(peaks, peak)
	}
	maxList(out, peaks)
	return out
}

// specRequests is what a container's spec requests, a limit standing for a missing request.
func specRequests(c *corev1.Container) corev1.ResourceList {
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

// allocatedRequests is what the kubelet has allocated the container: its status's
// allocatedResources, else (no status yet) its spec, or nothing while a resize is infeasible.
func allocatedRequests(pod *corev1.Pod, c *corev1.Container, infeasible bool) corev1.ResourceList {
	cs := containerStatus(pod, c.Name)
	switch {
	case cs != nil && cs.AllocatedResources != nil:
		return cs.AllocatedResources
	case infeasible:
		return nil
	}
	return specRequests(c)
}

// actuatedRequests is what the container runs with: its status's resources.requests, else its
// allocatedResources, else as allocatedRequests.
func actuatedRequests(pod *corev1.Pod, c *corev1.Container, infeasible bool) corev1.ResourceList {
	cs := containerStatus(pod, c.Name)
	if cs != nil && cs.Resources != nil && cs.Resources.Requests != nil {
		return cs.Resources.Requests
	}
	return allocatedRequests(pod, c, infeasible)
}

// containerStatus finds a container's status by name, among app then init containers.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == name {
			return &pod.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// resizeInfeasible reports a PodResizePending condition with reason Infeasible.
func resizeInfeasible(pod *corev1.Pod) bool {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodResizePending {
			return pod.Status.Conditions[i].Reason == corev1.PodReasonInfeasible
		}
	}
	return false
}

// statusMatchesSpec reports whether every container's allocated and applied requests equal
// what its spec requests, so that the status leaves the pod's requests as the spec has them.
// A pod with no container status (not started, or its statuses dropped) matches unless a
// resize is infeasible.
func statusMatchesSpec(pod *corev1.Pod) bool {
	st := &pod.Status
	if len(st.ContainerStatuses) == 0 && len(st.InitContainerStatuses) == 0 {
		// Every container falls back to its spec, or to nothing while a resize is infeasible.
		return !resizeInfeasible(pod)
	}
	infeasible := resizeInfeasible(pod)
	match := func(c *corev1.Container) bool {
		spec := specRequests(c)
		return sameList(allocatedRequests(pod, c, infeasible), spec) && sameList(actuatedRequests(pod, c, infeasible), spec)
	}
	for i := range pod.Spec.Containers {
		if !match(&pod.Spec.Containers[i]) {
			return false
		}
	}
	for i := range pod.Spec.InitContainers {
		if !match(&pod.Spec.InitContainers[i]) {
			return false
		}
	}
	return true
}

// sameList reports whether two resource lists name the same resources in equal quantities.
func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		o, ok := b[name]
		if !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

// podLevelResource reports whether Kubernetes accepts the resource in a pod's spec.resources.
func podLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// podLevelSet reports whether spec.resources requests or limits any resource it accepts.
func podLevelSet(pod *corev1.Pod) bool {
	if pod.Spec.Resources == nil {
		return false
	}
	for name := range pod.Spec.Resources.Requests {
		if podLevelResource(name) {
			return true
		}
	}
	for name := range pod.Spec.Resources.Limits {
		if podLevelResource(name) {
			return true
		}
	}
	return false
}

// podLevelRequests is spec.resources.requests as API defaulting leaves them: a resource with a
// pod-level limit and no pod-level request requests the containers' aggregate when they
// request it (cpu and memory; that is containers, the aggregate, already) and the limit
// otherwise.
func podLevelRequests(pod *corev1.Pod, containers corev1.ResourceList) corev1.ResourceList {
	req := pod.Spec.Resources.Requests
	var defaulted corev1.ResourceList
	for name, lim := range pod.Spec.Resources.Limits {
		if _, ok := req[name]; ok || !podLevelResource(name) {
			continue
		}
		if _, ok := containers[name]; ok && (name == corev1.ResourceCPU || name == corev1.ResourceMemory) {
			continue
		}
		if defaulted == nil {
			defaulted = corev1.ResourceList{}
			for k, v := range req {
				defaulted[k] = v
			}
		}
		defaulted[name] = lim
	}
	if defaulted != nil {
		return defaulted
	}
	return req
}

// applyPodLevel sets, in dst, each resource spec.resources accepts to its pod-level value.
func applyPodLevel(dst, podLevel corev1.ResourceList) {
	for name, q := range podLevel {
		if podLevelResource(name) {
			dst[name] = q.DeepCopy()
		}
	}
}

func addList(dst, src corev1.ResourceList) {
	for name, q := range src {
		cur := dst[name]
		cur.Add(q)
		dst[name] = cur
	}
}

// maxList raises each resource of dst to src's quantity where src's is larger.
func maxList(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
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

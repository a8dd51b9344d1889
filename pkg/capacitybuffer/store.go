package capacitybuffer

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
)

// Store holds the buffers the buffer controller resolved, with their virtual
// pods, for the provisioner. It is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	buffers map[types.NamespacedName]entry
}

type entry struct {
	buffer *autoscalingv1beta1.CapacityBuffer
	pods   []*corev1.Pod
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{buffers: map[types.NamespacedName]entry{}} }

// Set records the resolved buffer (its status.replicas counted) and the
// template of its chunks.
func (s *Store) Set(b *autoscalingv1beta1.CapacityBuffer, tmpl corev1.PodTemplateSpec) {
	var n int32
	if b.Status.Replicas != nil {
		n = *b.Status.Replicas
	}
	e := entry{buffer: b.DeepCopy(), pods: VirtualPods(b, tmpl, n)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buffers[types.NamespacedName{Namespace: b.Namespace, Name: b.Name}] = e
}

// Delete forgets a buffer; it reports whether the store had it.
func (s *Store) Delete(key types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.buffers[key]
	delete(s.buffers, key)
	return ok
}

// VirtualPods are every stored buffer's virtual pods, by buffer namespace and
// name. The pods are shared: callers must not modify them.
func (s *Store) VirtualPods() []*corev1.Pod {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]types.NamespacedName, 0, len(s.buffers))
	for k := range s.buffers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	var out []*corev1.Pod
	for _, k := range keys {
		out = append(out, s.buffers[k].pods...)
	}
	return out
}

// Len is the number of stored buffers.
func (s *Store) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.buffers)
}

package scheduling

import (
	"hash/fnv"
	"math"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// Cache keeps, across Solve calls, what a NodePool contributes independently of the pods:
// per-instance-type resource vectors net of DaemonSet overhead, the instance types compatible
// with the pool's own requirements ordered by price, and so on. The provisioner and, above all,
// consolidation (which solves many small "do these pods fit elsewhere" questions against the
// same pools) call Solve repeatedly with unchanged instance types; with a Cache that
// preparation is done once instead of per call. A solve whose Input names no Cache keeps
// nothing: it derives all of this itself, as a fresh solve must.
//
// Entries are keyed by the content that matters (pool name, requirements, labels, taints,
// instance type identities with their offerings' availability and prices, DaemonSet pods,
// resource names), so a changed pool simply misses. Instance types must be treated as
// immutable apart from offering availability and price; an entry keeps the instance types and
// DaemonSet pods it was keyed by alive, so that their addresses cannot be reused by other
// objects while it exists. A Cache is safe for concurrent use; cached entries are read-only
// apart from their memo (typeMemo), which has its own lock. It holds at most MaxCacheEntries
// entries (oldest dropped first).
type Cache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*preparedPool
	order   []string
	names   map[string][]corev1.ResourceName
	// memoBytes approximates the bytes the entries' memos hold; past maxMemoBytes every memo
	// is cleared (entries whose key changed, e.g. with a price, are not used again but stay
	// until evicted: this bounds what they keep).
	memoBytes atomic.Int64
}

// maxMemoBytes bounds the memos of one Cache (a 1,000-pod solve of the benchmark memoizes
// ~200 KB).
const maxMemoBytes = 8 << 20

// MaxCacheEntries bounds a Cache.
const MaxCacheEntries = 256

// NewCache returns an empty Cache.
func NewCache() *Cache { return newCache(MaxCacheEntries) }

func newCache(max int) *Cache {
	return &Cache{max: max, entries: map[string]*preparedPool{}, names: map[string][]corev1.ResourceName{}}
}

type preparedPool struct {
	baseReqs    Requirements
	itKeys      map[string]bool
	alloc       []resVec
	overhead    []resVec
	capacity    []resVec
	portGroups  []portGroup
	baseCompat  bitset
	baseOrdered []priced
	byName      []int
	baseAvail   resVec
	// Pinned: the objects whose addresses the key names (see Cache).
	its  []*InstanceType
	ds   []*corev1.Pod
	memo typeMemo
}

// clearMemos empties every entry's memo.
func (c *Cache) clearMemos() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		e.memo.clear()
	}
}

// typeMemo is what solves derive from a prepared pool's instance types for a requirement set
// (by its canonical key, Requirements.appendKey): the compatible types, their price order, the
// values a topology key can take, and a claim's chosen types. Every one is a function of the
// instance types, their offerings and the requirement set alone, all in the entry's key, so a
// later solve against the same entry reads it instead of scanning 400 types' offerings again.
// Values are read-only once stored; each map is cleared when it reaches maxMemo entries.
type typeMemo struct {
	owner      *Cache
	mu         sync.Mutex
	bytes      int64
	compat     map[string]bitset
	ordered    map[string][]priced
	domains    map[string][]string
	claimTypes map[string]*claimTypes
}

const maxMemo = 64

// clear empties the memo and returns its bytes to its Cache's count.
func (m *typeMemo) clear() {
	m.mu.Lock()
	m.clearLocked()
	m.mu.Unlock()
}

// detach clears the memo of an entry leaving its Cache: solves still using the entry go on
// memoizing into it, uncounted, until they end.
func (m *typeMemo) detach() {
	m.mu.Lock()
	m.clearLocked()
	m.owner = nil
	m.mu.Unlock()
}

func (m *typeMemo) clearLocked() {
	m.compat, m.ordered, m.domains, m.claimTypes = nil, nil, nil, nil
	if m.owner != nil {
		m.owner.memoBytes.Add(-m.bytes)
	}
	m.bytes = 0
}

func memoGet[V any](memo *typeMemo, m *map[string]V, k string) (V, bool) {
	memo.mu.Lock()
	v, ok := (*m)[k]
	memo.mu.Unlock()
	return v, ok
}

// memoPut stores v (about size bytes) under k in one of memo's maps.
func memoPut[V any](memo *typeMemo, m *map[string]V, k string, v V, size int) {
	size += len(k)
	memo.mu.Lock()
	c := memo.owner
	memo.mu.Unlock()
	if c != nil && c.memoBytes.Load()+int64(size) > maxMemoBytes {
		c.clearMemos()
	}
	memo.mu.Lock()
	if *m == nil || len(*m) >= maxMemo {
		*m = map[string]V{} // the dropped values' bytes stay counted until the memo is cleared
	}
	(*m)[k] = v
	memo.bytes += int64(size)
	if memo.owner != nil {
		memo.owner.memoBytes.Add(int64(size))
	}
	memo.mu.Unlock()
}

func (c *Cache) get(key string) *preparedPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[key]
}

// put stores pp under key and returns the entry the cache holds (an earlier one if a
// concurrent solve stored it first).
func (c *Cache) put(key string, pp *preparedPool) *preparedPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		return e
	}
	if len(c.order) >= c.max {
		c.entries[c.order[0]].memo.detach()
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	pp.memo.owner = c
	c.entries[key] = pp
	c.order = append(c.order, key)
	return pp
}

// resourceNames returns (and remembers) the resource names the instance types' capacities use.
func (c *Cache) resourceNames(k string, its []*InstanceType) []corev1.ResourceName {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.names[k]; ok {
		return n
	}
	set := map[corev1.ResourceName]bool{}
	for _, it := range its {
		for n := range it.Capacity {
			set[n] = true
		}
	}
	out := make([]corev1.ResourceName, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	if len(c.names) >= c.max {
		c.names = map[string][]corev1.ResourceName{}
	}
	c.names[k] = out
	return out
}

// typesIdentity hashes the identity of the instance types and their offerings' availability
// and prices (FNV-1a over 64-bit words, inlined: this runs on every cached solve).
func typesIdentity(its []*InstanceType) string {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(v uint64) { h = (h ^ v) * prime }
	for _, it := range its {
		mix(uint64(reflect.ValueOf(it).Pointer()))
		for i := range it.Offerings {
			o := &it.Offerings[i]
			mix(math.Float64bits(o.Price))
			if o.Launchable() {
				mix(1)
			} else {
				mix(2)
			}
		}
	}
	return strconv.FormatUint(h, 16) + "/" + strconv.Itoa(len(its))
}

// prepKey identifies everything prepare depends on.
func (s *solver) prepKey(np *NodePool) string {
	h := fnv.New64a()
	w := func(str string) { _, _ = h.Write([]byte(str)); _, _ = h.Write([]byte{0}) }
	w(np.Name)
	w(np.Requirements.String())
	w(FromLabels(np.Labels).String())
	for _, t := range np.Taints {
		w(t.Key + "=" + t.Value + ":" + string(t.Effect))
	}
	w("|")
	for _, n := range s.ri.names {
		w(string(n))
	}
	w("|")
	for _, ds := range s.daemons {
		w(strconv.FormatUint(uint64(reflect.ValueOf(ds).Pointer()), 16))
	}
	w("|")
	keys := make([]string, 0, len(s.wellKnown))
	for k := range s.wellKnown {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w(k)
	}
	return strconv.FormatUint(h.Sum64(), 16) + "/" + s.typesID(np)
}

// typesID memoizes typesIdentity per NodePool within one solve.
func (s *solver) typesID(np *NodePool) string {
	if id, ok := s.typeIDs[np]; ok {
		return id
	}
	id := typesIdentity(np.InstanceTypes)
	s.typeIDs[np] = id
	return id
}

package scheduling

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Operators beyond the ones corev1 defines. Upstream Karpenter v1 accepts Gte and Lte on
// NodePool/NodeClaim requirements; they are folded into Gt/Lt bounds here.
const (
	OpGte corev1.NodeSelectorOperator = "Gte"
	OpLte corev1.NodeSelectorOperator = "Lte"
)

// Requirement is the set of values a single label key may take.
//
// It is either a finite set (In; DoesNotExist is the empty finite set) or the complement of a
// finite set (NotIn; Exists is the complement of the empty set), optionally narrowed by integer
// bounds (Gt/Lt). Bounds only ever live on complement sets: intersecting bounds with a finite set
// filters the finite set, so every value of a finite set is already within bounds.
// Values are kept sorted and unique, which makes intersection a linear merge and the canonical
// string (used to intern whole requirement sets) cheap to build.
type Requirement struct {
	Key        string
	complement bool
	values     []string
	gt, lt     int64
	hasGt      bool
	hasLt      bool
	// MinValues, when set, asks that the instance types kept for a NodeClaim span at least this
	// many distinct values of Key.
	MinValues *int
}

// NewRequirement builds a requirement from a node selector operator and its values. Unknown
// operators and malformed integers for Gt/Lt/Gte/Lte yield the empty set (nothing matches),
// which is what the API server's validation would have prevented anyway.
func NewRequirement(key string, op corev1.NodeSelectorOperator, values ...string) Requirement {
	r := Requirement{Key: key}
	switch op {
	case corev1.NodeSelectorOpIn:
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpNotIn:
		r.complement = true
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, OpGte, OpLte:
		if len(values) != 1 {
			return r
		}
		v, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return r
		}
		r.complement = true
		switch op {
		case corev1.NodeSelectorOpGt:
			r.gt, r.hasGt = v, true
		case OpGte:
			r.gt, r.hasGt = v-1, true
		case corev1.NodeSelectorOpLt:
			r.lt, r.hasLt = v, true
		case OpLte:
			r.lt, r.hasLt = v+1, true
		}
	}
	return r
}

// dedupSorted drops adjacent duplicates of an already sorted slice in place.
func dedupSorted(values []string) []string {
	if len(values) < 2 {
		return values
	}
	j := 1
	for i := 1; i < len(values); i++ {
		if values[i] != values[j-1] {
			values[j] = values[i]
			j++
		}
	}
	return values[:j]
}

func sortedUnique(values []string) []string {
	if len(values) == 0 {
		return nil
	}
	out := make([]string, len(values))
	copy(out, values)
	sort.Strings(out)
	j := 1
	for i := 1; i < len(out); i++ {
		if out[i] != out[j-1] {
			out[j] = out[i]
			j++
		}
	}
	return out[:j]
}

// Has reports whether value belongs to the set.
func (r Requirement) Has(value string) bool {
	if !r.complement {
		return containsSorted(r.values, value)
	}
	if containsSorted(r.values, value) {
		return false
	}
	return r.withinBounds(value)
}

func (r Requirement) withinBounds(value string) bool {
	if !r.hasGt && !r.hasLt {
		return true
	}
	v, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return false
	}
	return (!r.hasGt || v > r.gt) && (!r.hasLt || v < r.lt)
}

func containsSorted(values []string, v string) bool {
	// Linear scan beats binary search for the handful of values requirements usually carry.
	if len(values) < 12 {
		for _, x := range values {
			if x == v {
				return true
			}
		}
		return false
	}
	i := sort.SearchStrings(values, v)
	return i < len(values) && values[i] == v
}

// IsEmpty reports whether no value (and not even absence-as-a-value) can satisfy the
// requirement, i.e. the set is empty. DoesNotExist is the empty set.
func (r Requirement) IsEmpty() bool {
	if !r.complement {
		return len(r.values) == 0
	}
	return r.hasGt && r.hasLt && r.lt-r.gt <= 1
}

// Len is the number of values in the set; complement sets count as unbounded.
func (r Requirement) Len() int {
	if !r.complement {
		return len(r.values)
	}
	if r.IsEmpty() {
		return 0
	}
	return math.MaxInt
}

// Values returns the finite values (for In) or the excluded values (for NotIn).
func (r Requirement) Values() []string { return r.values }

// Single returns the only value of a one-value finite set.
func (r Requirement) Single() (string, bool) {
	if !r.complement && len(r.values) == 1 {
		return r.values[0], true
	}
	return "", false
}

// Operator is the node selector operator that best describes the set.
func (r Requirement) Operator() corev1.NodeSelectorOperator {
	if !r.complement {
		if len(r.values) == 0 {
			return corev1.NodeSelectorOpDoesNotExist
		}
		return corev1.NodeSelectorOpIn
	}
	switch {
	case r.IsEmpty():
		return corev1.NodeSelectorOpDoesNotExist
	case r.hasGt:
		return corev1.NodeSelectorOpGt
	case r.hasLt:
		return corev1.NodeSelectorOpLt
	case len(r.values) > 0:
		return corev1.NodeSelectorOpNotIn
	}
	return corev1.NodeSelectorOpExists
}

// negative reports whether the requirement only forbids things (NotIn / DoesNotExist). Such
// requirements are satisfied by a node that lacks the label, so they never conflict with one
// another and never need the label to be defined.
func (r Requirement) negative() bool {
	op := r.Operator()
	return op == corev1.NodeSelectorOpNotIn || op == corev1.NodeSelectorOpDoesNotExist
}

// Intersect returns the set of values allowed by both requirements.
func (r Requirement) Intersect(o Requirement) Requirement {
	out := Requirement{Key: r.Key, MinValues: maxMinValues(r.MinValues, o.MinValues)}
	switch {
	case r.complement && o.complement:
		out.complement = true
		out.values = unionSorted(r.values, o.values)
		out.gt, out.hasGt = r.gt, r.hasGt
		if o.hasGt && (!out.hasGt || o.gt > out.gt) {
			out.gt, out.hasGt = o.gt, true
		}
		out.lt, out.hasLt = r.lt, r.hasLt
		if o.hasLt && (!out.hasLt || o.lt < out.lt) {
			out.lt, out.hasLt = o.lt, true
		}
		if out.IsEmpty() {
			return Requirement{Key: r.Key, MinValues: out.MinValues}
		}
	case r.complement:
		out.values = filterSorted(o.values, r.Has)
	case o.complement:
		out.values = filterSorted(r.values, o.Has)
	default:
		out.values = intersectSorted(r.values, o.values)
	}
	return out
}

func maxMinValues(a, b *int) *int {
	if a == nil {
		return b
	}
	if b == nil || *a >= *b {
		return a
	}
	return b
}

func unionSorted(a, b []string) []string {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		default:
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

func intersectSorted(a, b []string) []string {
	// Reuse a when nothing is dropped: requirement slices are never mutated in place.
	if len(a) == 0 || len(b) == 0 {
		return nil
	}
	var out []string
	i, j := 0, 0
	same := len(a) <= len(b)
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			same = false
			i++
		default:
			j++
		}
	}
	if same && len(out) == len(a) {
		return a
	}
	return out
}

func filterSorted(values []string, keep func(string) bool) []string {
	n := 0
	for _, v := range values {
		if keep(v) {
			n++
		}
	}
	if n == len(values) {
		return values
	}
	out := make([]string, 0, n)
	for _, v := range values {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// String renders the set for error messages, e.g. `In [a b]`, `NotIn [x]`, `Gt 4`.
func (r Requirement) String() string {
	var b strings.Builder
	r.writeTo(&b)
	return b.String()
}

func (r Requirement) writeTo(b *strings.Builder) {
	switch op := r.Operator(); op {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		b.WriteString(string(op))
		b.WriteString(" [")
		b.WriteString(strings.Join(r.values, " "))
		b.WriteString("]")
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		sep := ""
		if r.hasGt {
			b.WriteString("Gt " + strconv.FormatInt(r.gt, 10))
			sep = " "
		}
		if r.hasLt {
			b.WriteString(sep + "Lt " + strconv.FormatInt(r.lt, 10))
		}
		if len(r.values) > 0 {
			b.WriteString(" NotIn [" + strings.Join(r.values, " ") + "]")
		}
	default:
		b.WriteString(string(op))
	}
	if r.MinValues != nil {
		b.WriteString(" minValues " + strconv.Itoa(*r.MinValues))
	}
}

// Requirements is an immutable conjunction of per-key requirements, sorted by key with at most
// one entry per key. Operations return new values and never modify their inputs, so
// requirement sets can be shared freely between pods, claims and caches.
type Requirements struct {
	reqs []Requirement
}

// NewRequirements conjoins the given requirements; repeated keys are intersected.
// It sorts a copy once instead of inserting one by one, so building a set of n
// requirements costs one allocation (providers build dozens per instance type).
func NewRequirements(reqs ...Requirement) Requirements {
	if len(reqs) == 0 {
		return Requirements{}
	}
	out := make([]Requirement, len(reqs))
	copy(out, reqs)
	slices.SortStableFunc(out, func(a, b Requirement) int { return strings.Compare(a.Key, b.Key) })
	j := 0
	for i := 1; i < len(out); i++ {
		if out[i].Key == out[j].Key {
			out[j] = out[j].Intersect(out[i])
			continue
		}
		j++
		out[j] = out[i]
	}
	return Requirements{reqs: out[:j+1]}
}

// FromNodeSelectorRequirements converts API node selector requirements.
func FromNodeSelectorRequirements(reqs ...corev1.NodeSelectorRequirement) Requirements {
	rs := make([]Requirement, 0, len(reqs))
	for _, r := range reqs {
		rs = append(rs, NewRequirement(r.Key, r.Operator, r.Values...))
	}
	return NewRequirements(rs...)
}

// FromLabels turns a label map into single-value In requirements.
func FromLabels(labels map[string]string) Requirements {
	out := Requirements{reqs: make([]Requirement, 0, len(labels))}
	for k, v := range labels {
		out.reqs = append(out.reqs, Requirement{Key: k, values: []string{v}})
	}
	sort.Slice(out.reqs, func(i, j int) bool { return out.reqs[i].Key < out.reqs[j].Key })
	return out
}

// Len is the number of keys constrained.
func (rs Requirements) Len() int { return len(rs.reqs) }

// All returns the requirements sorted by key. The slice must not be modified.
func (rs Requirements) All() []Requirement { return rs.reqs }

// Keys returns the constrained keys in order.
func (rs Requirements) Keys() []string {
	out := make([]string, len(rs.reqs))
	for i := range rs.reqs {
		out[i] = rs.reqs[i].Key
	}
	return out
}

func (rs Requirements) index(key string) (int, bool) {
	n := len(rs.reqs)
	if n < 10 {
		for i := range rs.reqs {
			if rs.reqs[i].Key >= key {
				return i, rs.reqs[i].Key == key
			}
		}
		return n, false
	}
	i := sort.Search(n, func(i int) bool { return rs.reqs[i].Key >= key })
	return i, i < n && rs.reqs[i].Key == key
}

// Get returns the requirement for key.
func (rs Requirements) Get(key string) (Requirement, bool) {
	if i, ok := rs.index(key); ok {
		return rs.reqs[i], true
	}
	return Requirement{}, false
}

// Has reports whether key may take value. Unconstrained keys allow everything.
func (rs Requirements) Has(key, value string) bool {
	if r, ok := rs.Get(key); ok {
		return r.Has(value)
	}
	return true
}

// With returns rs with r intersected into it.
func (rs Requirements) With(r Requirement) Requirements {
	i, ok := rs.index(r.Key)
	out := make([]Requirement, 0, len(rs.reqs)+1)
	out = append(out, rs.reqs[:i]...)
	if ok {
		out = append(out, rs.reqs[i].Intersect(r))
		out = append(out, rs.reqs[i+1:]...)
	} else {
		out = append(out, r)
		out = append(out, rs.reqs[i:]...)
	}
	return Requirements{reqs: out}
}

// Without returns rs without key.
func (rs Requirements) Without(key string) Requirements {
	i, ok := rs.index(key)
	if !ok {
		return rs
	}
	out := make([]Requirement, 0, len(rs.reqs)-1)
	out = append(out, rs.reqs[:i]...)
	return Requirements{reqs: append(out, rs.reqs[i+1:]...)}
}

// Intersect returns the conjunction of both sets (a linear merge by key).
func (rs Requirements) Intersect(o Requirements) Requirements {
	if len(o.reqs) == 0 {
		return rs
	}
	if len(rs.reqs) == 0 {
		return o
	}
	out := make([]Requirement, 0, len(rs.reqs)+len(o.reqs))
	i, j := 0, 0
	for i < len(rs.reqs) && j < len(o.reqs) {
		a, b := rs.reqs[i], o.reqs[j]
		switch {
		case a.Key == b.Key:
			out = append(out, a.Intersect(b))
			i++
			j++
		case a.Key < b.Key:
			out = append(out, a)
			i++
		default:
			out = append(out, b)
			j++
		}
	}
	out = append(out, rs.reqs[i:]...)
	out = append(out, o.reqs[j:]...)
	return Requirements{reqs: out}
}

// IncompatibleError names the key on which two requirement sets conflict and both sides.
type IncompatibleError struct {
	Key      string
	Have     string // what the node / node pool / claim allows, "" when the key is undefined
	Requires string // what the pod (or other incoming side) requires
}

func (e *IncompatibleError) Error() string {
	if e.Have == "" {
		return fmt.Sprintf("label %q does not have known values (requires %s)", e.Key, e.Requires)
	}
	return fmt.Sprintf("requires %s %s, but %s allows %s", e.Key, e.Requires, e.Key, e.Have)
}

// Intersects returns an error naming the first key both sets constrain whose allowed values do
// not overlap. Two purely negative requirements (NotIn/DoesNotExist) never conflict: a node
// without the label satisfies both.
func (rs Requirements) Intersects(incoming Requirements) error {
	if a, b := rs.conflict(incoming); a != nil {
		return &IncompatibleError{Key: a.Key, Have: a.String(), Requires: b.String()}
	}
	return nil
}

// intersects is Intersects without the error: whether no key both sets constrain conflicts.
func (rs Requirements) intersects(incoming Requirements) bool {
	a, _ := rs.conflict(incoming)
	return a == nil
}

// conflict returns the first pair of requirements, rs's and incoming's, on
// the same key whose allowed values do not overlap (nil, nil if none): a
// merge walk of both key-sorted lists, allocating nothing.
func (rs Requirements) conflict(incoming Requirements) (*Requirement, *Requirement) {
	i, j := 0, 0
	for i < len(rs.reqs) && j < len(incoming.reqs) {
		a, b := &rs.reqs[i], &incoming.reqs[j]
		switch {
		case a.Key == b.Key:
			if !overlaps(a, b) && !(a.negative() && b.negative()) {
				return a, b
			}
			i++
			j++
		case a.Key < b.Key:
			i++
		default:
			j++
		}
	}
	return nil, nil
}

// overlaps reports whether the intersection is non-empty without building it.
func overlaps(a, b *Requirement) bool {
	switch {
	case !a.complement && !b.complement:
		for _, v := range a.values {
			if containsSorted(b.values, v) {
				return true
			}
		}
		return false
	case !a.complement:
		for _, v := range a.values {
			if b.Has(v) {
				return true
			}
		}
		return false
	case !b.complement:
		for _, v := range b.values {
			if a.Has(v) {
				return true
			}
		}
		return false
	default:
		return !a.Intersect(*b).IsEmpty()
	}
}

// Compatible checks that incoming requirements (a pod's) can be met by rs (a node's, a node
// pool's or a claim's). Keys rs constrains must overlap. A key rs does not constrain is only
// acceptable when the incoming requirement is negative, or when undefinedOK(key) says the key
// will be defined later (well-known labels such as the zone, which an instance type supplies).
func (rs Requirements) Compatible(incoming Requirements, undefinedOK func(string) bool) error {
	i := 0
	for j := range incoming.reqs {
		b := &incoming.reqs[j]
		for i < len(rs.reqs) && rs.reqs[i].Key < b.Key {
			i++
		}
		if i < len(rs.reqs) && rs.reqs[i].Key == b.Key {
			a := &rs.reqs[i]
			if !overlaps(a, b) && !(a.negative() && b.negative()) {
				return &IncompatibleError{Key: a.Key, Have: a.String(), Requires: b.String()}
			}
			continue
		}
		if b.negative() || (undefinedOK != nil && undefinedOK(b.Key)) {
			continue
		}
		return &IncompatibleError{Key: b.Key, Requires: b.String()}
	}
	return nil
}

// Labels returns the labels a node built from these requirements carries: one value for every
// key with a finite, non-empty set (the smallest, for determinism).
func (rs Requirements) Labels() map[string]string {
	out := map[string]string{}
	for _, r := range rs.reqs {
		if !r.complement && len(r.values) > 0 {
			out[r.Key] = r.values[0]
		}
	}
	return out
}

// NodeSelectorRequirements converts back to API form (used for NodeClaim specs).
func (rs Requirements) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(rs.reqs))
	for _, r := range rs.reqs {
		op := r.Operator()
		nsr := corev1.NodeSelectorRequirement{Key: r.Key, Operator: op}
		switch op {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			nsr.Values = append([]string(nil), r.values...)
		case corev1.NodeSelectorOpGt:
			nsr.Values = []string{strconv.FormatInt(r.gt, 10)}
			out = append(out, nsr)
			if r.hasLt {
				nsr = corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpLt, Values: []string{strconv.FormatInt(r.lt, 10)}}
			}
		case corev1.NodeSelectorOpLt:
			nsr.Values = []string{strconv.FormatInt(r.lt, 10)}
		}
		out = append(out, nsr)
		if r.complement && (r.hasGt || r.hasLt) && len(r.values) > 0 {
			out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpNotIn, Values: append([]string(nil), r.values...)})
		}
	}
	return out
}

// String is a canonical rendering: equal sets render equally, so it doubles as an interning key.
func (rs Requirements) String() string {
	var b strings.Builder
	rs.writeTo(&b)
	return b.String()
}

func (rs Requirements) writeTo(b *strings.Builder) {
	for i, r := range rs.reqs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.Key)
		b.WriteByte(' ')
		r.writeTo(b)
	}
}

// appendKey appends String's rendering to b without building a string (interning looks the
// bytes up first and keeps a string only for a new set).
func (rs Requirements) appendKey(b []byte) []byte {
	for i := range rs.reqs {
		r := &rs.reqs[i]
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, r.Key...)
		b = append(b, ' ')
		b = r.appendKey(b)
	}
	return b
}

func (r *Requirement) appendKey(b []byte) []byte {
	values := func(b []byte) []byte {
		for i, v := range r.values {
			if i > 0 {
				b = append(b, ' ')
			}
			b = append(b, v...)
		}
		return b
	}
	switch op := r.Operator(); op {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		b = append(b, op...)
		b = append(b, " ["...)
		b = values(b)
		b = append(b, ']')
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		sep := false
		if r.hasGt {
			b = append(b, "Gt "...)
			b = strconv.AppendInt(b, r.gt, 10)
			sep = true
		}
		if r.hasLt {
			if sep {
				b = append(b, ' ')
			}
			b = append(b, "Lt "...)
			b = strconv.AppendInt(b, r.lt, 10)
		}
		if len(r.values) > 0 {
			b = append(b, " NotIn ["...)
			b = values(b)
			b = append(b, ']')
		}
	default:
		b = append(b, op...)
	}
	if r.MinValues != nil {
		b = append(b, " minValues "...)
		b = strconv.AppendInt(b, int64(*r.MinValues), 10)
	}
	return b
}

// Package status holds the condition type shared by every Karpenter API group
// (karpenter.sh, karpenter.k8s.aws, karpenter.kwok.sh) and small helpers that
// keep a root "Ready" condition consistent with the conditions it depends on.
//
// The wire format matches the one upstream Karpenter serves (type, status,
// observedGeneration, lastTransitionTime, reason, message), so status written by
// either implementation reads back unchanged.
// +kubebuilder:object:generate=true
package status

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionReady is the root condition every Karpenter object carries. It is
// True only when every dependent condition of the object is True.
const ConditionReady = "Ready"

// Condition describes one aspect of an object's current state.
type Condition struct {
	// Type of the condition in CamelCase or in foo.example.com/CamelCase, e.g. Ready or Launched.
	// +required
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	// +kubebuilder:validation:MaxLength=316
	Type string `json:"type"`
	// Status of the condition, one of True, False, Unknown.
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status metav1.ConditionStatus `json:"status"`
	// ObservedGeneration is the .metadata.generation the condition was computed from.
	// A condition whose observedGeneration is older than the object's generation is stale.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastTransitionTime is the last time the condition's status changed.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
	// Reason is a programmatic CamelCase identifier of why the condition is in its status.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?)?$`
	Reason string `json:"reason"`
	// Message is a human readable explanation of the status.
	// +required
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message"`
}

// IsTrue reports whether the condition exists and has status True.
func (c *Condition) IsTrue() bool { return c != nil && c.Status == metav1.ConditionTrue }

// IsFalse reports whether the condition exists and has status False.
func (c *Condition) IsFalse() bool { return c != nil && c.Status == metav1.ConditionFalse }

// IsUnknown reports whether the condition is missing or has status Unknown.
func (c *Condition) IsUnknown() bool { return c == nil || c.Status == metav1.ConditionUnknown }

// +kubebuilder:object:generate=false

// Object is an API object with status conditions. Every Karpenter kind
// implements it so that generic controllers (readiness, metrics) can read and
// write conditions without knowing the kind.
type Object interface {
	metav1.Object
	GetConditions() []Condition
	SetConditions([]Condition)
	// StatusConditions returns the accessor that knows this kind's dependent conditions.
	StatusConditions() ConditionSet
}

// +kubebuilder:object:generate=false

// ConditionTypes lists the dependent condition types that make up a kind's
// root Ready condition.
type ConditionTypes struct {
	root       string
	dependents []string
}

// NewReadyConditions declares the dependent conditions that roll up into Ready.
// With no dependents, Ready is set directly by the owning controller.
func NewReadyConditions(dependents ...string) ConditionTypes {
	return ConditionTypes{root: ConditionReady, dependents: dependents}
}

// Dependents returns the condition types Ready is computed from.
func (ct ConditionTypes) Dependents() []string { return append([]string(nil), ct.dependents...) }

// For returns an accessor over obj's conditions. Now defaults to time.Now and
// may be replaced by tests that use a fake clock.
func (ct ConditionTypes) For(obj Object) ConditionSet {
	return ConditionSet{types: ct, obj: obj, Now: time.Now}
}

// +kubebuilder:object:generate=false

// ConditionSet reads and writes the conditions of one object and keeps the
// root condition consistent after every write.
type ConditionSet struct {
	types ConditionTypes
	obj   Object
	// Now supplies LastTransitionTime for conditions whose status changes.
	Now func() time.Time
}

// List returns a copy of all conditions.
func (cs ConditionSet) List() []Condition {
	return append([]Condition(nil), cs.obj.GetConditions()...)
}

// Get returns the condition of type t or nil.
func (cs ConditionSet) Get(t string) *Condition {
	for _, c := range cs.obj.GetConditions() {
		if c.Type == t {
			cc := c
			return &cc
		}
	}
	return nil
}

// Root returns the root (Ready) condition.
func (cs ConditionSet) Root() *Condition { return cs.Get(cs.types.root) }

// IsTrue reports whether every listed condition type is True.
func (cs ConditionSet) IsTrue(types ...string) bool {
	for _, t := range types {
		if !cs.Get(t).IsTrue() {
			return false
		}
	}
	return true
}

// InitializeConditions sets every dependent (and root) condition that does not
// exist yet to Unknown, so that users see which steps are outstanding.
func (cs ConditionSet) InitializeConditions() {
	for _, t := range append([]string{cs.types.root}, cs.types.dependents...) {
		if cs.Get(t) == nil {
			cs.set(Condition{Type: t, Status: metav1.ConditionUnknown, Reason: "AwaitingReconciliation", Message: "object is awaiting reconciliation"})
		}
	}
	cs.recomputeRoot()
}

// Set writes c, keeping LastTransitionTime when the status did not change.
// It reports whether anything changed.
func (cs ConditionSet) Set(c Condition) bool {
	changed := cs.set(c)
	if c.Type != cs.types.root {
		if cs.recomputeRoot() {
			changed = true
		}
	}
	return changed
}

// SetTrue marks condition t True with a reason equal to its type.
func (cs ConditionSet) SetTrue(t string) bool {
	return cs.Set(Condition{Type: t, Status: metav1.ConditionTrue, Reason: t})
}

// SetTrueWithReason marks condition t True with the given reason and message.
func (cs ConditionSet) SetTrueWithReason(t, reason, message string) bool {
	return cs.Set(Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: message})
}

// SetFalse marks condition t False.
func (cs ConditionSet) SetFalse(t, reason, message string) bool {
	return cs.Set(Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: message})
}

// SetUnknown marks condition t Unknown.
func (cs ConditionSet) SetUnknown(t, reason, message string) bool {
	return cs.Set(Condition{Type: t, Status: metav1.ConditionUnknown, Reason: reason, Message: message})
}

// Clear removes condition t. The root condition cannot be cleared.
func (cs ConditionSet) Clear(t string) bool {
	if t == cs.types.root {
		return false
	}
	conds := cs.obj.GetConditions()
	out := conds[:0:0]
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	if len(out) == len(conds) {
		return false
	}
	cs.obj.SetConditions(out)
	cs.recomputeRoot()
	return true
}

func (cs ConditionSet) set(c Condition) bool {
	c.ObservedGeneration = cs.obj.GetGeneration()
	conds := cs.obj.GetConditions()
	for i, old := range conds {
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = metav1.NewTime(cs.Now())
		}
		if old == c {
			return false
		}
		out := append([]Condition(nil), conds...)
		out[i] = c
		cs.obj.SetConditions(out)
		return true
	}
	c.LastTransitionTime = metav1.NewTime(cs.Now())
	out := append(append([]Condition(nil), conds...), c)
	// Keep a stable order so that status writes do not flap.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	cs.obj.SetConditions(out)
	return true
}

// recomputeRoot derives Ready from the dependents: False if any is False,
// Unknown if any is Unknown or missing, True otherwise. Kinds without
// dependents manage Ready themselves.
func (cs ConditionSet) recomputeRoot() bool {
	if len(cs.types.dependents) == 0 {
		return false
	}
	var unknown, falsy *Condition
	for _, t := range cs.types.dependents {
		c := cs.Get(t)
		switch {
		case c == nil:
			if unknown == nil {
				unknown = &Condition{Type: t, Reason: "AwaitingReconciliation", Message: t + " is not set"}
			}
		case c.IsFalse():
			if falsy == nil {
				falsy = c
			}
		case c.IsUnknown():
			if unknown == nil {
				unknown = c
			}
		}
	}
	switch {
	case falsy != nil:
		return cs.set(Condition{Type: cs.types.root, Status: metav1.ConditionFalse, Reason: reasonOrType(falsy), Message: falsy.Message})
	case unknown != nil:
		return cs.set(Condition{Type: cs.types.root, Status: metav1.ConditionUnknown, Reason: reasonOrType(unknown), Message: unknown.Message})
	default:
		return cs.set(Condition{Type: cs.types.root, Status: metav1.ConditionTrue, Reason: cs.types.root})
	}
}

func reasonOrType(c *Condition) string {
	if c.Reason != "" {
		return c.Reason
	}
	return c.Type
}

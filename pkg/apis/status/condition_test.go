package status_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// object is a minimal status.Object for the tests.
type object struct {
	metav1.ObjectMeta
	conditions []status.Condition
}

var types = status.NewReadyConditions("Launched", "Registered")

func (o *object) GetConditions() []status.Condition     { return o.conditions }
func (o *object) SetConditions(c []status.Condition)    { o.conditions = c }
func (o *object) StatusConditions() status.ConditionSet { return types.For(o) }

func at(sec int64) func() time.Time { return func() time.Time { return time.Unix(sec, 0) } }

func TestReadyRollsUpDependents(t *testing.T) {
	o := &object{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	cs := o.StatusConditions()
	cs.Now = at(100)
	cs.InitializeConditions()
	if r := cs.Root(); r == nil || !r.IsUnknown() {
		t.Fatalf("Ready after initialization = %+v, want Unknown", r)
	}
	cs.SetTrue("Launched")
	if cs.Root().IsTrue() {
		t.Fatal("Ready True with Registered still Unknown")
	}
	cs.SetFalse("Registered", "NodeNotFound", "no node yet")
	if r := cs.Root(); !r.IsFalse() || r.Reason != "NodeNotFound" || r.Message != "no node yet" {
		t.Fatalf("Ready = %+v, want False carrying the dependent's reason", r)
	}
	cs.Now = at(200)
	cs.SetTrue("Registered")
	r := cs.Root()
	if !r.IsTrue() || r.LastTransitionTime.Unix() != 200 || r.ObservedGeneration != 3 {
		t.Fatalf("Ready = %+v, want True since 200 at generation 3", r)
	}
	if !cs.IsTrue("Launched", "Registered", status.ConditionReady) {
		t.Fatal("IsTrue over all conditions = false")
	}
}

func TestLastTransitionTimeOnlyMovesOnStatusChange(t *testing.T) {
	o := &object{}
	cs := o.StatusConditions()
	cs.Now = at(10)
	if !cs.SetFalse("Launched", "Pending", "waiting") {
		t.Fatal("first write reported no change")
	}
	cs.Now = at(20)
	if !cs.SetFalse("Launched", "Pending", "still waiting") {
		t.Fatal("message change reported no change")
	}
	if got := cs.Get("Launched").LastTransitionTime.Unix(); got != 10 {
		t.Fatalf("lastTransitionTime moved to %d without a status change", got)
	}
	if cs.SetFalse("Launched", "Pending", "still waiting") {
		t.Fatal("identical write reported a change")
	}
	cs.SetTrue("Launched")
	if got := cs.Get("Launched").LastTransitionTime.Unix(); got != 20 {
		t.Fatalf("lastTransitionTime = %d, want 20 after the status changed", got)
	}
}

func TestClearAndOrder(t *testing.T) {
	o := &object{}
	cs := o.StatusConditions()
	cs.SetTrue("Registered")
	cs.SetTrue("Launched")
	var got []string
	for _, c := range o.conditions {
		got = append(got, c.Type)
	}
	if want := "Launched,Ready,Registered"; joined(got) != want {
		t.Fatalf("conditions in order %s, want %s", joined(got), want)
	}
	if !cs.Clear("Registered") || cs.Get("Registered") != nil {
		t.Fatal("Clear did not remove the condition")
	}
	if cs.Root().IsTrue() {
		t.Fatal("Ready stayed True after a dependent was cleared")
	}
	if cs.Clear(status.ConditionReady) {
		t.Fatal("the root condition was cleared")
	}
}

func joined(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

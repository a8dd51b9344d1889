package ownedconditions_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/controllers/nodeclaim/ownedconditions"
)

func cond(t, s, msg string) status.Condition {
	return status.Condition{Type: t, Status: metav1.ConditionStatus(s), Message: msg}
}

func TestOfKeepsTheGivenTypesInOrder(t *testing.T) {
	nc := &v1.NodeClaim{}
	nc.Status.Conditions = []status.Condition{cond("Drained", "True", ""), cond("Ready", "True", ""), cond("VolumesDetached", "False", "")}
	got := ownedconditions.Of(nc, "VolumesDetached", "Drained", "InstanceTerminating")
	if len(got) != 2 || got[0].Type != "Drained" || got[1].Type != "VolumesDetached" {
		t.Errorf("Of = %v, want Drained then VolumesDetached", got)
	}
	if none := ownedconditions.Of(nc, "Consolidatable"); none == nil || len(none) != 0 {
		t.Errorf("Of with no match = %#v, want an empty (not nil) list: an apply of it must send []", none)
	}
}

func TestOverlayReplacesAndAddsRememberedConditions(t *testing.T) {
	nc := &v1.NodeClaim{}
	// A cache copy from before the controller's last write: Drained still
	// False, VolumesDetached not there yet, another owner's Ready untouched.
	nc.Status.Conditions = []status.Condition{cond("Drained", "False", "3 pods left"), cond("Ready", "True", "")}
	ownedconditions.Overlay(nc, []status.Condition{cond("Drained", "True", ""), cond("VolumesDetached", "True", "")})
	want := []status.Condition{cond("Drained", "True", ""), cond("Ready", "True", ""), cond("VolumesDetached", "True", "")}
	if len(nc.Status.Conditions) != len(want) {
		t.Fatalf("conditions = %v, want %v", nc.Status.Conditions, want)
	}
	for i := range want {
		if nc.Status.Conditions[i] != want[i] {
			t.Errorf("condition %d = %v, want %v", i, nc.Status.Conditions[i], want[i])
		}
	}
}

package plan_test

import (
	"strings"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// A NodePool whose NodeClass is not Ready launches nothing, and the pod's
// reason names it (the provisioner's own words).
func TestNotReadyNodeClassIsTheReason(t *testing.T) {
	s := plantest.Base(t, "testdata/nodepool.yaml")
	if err := s.Add(fixtures.KWOKNodeClass("default", 0, false), plantest.PendingPod("web", "1")); err != nil {
		t.Fatal(err)
	}
	p := compute(t, s)
	if len(p.Launches) != 0 || len(p.Pending) != 1 || !strings.Contains(strings.Join(p.Pending[0].Reasons, " "), "nodepool default is not ready") {
		t.Fatalf("launches %+v pending %+v", p.Launches, p.Pending)
	}
}

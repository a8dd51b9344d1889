package disruption_test

import (
	"reflect"
	"testing"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
)

// TestMethods pins what every method says about itself: the order a pass tries
// them in, their names (log and explanation text), reasons and the label
// values upstream's metrics give their work.
func TestMethods(t *testing.T) {
	type row struct {
		name, metricReason, consolidationType string
		reason                                v1.DisruptionReason
		validated, simulates                  bool
	}
	want := []row{
		{"repair", "unhealthy", "", v1.DisruptionReasonUnhealthy, false, true},
		{"emptiness", "empty", "empty", v1.DisruptionReasonEmpty, true, false},
		{"drift", "drifted", "", v1.DisruptionReasonDrifted, false, true},
		{"multi_node_consolidation", "underutilized", "multi", v1.DisruptionReasonUnderutilized, true, true},
		{"single_node_consolidation", "underutilized", "single", v1.DisruptionReasonUnderutilized, true, true},
		// Ours, after upstream's methods: consolidation_type "repack" is a value upstream's label never takes.
		{"repack_consolidation", "underutilized", "repack", v1.DisruptionReasonUnderutilized, true, true},
	}
	var got []row
	for _, m := range disruption.Methods {
		got = append(got, row{m.String(), disruption.MetricReason(m.Reason()), m.ConsolidationType(), m.Reason(), m.Validated(), m.Simulates()})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("methods\n got %+v\nwant %+v", got, want)
	}
	if want := []v1.DisruptionReason{v1.DisruptionReasonUnhealthy, v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized}; !reflect.DeepEqual(disruption.Reasons, want) {
		t.Fatalf("reasons %v, want %v", disruption.Reasons, want)
	}
	// Method values are comparable: a decision's method is found by ==.
	seen := map[disruption.Method]bool{}
	for _, m := range disruption.Methods {
		if seen[m] {
			t.Fatalf("method %s listed twice", m)
		}
		seen[m] = true
	}
	if !seen[disruption.MethodDrift] || disruption.MethodDrift == disruption.MethodEmptiness {
		t.Fatal("method values do not compare as distinct values")
	}
}

package orchestration

import "testing"

// The condition label spells condition types in snake case, as upstream's.
func TestSnakeCaseConditionLabel(t *testing.T) {
	for in, want := range map[string]string{
		"Ready":                    "ready",
		"AcceleratedHardwareReady": "accelerated_hardware_ready",
		"KWOKUnhealthy":            "kwok_unhealthy",
		"ContainerRuntimeReady":    "container_runtime_ready",
		"Disk2Pressure":            "disk2_pressure",
	} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

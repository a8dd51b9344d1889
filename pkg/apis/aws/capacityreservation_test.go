package aws_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// TestCapacityReservationSelectorTerms covers spec.capacityReservationSelectorTerms
// and status.capacityReservations: valid terms are accepted and read back
// unchanged, invalid ones are rejected with a message naming the field.
func TestCapacityReservationSelectorTerms(t *testing.T) {
	valid := []string{
		`{"spec":{"capacityReservationSelectorTerms":[{"id":"cr-0123456789abcdef0"}]}}`,
		`{"spec":{"capacityReservationSelectorTerms":[{"tags":{"team":"ml","env":"*"},"ownerID":"123456789012"}]}}`,
		`{"spec":{"capacityReservationSelectorTerms":[{"instanceMatchCriteria":"open"},{"instanceMatchCriteria":"targeted","ownerID":"123456789012"}]}}`,
		`{"spec":{"capacityReservationSelectorTerms":` + repeatJSON(30, `{"id":"cr-1"}`) + `}}`,
	}
	for i, p := range valid {
		t.Run(fmt.Sprintf("valid-%d", i), func(t *testing.T) {
			u := parseManifest(t, baseV1)
			patch := map[string]any{}
			if err := json.Unmarshal([]byte(p), &patch); err != nil {
				t.Fatal(err)
			}
			u.Object = mergePatch(u.Object, patch).(map[string]any)
			u.SetName(fmt.Sprintf("cr-valid-%d", i))
			if err := create(t, u); err != nil {
				t.Fatalf("rejected: %v", err)
			}
			expectSubset(t, "", patch, get(t, u).Object)
		})
	}

	invalid := []invalidCase{
		{"empty term", baseV1, `{"spec":{"capacityReservationSelectorTerms":[{}]}}`, "spec.capacityReservationSelectorTerms", "each term must set at least one of ['tags', 'id', 'instanceMatchCriteria']"},
		{"ownerID alone", baseV1, `{"spec":{"capacityReservationSelectorTerms":[{"ownerID":"123456789012"}]}}`, "spec.capacityReservationSelectorTerms", "each term must set at least one of ['tags', 'id', 'instanceMatchCriteria']"},
		{"id with tags", baseV1, `{"spec":{"capacityReservationSelectorTerms":[{"id":"cr-1","tags":{"a":"b"}}]}}`, "spec.capacityReservationSelectorTerms", "'id' is mutually exclusive"},
		{"id with ownerID in every term", baseV1, `{"spec":{"capacityReservationSelectorTerms":[{"id":"cr-2","tags":{"a":"b"}},{"id":"cr-1","ownerID":"123456789012"}]}}`, "spec.capacityReservationSelectorTerms", "'id' is mutually exclusive"},
		{"id with instanceMatchCriteria", baseV1, `{"spec":{"capacityReservationSelectorTerms":[{"id":"cr-1","instanceMatchCriteria":"open"}]}}`, "spec.capacityReservationSelectorTerms", "'id' is mutually exclusive"},
		{"bad id", baseV1, `{"spec":{"capacityReservationSelectorTerms":[{"id":"sg-1"}]}}`, "spec.capacityReservationSelectorTerms[0].id", "should match '^cr-[0-9a-z]+$'"},
		{"short ownerID", baseV1, `{"spec":{"capacityReservationSelectorTerms":[{"tags":{"a":"b"},"ownerID":"12345"}]}}`, "spec.capacityReservationSelectorTerms[0].ownerID", "should match '^[0-9]{12}$'"},
		{"bad instanceMatchCriteria", baseV1, `{"spec":{"capacityReservationSelectorTerms":[{"instanceMatchCriteria":"any"}]}}`, "spec.capacityReservationSelectorTerms[0].instanceMatchCriteria", "Unsupported value"},
		{"empty tag value", baseV1, `{"spec":{"capacityReservationSelectorTerms":[{"tags":{"a":""}}]}}`, "spec.capacityReservationSelectorTerms[0].tags", "empty tag keys or values aren't supported"},
		{"31 terms", baseV1, `{"spec":{"capacityReservationSelectorTerms":` + repeatJSON(31, `{"id":"cr-1"}`) + `}}`, "spec.capacityReservationSelectorTerms", "must have at most 30 items"},
	}
	for i, c := range invalid {
		t.Run(c.name, func(t *testing.T) {
			u := parseManifest(t, c.base)
			patch := map[string]any{}
			if err := json.Unmarshal([]byte(c.patch), &patch); err != nil {
				t.Fatal(err)
			}
			u.Object = mergePatch(u.Object, patch).(map[string]any)
			u.SetName(fmt.Sprintf("cr-invalid-%d", i))
			expectRejected(t, create(t, u), c.field, c.message)
		})
	}
}

// TestCapacityReservationStatus writes status.capacityReservations through
// the status subresource: upstream's names and enums are accepted, the
// defaults fill in, and an unknown reservationType is refused.
func TestCapacityReservationStatus(t *testing.T) {
	ctx := context.Background()
	u := parseManifest(t, baseV1)
	u.SetName("cr-status")
	if err := create(t, u); err != nil {
		t.Fatal(err)
	}
	cur := get(t, u)
	reservations := []any{
		map[string]any{"availabilityZone": "us-west-2a", "id": "cr-0a", "instanceType": "m5.large", "ownerID": "123456789012", "instanceMatchCriteria": "targeted", "reservationType": "capacity-block", "state": "expiring", "interruptible": true, "endTime": "2026-12-01T00:00:00Z"},
		map[string]any{"availabilityZone": "us-west-2b", "id": "cr-0b", "instanceType": "c5.xlarge", "ownerID": "123456789012", "instanceMatchCriteria": "open"},
	}
	cur.Object["status"] = map[string]any{"capacityReservations": reservations}
	if err := e.Client.Status().Update(ctx, cur); err != nil {
		t.Fatalf("status update rejected: %v", err)
	}
	got := get(t, u)
	expectSubset(t, ".status.capacityReservations", reservations[:1], got.Object["status"].(map[string]any)["capacityReservations"].([]any)[:1])
	second := got.Object["status"].(map[string]any)["capacityReservations"].([]any)[1].(map[string]any)
	if second["reservationType"] != "default" || second["state"] != "active" {
		t.Errorf("defaults: want reservationType default and state active, got %v", second)
	}

	bad := get(t, u)
	bad.Object["status"].(map[string]any)["capacityReservations"].([]any)[0].(map[string]any)["reservationType"] = "spot-block"
	expectRejected(t, e.Client.Status().Update(ctx, bad), "status.capacityReservations[0].reservationType", "Unsupported value")

	// instanceMatchCriteria is required, the zone is free-form and a
	// condition's reason is never empty, as upstream's schema says.
	noCriteria := get(t, u)
	delete(noCriteria.Object["status"].(map[string]any)["capacityReservations"].([]any)[1].(map[string]any), "instanceMatchCriteria")
	expectRejected(t, e.Client.Status().Update(ctx, noCriteria), "status.capacityReservations[1].instanceMatchCriteria", "Required value")
	zone := get(t, u)
	zone.Object["status"].(map[string]any)["capacityReservations"].([]any)[1].(map[string]any)["availabilityZone"] = "Zone_B"
	if err := e.Client.Status().Update(ctx, zone); err != nil {
		t.Errorf("availabilityZone Zone_B rejected: %v", err)
	}
	emptyReason := get(t, u)
	emptyReason.Object["status"].(map[string]any)["conditions"] = []any{map[string]any{"type": "Ready", "status": "True", "reason": "", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}
	expectRejected(t, e.Client.Status().Update(ctx, emptyReason), "status.conditions[0].reason", "should be at least 1 chars long")
}

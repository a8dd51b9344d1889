package ownedconditions

import (
	"context"
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
)

// Field managers of the controllers that apply NodeClaim conditions.
const (
	LifecycleManager  = "karpenter-nodeclaim-lifecycle"
	DisruptionManager = "karpenter-nodeclaim-disruption"
)

// Field managers of the controllers that write NodeClaim status with a merge
// patch or an update. A merge patch names no owner the API server needs, but
// naming one puts the writer in the request (an audit log or a benchmark
// counts writes per controller from it) and in managedFields.
const (
	PodEventsManager     = "karpenter-podevents"
	ExplainManager       = "karpenter-disruption-explain"
	TerminationManager   = "karpenter-termination"
	OrchestrationManager = "karpenter-disruption-orchestration"
)

// Apply writes nc's conditions of the given types (those it has; a type it
// lacks is removed from the stored NodeClaim) as field manager owner, leaving
// every other condition as stored. nc is updated to the stored NodeClaim.
//
// A condition another manager also owns (written by a merge patch or update
// before its controller applied it) is not removed by leaving it out of an
// apply; Apply then removes it with a merge patch conditional on the version
// it just got back, so that a removal is never silently skipped.
func Apply(ctx context.Context, kube client.Client, nc *v1.NodeClaim, owner string, conditionTypes ...string) error {
	return ApplyWithFields(ctx, kube, nc, owner, nil, conditionTypes...)
}

// ApplyWithFields is Apply with other status fields in the same request
// (JSON name to value). The owner then owns those fields too: a later apply
// that leaves one out removes it, so the caller must send every field it
// ever sent, every time.
func ApplyWithFields(ctx context.Context, kube client.Client, nc *v1.NodeClaim, owner string, fields map[string]any, conditionTypes ...string) error {
	owned := Of(nc, conditionTypes...)
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1.SchemeGroupVersion.String(),
		"kind":       "NodeClaim",
		// The UID makes the apply fail rather than write to another NodeClaim
		// of the same name created since nc was read.
		"metadata": map[string]any{"name": nc.Name, "uid": nc.UID},
		"status":   statusOf(fields, owned),
	})
	if err != nil {
		return err
	}
	if err := kube.Status().Patch(ctx, nc, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(owner), client.ForceOwnership); err != nil {
		return err
	}
	stale := false
	for _, c := range nc.Status.Conditions {
		if slices.Contains(conditionTypes, c.Type) && !slices.ContainsFunc(owned, func(o status.Condition) bool { return o.Type == c.Type }) {
			stale = true
		}
	}
	if !stale {
		return nil
	}
	stored := nc.DeepCopy()
	nc.Status.Conditions = slices.DeleteFunc(slices.Clone(nc.Status.Conditions), func(c status.Condition) bool {
		return slices.Contains(conditionTypes, c.Type) && !slices.ContainsFunc(owned, func(o status.Condition) bool { return o.Type == c.Type })
	})
	return kube.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}), client.FieldOwner(owner))
}

func statusOf(fields map[string]any, conditions []status.Condition) map[string]any {
	out := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		out[k] = v
	}
	out["conditions"] = conditions
	return out
}

// Of returns nc's conditions of the given types, in nc's order (never nil,
// so that an apply of none sends an empty list).
func Of(nc *v1.NodeClaim, conditionTypes ...string) []status.Condition {
	out := make([]status.Condition, 0, len(conditionTypes))
	for _, c := range nc.Status.Conditions {
		if slices.Contains(conditionTypes, c.Type) {
			out = append(out, c)
		}
	}
	return out
}

// Overlay puts a controller's remembered last write back on nc, a copy read
// from a cache that may predate that write: each remembered condition
// replaces nc's of its type, or is added. A controller that alone writes a
// condition type knows its value better than any cache.
func Overlay(nc *v1.NodeClaim, remembered []status.Condition) {
	for _, cond := range remembered {
		if i := slices.IndexFunc(nc.Status.Conditions, func(s status.Condition) bool { return s.Type == cond.Type }); i >= 0 {
			nc.Status.Conditions[i] = cond
		} else {
			nc.Status.Conditions = append(nc.Status.Conditions, cond)
		}
	}
}

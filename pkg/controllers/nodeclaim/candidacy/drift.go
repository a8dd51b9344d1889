package candidacy

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// Drift reasons Karpenter itself detects (upstream's names).
const (
	ReasonNodePoolDrifted      = "NodePoolDrifted"
	ReasonRequirementsDrifted  = "RequirementsDrifted"
	ReasonInstanceTypeNotFound = "InstanceTypeNotFound"
	// ReasonCloudProviderDrifted stands in for a provider reason that is not
	// a valid condition reason (the provider's text goes into the message).
	ReasonCloudProviderDrifted = "CloudProviderDrifted"
)

// DriftRecheckInterval is how often drift is re-evaluated without a change to
// the NodeClaim or its NodePool: the cloud provider's view (e.g. a new image)
// can change without any Kubernetes event.
const DriftRecheckInterval = 5 * time.Minute

// InstanceTypeDriftMinAge: a NodeClaim younger than this is not checked for a
// vanished instance type or offering. The cloud provider's catalog can lag a
// launch (a type it just launched may be missing from a stale list), and
// replacing a node minutes after creating it would be churn for nothing.
const InstanceTypeDriftMinAge = time.Hour

// Drift computes the Drifted condition.
type Drift struct {
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
}

// Reconcile sets or clears Drifted on nc (in memory).
func (d *Drift) Reconcile(ctx context.Context, np *v1.NodePool, nc *v1.NodeClaim) (reconcile.Result, error) {
	conds := conditions(nc, d.clock)
	// Only a launched NodeClaim has an instance that can differ from its
	// NodePool; before that there is nothing to replace.
	if !conds.Get(v1.ConditionTypeLaunched).IsTrue() {
		conds.Clear(v1.ConditionTypeDrifted)
		return reconcile.Result{}, nil
	}
	reason, msg, err := d.drifted(ctx, np, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if reason == "" {
		conds.Clear(v1.ConditionTypeDrifted)
	} else {
		conds.SetTrueWithReason(v1.ConditionTypeDrifted, reason, msg)
	}
	return reconcile.Result{RequeueAfter: DriftRecheckInterval}, nil
}

// drifted runs the checks cheapest first and returns the first that finds drift.
func (d *Drift) drifted(ctx context.Context, np *v1.NodePool, nc *v1.NodeClaim) (reason, message string, err error) {
	if msg := StaticDrift(np, nc); msg != "" {
		return ReasonNodePoolDrifted, msg, nil
	}
	if msg := RequirementsDrift(np, nc); msg != "" {
		return ReasonRequirementsDrifted, msg, nil
	}
	if d.clock.Since(nc.CreationTimestamp.Time) >= InstanceTypeDriftMinAge {
		its, err := d.cloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			return "", "", fmt.Errorf("getting instance types of NodePool %s: %w", np.Name, err)
		}
		if msg := InstanceTypeDrift(its, nc); msg != "" {
			return ReasonInstanceTypeNotFound, msg, nil
		}
	}
	r, err := d.cloudProvider.IsDrifted(ctx, nc)
	if err != nil {
		return "", "", fmt.Errorf("asking cloud provider %s whether NodeClaim %s drifted: %w", d.cloudProvider.Name(), nc.Name, err)
	}
	if r == "" {
		return "", "", nil
	}
	msg := fmt.Sprintf("cloud provider %s reports the instance drifted from its NodeClass: %s", d.cloudProvider.Name(), r)
	if !validReason.MatchString(string(r)) {
		return ReasonCloudProviderDrifted, msg, nil
	}
	return string(r), msg, nil
}

// validReason is the API's pattern for condition reasons.
var validReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// StaticDrift returns why nc's NodePool template hash no longer matches, or "".
// Hashes are compared only when nc carries the current hash version: a hash
// of another version (another Karpenter's, or an older scheme) is not
// comparable, and the NodePool hash controller re-stamps such NodeClaims.
// A NodeClaim without hash annotations (not created by a provisioner) is
// never statically drifted.
func StaticDrift(np *v1.NodePool, nc *v1.NodeClaim) string {
	have, ok := nc.Annotations[v1.NodePoolHashAnnotationKey]
	if !ok || nc.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion {
		return ""
	}
	if want := np.Hash(); have != want {
		return fmt.Sprintf("NodePool %q template changed since the NodeClaim was created "+
			"(one of labels, annotations, taints, startupTaints, nodeClassRef, terminationGracePeriod, expireAfter; "+
			"%s %s, now %s)", np.Name, v1.NodePoolHashAnnotationKey, have, want)
	}
	return ""
}

// RequirementsDrift returns which NodePool requirement the NodeClaim's labels
// no longer satisfy, or "". Every requirement must hold for the labels as
// they are: a positive requirement on a label the NodeClaim does not carry is
// not satisfied.
func RequirementsDrift(np *v1.NodePool, nc *v1.NodeClaim) string {
	reqs := make([]scheduling.Requirement, 0, len(np.Spec.Template.Spec.Requirements))
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs = append(reqs, scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	err := scheduling.FromLabels(nc.Labels).Compatible(scheduling.NewRequirements(reqs...), nil)
	if err == nil {
		return ""
	}
	var ie *scheduling.IncompatibleError
	if !errors.As(err, &ie) {
		return fmt.Sprintf("NodeClaim labels no longer satisfy NodePool %q requirements: %v", np.Name, err)
	}
	want := describeRequirement(np, ie.Key)
	if v, ok := nc.Labels[ie.Key]; ok {
		return fmt.Sprintf("label %s=%s no longer satisfies NodePool %q requirement %s", ie.Key, v, np.Name, want)
	}
	return fmt.Sprintf("NodeClaim has no label %s, which NodePool %q now requires (%s)", ie.Key, np.Name, want)
}

// InstanceTypeDrift returns why the NodeClaim's instance type can no longer be
// had from its NodePool (the type is gone from the provider's list, or no
// offering of it matches the NodeClaim's zone and capacity type), or "". An
// offering that is merely unavailable right now (insufficient capacity) is
// not drift. A NodeClaim without an instance-type label is never drifted here.
func InstanceTypeDrift(its []*scheduling.InstanceType, nc *v1.NodeClaim) string {
	name := nc.Labels[scheduling.LabelInstanceType]
	if name == "" {
		return ""
	}
	for _, it := range its {
		if it.Name != name {
			continue
		}
		zone, ct := nc.Labels[scheduling.LabelZone], nc.Labels[scheduling.LabelCapacityType]
		for _, o := range it.Offerings {
			if (zone == "" || o.Zone == zone) && (ct == "" || o.CapacityType == ct) {
				return ""
			}
		}
		return fmt.Sprintf("instance type %s has no %s offering in zone %s any more", name, ct, zone)
	}
	return fmt.Sprintf("instance type %s is no longer offered for NodePool %q", name, nc.Labels[v1.NodePoolLabelKey])
}

// describeRequirement renders the NodePool's requirements on key as written.
func describeRequirement(np *v1.NodePool, key string) string {
	var parts []string
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.Key != key {
			continue
		}
		s := r.Key + " " + string(r.Operator)
		if len(r.Values) > 0 {
			s += " [" + strings.Join(r.Values, ", ") + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " and ")
}

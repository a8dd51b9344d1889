package nodepool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
)

// Validation sets ValidationSucceeded from RuntimeValidate. The CRD's schema
// and CEL rules reject most mistakes at admission; this catches what slips
// past them (objects stored before a rule existed, or written with validation
// off) so the provisioner never launches from an invalid template.
type Validation struct {
	kubeClient client.Client
	clock      clock.Clock
	// StaticCapacity is the StaticCapacity feature gate: without it a static
	// NodePool launches nothing, which its condition says.
	StaticCapacity bool
}

// NewValidation returns the validation controller.
func NewValidation(kubeClient client.Client, clk clock.Clock) *Validation {
	return &Validation{kubeClient: kubeClient, clock: clk}
}

// Reconcile validates one NodePool.
func (v *Validation) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := v.kubeClient.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	stored := np.DeepCopy()
	conds := conditions(np, v.clock)
	if err := RuntimeValidate(np); err != nil {
		reason := "NodePoolValidationFailed"
		if errors.Is(err, errInvalidBudget) {
			reason = "InvalidDisruptionBudget"
		}
		conds.SetFalse(v1.ConditionTypeValidationSucceeded, reason, err.Error())
	} else if np.Spec.Replicas != nil && !v.StaticCapacity {
		conds.SetTrueWithReason(v1.ConditionTypeValidationSucceeded, ReasonStaticCapacityDisabled,
			fmt.Sprintf("spec.replicas is %d: %s", *np.Spec.Replicas, v1.StaticGateOff))
	} else if why := v1.LimitsAdmitNoNode(np.Spec.Limits); why != "" {
		// Valid (a zero limit is how users pause a pool), so Ready stays True and
		// disruption is unchanged; the reason says the pool launches nothing.
		conds.SetTrueWithReason(v1.ConditionTypeValidationSucceeded, ReasonLimitsAdmitNoNode,
			fmt.Sprintf("limits allow no node (%s): this NodePool launches nothing until the limit is raised", why))
	} else {
		conds.SetTrue(v1.ConditionTypeValidationSucceeded)
	}
	return patchStatus(ctx, v.kubeClient, stored, np)
}

// ReasonLimitsAdmitNoNode is ValidationSucceeded's reason on a valid NodePool
// whose limits keep every node out (cpu, memory or nodes at 0).
const ReasonLimitsAdmitNoNode = "LimitsAdmitNoNode"

// ReasonStaticCapacityDisabled is ValidationSucceeded's reason on a valid
// static NodePool (spec.replicas set) while the StaticCapacity feature gate is
// off: it launches nothing, as upstream's.
const ReasonStaticCapacityDisabled = "StaticCapacityDisabled"

// Register adds the controller to the manager.
func (v *Validation) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named("nodepool.validation").For(&v1.NodePool{}).Complete(v)
}

// errInvalidBudget marks budget problems, so the condition's reason says that
// the NodePool's own disruption configuration is what blocks disruption.
var errInvalidBudget = errors.New("the disruption controller cannot evaluate this budget, so no node of this NodePool is disrupted voluntarily until it is fixed")

// RuntimeValidate checks the NodePool's template labels, requirements and
// taints and its disruption budgets (with the parsers the disruption controller
// uses), returning every problem found.
func RuntimeValidate(np *v1.NodePool) error {
	var errs []error
	for i, b := range np.Spec.Disruption.Budgets {
		if err := disruption.ValidateBudget(b); err != nil {
			errs = append(errs, fmt.Errorf("spec.disruption.budgets[%d]: %v: %w", i, err, errInvalidBudget))
		}
	}
	tmpl := np.Spec.Template
	for k, val := range tmpl.ObjectMeta.Labels {
		if err := validateLabelKey(k); err != nil {
			errs = append(errs, fmt.Errorf("spec.template.metadata.labels[%s]: %w", k, err))
		}
		for _, msg := range validation.IsValidLabelValue(val) {
			errs = append(errs, fmt.Errorf("spec.template.metadata.labels[%s]: invalid value %q: %s", k, val, msg))
		}
	}
	for i, r := range tmpl.Spec.Requirements {
		if err := validateRequirement(r); err != nil {
			errs = append(errs, fmt.Errorf("spec.template.spec.requirements[%d]: %w", i, err))
		}
	}
	seen := map[string]bool{}
	for field, taints := range map[string][]corev1.Taint{"taints": tmpl.Spec.Taints, "startupTaints": tmpl.Spec.StartupTaints} {
		for i, t := range taints {
			if err := validateTaint(t); err != nil {
				errs = append(errs, fmt.Errorf("spec.template.spec.%s[%d]: %w", field, i, err))
			}
			key := t.Key + ":" + string(t.Effect)
			if seen[key] {
				errs = append(errs, fmt.Errorf("spec.template.spec.%s[%d]: duplicate taint %s", field, i, key))
			}
			seen[key] = true
		}
	}
	if tmpl.Spec.NodeClassRef == nil {
		errs = append(errs, errors.New("spec.template.spec.nodeClassRef is required"))
	}
	return errors.Join(errs...)
}

func validateLabelKey(k string) error {
	for _, msg := range validation.IsQualifiedName(k) {
		return fmt.Errorf("invalid key: %s", msg)
	}
	for _, r := range v1.RestrictedLabels {
		if k == r {
			return fmt.Errorf("label %q is restricted", k)
		}
	}
	if isWellKnown(k) {
		return nil
	}
	domain := ""
	if i := strings.Index(k, "/"); i >= 0 {
		domain = k[:i]
	}
	for _, exc := range v1.LabelDomainExceptions {
		if domain == exc || strings.HasSuffix(domain, "."+exc) {
			return nil
		}
	}
	for _, restricted := range v1.RestrictedLabelDomains {
		if domain == restricted || strings.HasSuffix(domain, "."+restricted) {
			return fmt.Errorf("label domain %q is restricted", restricted)
		}
	}
	return nil
}

func isWellKnown(k string) bool {
	for _, w := range v1.WellKnownLabels {
		if k == w {
			return true
		}
	}
	_, normalized := v1.NormalizedLabels[k]
	return normalized
}

func validateRequirement(r v1.NodeSelectorRequirementWithMinValues) error {
	if r.Key == v1.NodePoolLabelKey {
		return fmt.Errorf("label %q is restricted", r.Key)
	}
	if err := validateLabelKey(r.Key); err != nil && !isWellKnown(r.Key) {
		return err
	}
	for _, val := range r.Values {
		for _, msg := range validation.IsValidLabelValue(val) {
			return fmt.Errorf("invalid value %q: %s", val, msg)
		}
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		if len(r.Values) == 0 {
			return errors.New("operator In requires values")
		}
		if r.MinValues != nil && len(r.Values) < *r.MinValues {
			return fmt.Errorf("minValues %d exceeds the %d values listed", *r.MinValues, len(r.Values))
		}
		if err := knownValues(r); err != nil {
			return err
		}
	case corev1.NodeSelectorOpNotIn:
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		// Values are ignored, as upstream and the Kubernetes scheduler do.
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, "Gte", "Lte":
		if len(r.Values) != 1 {
			return fmt.Errorf("operator %s takes exactly one value", r.Operator)
		}
		if n, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil || n < 0 {
			return fmt.Errorf("operator %s needs a non-negative integer, got %q", r.Operator, r.Values[0])
		}
	default:
		return fmt.Errorf("unknown operator %q", r.Operator)
	}
	return nil
}

// knownValues refuses an In requirement of a key with well-known values
// that lists none of them, or fewer than its minValues.
func knownValues(r v1.NodeSelectorRequirementWithMinValues) error {
	known, ok := v1.WellKnownValuesForRequirements[r.Key]
	if !ok {
		return nil
	}
	valid := 0
	for _, val := range r.Values {
		if slices.Contains(known, val) {
			valid++
		}
	}
	if valid == 0 {
		return fmt.Errorf("%s In %v: none of the values can be launched, expected one of %v", r.Key, r.Values, known)
	}
	if r.MinValues != nil && valid < *r.MinValues {
		return fmt.Errorf("%s In %v: minValues %d but only %d of the values can be launched (expected values: %v)", r.Key, r.Values, *r.MinValues, valid, known)
	}
	return nil
}

func validateTaint(t corev1.Taint) error {
	if t.Key == "" {
		return errors.New("taint key is empty")
	}
	for _, msg := range validation.IsQualifiedName(t.Key) {
		return fmt.Errorf("invalid taint key %q: %s", t.Key, msg)
	}
	for _, msg := range validation.IsValidLabelValue(t.Value) {
		return fmt.Errorf("invalid taint value %q: %s", t.Value, msg)
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return fmt.Errorf("invalid taint effect %q", t.Effect)
}

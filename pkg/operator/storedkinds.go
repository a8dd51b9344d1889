package operator

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
)

// StoredKind is a kind whose objects the API server stores for Karpenter but
// whose behaviour this version does not have yet: objects of it are kept (an
// upgrade or a switch from upstream never deletes them) and ignored.
type StoredKind struct {
	GVK schema.GroupVersionKind
	// Gate is the feature gate upstream puts the behaviour behind.
	Gate string
	// Ignored says what does not happen for the objects.
	Ignored string
}

// StoredKinds are the kinds stored but not acted on.
var StoredKinds = []StoredKind{
	{
		GVK:     v1alpha1.SchemeGroupVersion.WithKind("NodeOverlay"),
		Gate:    options.FeatureNodeOverlay,
		Ignored: "their price and capacity adjustments are not applied to instance types",
	},
	{
		GVK:     autoscalingv1beta1.SchemeGroupVersion.WithKind("CapacityBuffer"),
		Gate:    options.FeatureCapacityBuffer,
		Ignored: "no spare capacity is provisioned for them",
	},
}

// StoredObjects is the number of objects of a StoredKind in the cluster.
type StoredObjects struct {
	Kind  StoredKind
	Count int
}

// CountStoredObjects lists every StoredKind (metadata only, uncached) and
// returns the kinds that have objects. A kind the API server does not serve
// (its CRD not installed) has none; any other failure is returned, naming the
// kind.
func CountStoredObjects(ctx context.Context, reader client.Reader) ([]StoredObjects, error) {
	var out []StoredObjects
	for _, k := range StoredKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List"))
		if err := reader.List(ctx, list); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return out, fmt.Errorf("listing %s objects: %w", k.GVK.Kind, err)
		}
		if n := len(list.Items); n > 0 {
			out = append(out, StoredObjects{Kind: k, Count: n})
		}
	}
	return out, nil
}

// ReportStoredObjects logs one warning per StoredKind that has objects,
// naming the kind, the count and the state of its feature gate, so that
// objects Karpenter keeps but ignores are never ignored silently. A failed
// count is logged as a warning too.
func ReportStoredObjects(ctx context.Context, reader client.Reader, logger logr.Logger, gates map[string]bool) {
	found, err := CountStoredObjects(ctx, reader)
	warn := slog.New(logr.ToSlogHandler(logger))
	for _, f := range found {
		warn.Log(ctx, slog.LevelWarn,
			fmt.Sprintf("%d %s object(s) are stored but not acted on: %s is not built in this version (feature gate %s=%t), %s",
				f.Count, f.Kind.GVK.Kind, f.Kind.GVK.Kind, f.Kind.Gate, gates[f.Kind.Gate], f.Kind.Ignored),
			"kind", f.Kind.GVK.Kind, "apiVersion", f.Kind.GVK.GroupVersion().String(), "count", f.Count)
	}
	if err != nil && ctx.Err() == nil {
		warn.Log(ctx, slog.LevelWarn, "could not count the objects of kinds stored but not acted on", "error", err.Error())
	}
}

// storedObjectsReport runs ReportStoredObjects once when the manager starts,
// on every replica (a standby's log says it too).
type storedObjectsReport struct {
	reader client.Reader
	logger logr.Logger
	gates  map[string]bool
}

var _ manager.Runnable = &storedObjectsReport{}

func (r *storedObjectsReport) Start(ctx context.Context) error {
	ReportStoredObjects(ctx, r.reader, r.logger, r.gates)
	return nil
}

// NeedLeaderElection: false, the report runs on every replica.
func (r *storedObjectsReport) NeedLeaderElection() bool { return false }

package operator

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	autoscalingv1beta1 "github.com/karpenter-go/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
)

// StoredKind is a kind whose objects the API server stores for Karpenter but
// whose behaviour this version does not have yet, or has behind a feature
// gate that is off: objects of it are kept (an upgrade or a switch from
// upstream never deletes them) and ignored.
type StoredKind struct {
	GVK schema.GroupVersionKind
	// Gate is the feature gate upstream puts the behaviour behind.
	Gate string
	// Ignored says what does not happen for the objects.
	Ignored string
	// Built: the behaviour exists and Gate turns it on. With the gate on the
	// objects are acted on and not reported; with it off they are reported
	// as waiting for the gate.
	Built bool
}

// StoredKinds are the kinds stored but not acted on while their gate is off.
var StoredKinds = []StoredKind{
	{
		GVK:     v1alpha1.SchemeGroupVersion.WithKind("NodeOverlay"),
		Gate:    options.FeatureNodeOverlay,
		Ignored: "their price and capacity adjustments are not applied to instance types",
		Built:   true,
	},
	{
		GVK:     autoscalingv1beta1.SchemeGroupVersion.WithKind("CapacityBuffer"),
		Gate:    options.FeatureCapacityBuffer,
		Ignored: "no spare capacity is provisioned for them",
		Built:   true,
	},
}

// StoredObjects are the objects of a StoredKind in the cluster.
type StoredObjects struct {
	Kind    StoredKind
	Count   int
	Objects []metav1.PartialObjectMetadata
}

// ReasonStoredNotActedOn is the reason of the Warning event on each object
// of a StoredKind.
const ReasonStoredNotActedOn = "StoredNotActedOn"

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
			for i := range list.Items {
				list.Items[i].SetGroupVersionKind(k.GVK)
			}
			out = append(out, StoredObjects{Kind: k, Count: n, Objects: list.Items})
		}
	}
	return out, nil
}

// ReportStoredObjects logs one warning per StoredKind that has objects,
// naming the kind, the count and the state of its feature gate, and, with a
// recorder, records a Warning event (ReasonStoredNotActedOn) on each object,
// so that objects Karpenter keeps but ignores are never ignored silently. A
// failed count is logged as a warning too.
func ReportStoredObjects(ctx context.Context, reader client.Reader, logger logr.Logger, recorder record.EventRecorder, gates map[string]bool) {
	found, err := CountStoredObjects(ctx, reader)
	warn := slog.New(logr.ToSlogHandler(logger))
	for _, f := range found {
		kind := f.Kind.GVK.Kind
		if f.Kind.Built && gates[f.Kind.Gate] {
			continue
		}
		why := fmt.Sprintf("%s is not built in this version (feature gate %s=%t)", kind, f.Kind.Gate, gates[f.Kind.Gate])
		if f.Kind.Built {
			why = fmt.Sprintf("feature gate %s is off (%s=%t; set it to true to act on them)", f.Kind.Gate, f.Kind.Gate, gates[f.Kind.Gate])
		}
		warn.Log(ctx, slog.LevelWarn,
			fmt.Sprintf("%d %s object(s) are stored but not acted on: %s, %s", f.Count, kind, why, f.Kind.Ignored),
			"kind", kind, "apiVersion", f.Kind.GVK.GroupVersion().String(), "count", f.Count)
		if recorder == nil {
			continue
		}
		for i := range f.Objects {
			recorder.Eventf(&f.Objects[i], corev1.EventTypeWarning, ReasonStoredNotActedOn,
				"%s is stored but not acted on: %s, %s", kind, why, f.Kind.Ignored)
		}
	}
	if err != nil && ctx.Err() == nil {
		warn.Log(ctx, slog.LevelWarn, "could not count the objects of kinds stored but not acted on", "error", err.Error())
	}
}

// storedObjectsReport runs ReportStoredObjects once, when this replica
// becomes the leader (one report and one event per object, however many
// replicas run).
type storedObjectsReport struct {
	reader   client.Reader
	logger   logr.Logger
	recorder record.EventRecorder
	gates    map[string]bool
}

var _ manager.Runnable = &storedObjectsReport{}

func (r *storedObjectsReport) Start(ctx context.Context) error {
	ReportStoredObjects(ctx, r.reader, r.logger, r.recorder, r.gates)
	return nil
}

// NeedLeaderElection: true, the leader reports.
func (r *storedObjectsReport) NeedLeaderElection() bool { return true }
